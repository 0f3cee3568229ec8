/* LayerNorm in double precision (Liger's LigerLayerNormFunction).
 *   fwd args: x, w, b, y, mean, rstd, rows, cols, eps
 *   bwd args: dy, x, w, mean, rstd, dx, dw, db, rows, cols
 * Forward: mean = sum x / D, var = sum (x - mean)^2 / D (biased, two
 * passes), rstd = 1 / sqrt(var + eps), y = (x - mean) rstd w + b.
 * Backward, from the mean and rstd it is given (as the kernel):
 *   x_hat = (x - mean) rstd, g = w dy, c1 = sum(x_hat g) / D, c2 = sum(g) / D
 *   dx = (g - (x_hat c1 + c2)) rstd,  dw = sum_rows dy x_hat,  db = sum_rows dy */
#include "ubgen_ref.h"

UBGEN_REF(layer_norm, fwd) {
  const void *x = a[0].p, *w = a[1].p, *b = a[2].p;
  const int64_t rows = a[6].i, D = a[7].i;
  const double eps = (float)a[8].f; /* the kernel gets a float */
  for (int64_t r = 0; r < rows; r++) {
    double mean, rstd;
    ref_mean_rstd(x, r * D, D, dt, eps, &mean, &rstd);
    outs[4][r] = mean;
    outs[5][r] = rstd;
    for (int64_t d = 0; d < D; d++)
      outs[3][r * D + d] = (ref_load(x, r * D + d, dt) - mean) * rstd * ref_load(w, d, dt) + ref_load(b, d, dt);
  }
}

UBGEN_REF(layer_norm, bwd) {
  const void *dy = a[0].p, *x = a[1].p, *w = a[2].p;
  const float *mean = a[3].p, *rstd = a[4].p;
  const int64_t rows = a[8].i, D = a[9].i;
  double *dx = outs[5], *dw = outs[6], *db = outs[7];
  for (int64_t d = 0; d < D; d++) dw[d] = db[d] = 0;
  for (int64_t r = 0; r < rows; r++) {
    double c1 = 0, c2 = 0;
    for (int64_t d = 0; d < D; d++) {
      const double xh = (ref_load(x, r * D + d, dt) - mean[r]) * rstd[r], g = ref_load(w, d, dt) * ref_load(dy, r * D + d, dt);
      c1 += xh * g;
      c2 += g;
    }
    c1 /= (double)D, c2 /= (double)D;
    for (int64_t d = 0; d < D; d++) {
      const double xh = (ref_load(x, r * D + d, dt) - mean[r]) * rstd[r], g0 = ref_load(dy, r * D + d, dt);
      dx[r * D + d] = (ref_load(w, d, dt) * g0 - (xh * c1 + c2)) * rstd[r];
      dw[d] += g0 * xh;
      db[d] += g0;
    }
  }
}
