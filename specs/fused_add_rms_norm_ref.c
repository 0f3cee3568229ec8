/* Residual add then RMSNorm in double precision (Liger's
 * LigerFusedAddRMSNormFunction; docs/semantics.md).
 *   fwd args: x, residual, w, y, s, rstd, rows, cols, eps, offset, casting
 *   bwd args: dy, ds, s, w, rstd, dx, dw, rows, cols, offset, casting
 * Forward: s = rnd(x + residual) (the sum is stored in the dtype, as Liger's
 * is), then RMSNorm of s: rstd = 1/sqrt(mean(s^2) + eps) (none: rounded),
 * llama and none: y = rnd(s rstd) rnd(offset + w); gemma: y = s rstd (offset + w).
 * Backward: m = dy (offset + w) (llama, none: rnd(dy rnd(offset + w))),
 * dx = rstd m - (rstd^3 / cols) sum(m s) s + ds (ds optional; dresidual = dx),
 * dw = sum over rows of dy s rstd (llama, none: rnd(s rstd)). */
#include "ubgen_ref.h"

enum { LLAMA = 0, GEMMA = 1, NONE = 2 };

UBGEN_REF(fused_add_rms_norm, fwd) {
  const void *x = a[0].p, *res = a[1].p, *w = a[2].p;
  double *y = outs[3], *s = outs[4], *rstd_out = outs[5];
  const int64_t rows = a[6].i, cols = a[7].i, casting = a[10].i;
  const double eps = (float)a[8].f, offset = (float)a[9].f; /* the API passes floats */
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t d = 0; d < cols; d++) {
      const int64_t i = r * cols + d;
      s[i] = ref_round(ref_load(x, i, dt) + ref_load(res, i, dt), dt);
      ss += s[i] * s[i];
    }
    double rstd = 1.0 / sqrt(ss / (double)cols + eps);
    if (casting == NONE) rstd = ref_round(rstd, dt);
    rstd_out[r] = rstd;
    for (int64_t d = 0; d < cols; d++) {
      const int64_t i = r * cols + d;
      const double wv = ref_load(w, d, dt);
      y[i] = casting == GEMMA ? s[i] * rstd * (offset + wv) : ref_round(s[i] * rstd, dt) * ref_round(offset + wv, dt);
    }
  }
}

UBGEN_REF(fused_add_rms_norm, bwd) {
  const void *dy = a[0].p, *ds = a[1].p, *s = a[2].p, *w = a[3].p;
  const float *rstd = a[4].p;
  double *dx = outs[5], *dw = outs[6];
  const int64_t rows = a[7].i, cols = a[8].i, casting = a[10].i;
  const double offset = (float)a[9].f;
  double *m = malloc((size_t)cols * sizeof *m);
  if (!m) abort(); /* a test helper: out of memory ends the test */
  for (int64_t d = 0; d < cols; d++) dw[d] = 0;
  for (int64_t r = 0; r < rows; r++) {
    const double rs = casting == NONE ? ref_round(rstd[r], dt) : rstd[r];
    double dot = 0;
    for (int64_t d = 0; d < cols; d++) {
      const double g = ref_load(dy, r * cols + d, dt), wv = ref_load(w, d, dt);
      m[d] = casting == GEMMA ? g * (offset + wv) : ref_round(g * ref_round(offset + wv, dt), dt);
      dot += m[d] * ref_load(s, r * cols + d, dt);
    }
    for (int64_t d = 0; d < cols; d++) {
      const int64_t i = r * cols + d;
      const double g = ref_load(dy, i, dt), sv = ref_load(s, i, dt);
      dx[i] = rs * m[d] - rs * rs * rs / (double)cols * dot * sv + (ds ? ref_load(ds, i, dt) : 0.0);
      dw[d] += g * (casting == GEMMA ? sv * rs : ref_round(sv * rs, dt));
    }
  }
  free(m);
}
