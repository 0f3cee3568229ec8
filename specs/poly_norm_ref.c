/* PolyNorm in double precision (Liger's LigerPolyNormFunction).
 *   fwd args: x, w, b, y, rstd, rows, cols, eps
 *   bwd args: dy, x, w, rstd, dx, dw, db, rows, cols
 * Forward, for p = 3, 2, 1 (weights w0, w1, w2):
 *   rstd_p = 1 / sqrt(mean(x^2p) + eps),  y = sum_p w_p rstd_p x^p + b
 * Backward, from the rstd given, S_p = sum(dy x^p) over the row:
 *   dx = sum_p w_p (p x^(p-1) rstd_p dy - (p / cols) x^(2p-1) rstd_p^3 S_p)
 *   dw_p = sum_rows rstd_p S_p,  db = sum dy */
#include "ubgen_ref.h"

UBGEN_REF(poly_norm, fwd) {
  const void *x = a[0].p, *w = a[1].p;
  const double b = ref_load(a[2].p, 0, dt), eps = (float)a[7].f; /* the API passes a float */
  const int64_t rows = a[5].i, D = a[6].i;
  double *y = outs[3], *rstd = outs[4];
  for (int64_t r = 0; r < rows; r++) {
    double ss[4] = {0, 0, 0, 0}; /* ss[p] = sum x^2p */
    for (int64_t d = 0; d < D; d++) {
      const double v = ref_load(x, r * D + d, dt);
      for (int p = 1; p <= 3; p++) ss[p] += pow(v, 2 * p);
    }
    for (int p = 3; p >= 1; p--) rstd[3 * r + 3 - p] = 1.0 / sqrt(ss[p] / (double)D + eps);
    for (int64_t d = 0; d < D; d++) {
      const double v = ref_load(x, r * D + d, dt);
      double out = b;
      for (int p = 3; p >= 1; p--) out += ref_load(w, 3 - p, dt) * rstd[3 * r + 3 - p] * pow(v, p);
      y[r * D + d] = out;
    }
  }
}

UBGEN_REF(poly_norm, bwd) {
  const void *dy = a[0].p, *x = a[1].p, *w = a[2].p;
  const float *rstd = a[3].p;
  const int64_t rows = a[7].i, D = a[8].i;
  double *dx = outs[4], *dw = outs[5], *db = outs[6];
  dw[0] = dw[1] = dw[2] = db[0] = 0;
  for (int64_t r = 0; r < rows; r++) {
    double S[4] = {0, 0, 0, 0}; /* S[p] = sum dy x^p */
    for (int64_t d = 0; d < D; d++) {
      const double g = ref_load(dy, r * D + d, dt), v = ref_load(x, r * D + d, dt);
      for (int p = 1; p <= 3; p++) S[p] += g * pow(v, p);
      db[0] += g;
    }
    for (int p = 3; p >= 1; p--) dw[3 - p] += rstd[3 * r + 3 - p] * S[p];
    for (int64_t d = 0; d < D; d++) {
      const double g = ref_load(dy, r * D + d, dt), v = ref_load(x, r * D + d, dt);
      double out = 0;
      for (int p = 3; p >= 1; p--) {
        const double rs = rstd[3 * r + 3 - p], wp = ref_load(w, 3 - p, dt);
        out += wp * (p * pow(v, p - 1) * rs * g - p / (double)D * pow(v, 2 * p - 1) * rs * rs * rs * S[p]);
      }
      dx[r * D + d] = out;
    }
  }
}
