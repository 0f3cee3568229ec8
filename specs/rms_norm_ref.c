/* RMSNorm in double precision (docs/semantics.md "What each kernel computes").
 *   fwd args: x, w, y, rstd, rows, cols, eps, offset, casting
 *   bwd args: dy, x, w, rstd, dx, dw, rows, cols, offset, casting */

#include "ubgen_ref.h"

enum { LLAMA = 0, GEMMA = 1, NONE = 2 };

UBGEN_REF(rms_norm, fwd) {
  const void *x = a[0].p, *w = a[1].p;
  double *y = outs[2], *rstd_out = outs[3];
  int64_t rows = a[4].i, cols = a[5].i, casting = a[8].i;
  double eps = (float)a[6].f, offset = (float)a[7].f; /* the API passes floats */
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t d = 0; d < cols; d++) {
      double v = ref_load(x, r * cols + d, dt);
      ss += v * v;
    }
    double rstd = 1.0 / sqrt(ss / (double)cols + eps);
    if (casting == NONE) rstd = ref_round(rstd, dt);
    rstd_out[r] = rstd;
    for (int64_t d = 0; d < cols; d++) {
      double xv = ref_load(x, r * cols + d, dt), out;
      if (!w) {
        out = xv * rstd;
      } else {
        double wv = ref_load(w, d, dt);
        if (casting == GEMMA) out = xv * rstd * (offset + wv);
        else out = ref_round(xv * rstd, dt) * ref_round(offset + wv, dt);
      }
      y[r * cols + d] = out;
    }
  }
}

UBGEN_REF(rms_norm, bwd) {
  const void *dy = a[0].p, *x = a[1].p, *w = a[2].p;
  const float *rstd = a[3].p;
  double *dx = outs[4], *dw = outs[5];
  int64_t rows = a[6].i, cols = a[7].i, casting = a[9].i;
  double offset = (float)a[8].f;
  double *m = malloc((size_t)cols * sizeof *m);
  if (!m) abort(); /* a test helper: out of memory ends the test */
  if (dw)
    for (int64_t d = 0; d < cols; d++) dw[d] = 0;
  for (int64_t r = 0; r < rows; r++) {
    double rs = rstd[r];
    if (casting == NONE) rs = ref_round(rs, dt);
    double s = 0;
    for (int64_t d = 0; d < cols; d++) {
      double g = ref_load(dy, r * cols + d, dt), xv = ref_load(x, r * cols + d, dt);
      if (w) {
        double wv = ref_load(w, d, dt);
        m[d] = casting == GEMMA ? g * (offset + wv) : ref_round(g * ref_round(offset + wv, dt), dt);
      } else {
        m[d] = g;
      }
      s += m[d] * xv;
    }
    for (int64_t d = 0; d < cols; d++) {
      double g = ref_load(dy, r * cols + d, dt), xv = ref_load(x, r * cols + d, dt);
      dx[r * cols + d] = rs * m[d] - rs * rs * rs / (double)cols * s * xv;
      if (dw) dw[d] += g * (casting == GEMMA ? xv * rs : ref_round(xv * rs, dt));
    }
  }
  free(m);
}
