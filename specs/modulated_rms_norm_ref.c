/* Modulated RMSNorm in double precision (docs/semantics.md), with the
 * kernel's roundings to the dtype.
 *   fwd args: x, w, scale, shift, y, rstd, rows, cols, mod_rows, eps, offset, casting
 *   bwd args: dy, x, w, scale, rstd, dx, dw, dscale, dshift, rows, cols, mod_rows, offset, casting
 * Row r of x takes row r / (rows / mod_rows) of scale and shift.
 * Forward: n = RMSNorm(x) (gemma rnd(xn (offset + w)), llama and none
 * rnd(xn) rnd(offset + w), no w rnd(xn); xn = x rstd), y = n rnd(1 + scale) + shift.
 * Backward: g = rnd(dy rnd(1 + scale)), RMSNorm's backward with g for dy (dx, dw),
 * dscale = sum over a modulation row's rows of dy n, dshift of dy. */
#include "ubgen_ref.h"

enum { LLAMA = 0, GEMMA = 1, NONE = 2 };

/* the RMSNorm before the modulation, as the kernel rounds it */
static double norm_ref(double xn, const void *w, int64_t d, double offset, int64_t casting, int dt) {
  if (!w) return ref_round(xn, dt);
  if (casting == GEMMA) return ref_round(xn * (offset + ref_load(w, d, dt)), dt);
  return ref_round(xn, dt) * ref_round(offset + ref_load(w, d, dt), dt);
}

/* the modulation's factor, rnd(1 + scale[i]) */
static double mod_ref(const void *scale, int64_t i, int dt) { return ref_round(1 + ref_load(scale, i, dt), dt); }

UBGEN_REF(modulated_rms_norm, fwd) {
  const void *x = a[0].p, *w = a[1].p, *scale = a[2].p, *shift = a[3].p;
  double *y = outs[4], *rstd_out = outs[5];
  const int64_t rows = a[6].i, cols = a[7].i, k = rows / a[8].i, casting = a[11].i;
  const double eps = (float)a[9].f, offset = (float)a[10].f; /* the API passes floats */
  for (int64_t r = 0; r < rows; r++) {
    const int64_t j = r / k;
    double ss = 0;
    for (int64_t d = 0; d < cols; d++) {
      const double v = ref_load(x, r * cols + d, dt);
      ss += v * v;
    }
    double rstd = 1.0 / sqrt(ss / (double)cols + eps);
    if (casting == NONE) rstd = ref_round(rstd, dt);
    rstd_out[r] = rstd;
    for (int64_t d = 0; d < cols; d++) {
      const double n = norm_ref(ref_load(x, r * cols + d, dt) * rstd, w, d, offset, casting, dt);
      y[r * cols + d] = n * mod_ref(scale, j * cols + d, dt) + (shift ? ref_load(shift, j * cols + d, dt) : 0);
    }
  }
}

UBGEN_REF(modulated_rms_norm, bwd) {
  const void *dy = a[0].p, *x = a[1].p, *w = a[2].p, *scale = a[3].p;
  const float *rstd = a[4].p;
  double *dx = outs[5], *dw = outs[6], *dscale = outs[7], *dshift = outs[8];
  const int64_t rows = a[9].i, cols = a[10].i, mod_rows = a[11].i, k = rows / mod_rows, casting = a[13].i;
  const double offset = (float)a[12].f;
  double *m = malloc((size_t)cols * sizeof *m);
  if (!m) abort(); /* a test helper: out of memory ends the test */
  for (int64_t d = 0; d < cols; d++)
    if (dw) dw[d] = 0;
  for (int64_t i = 0; i < mod_rows * cols; i++) {
    dscale[i] = 0;
    if (dshift) dshift[i] = 0;
  }
  for (int64_t r = 0; r < rows; r++) {
    const int64_t j = r / k;
    double rs = rstd[r], s = 0;
    if (casting == NONE) rs = ref_round(rs, dt);
    for (int64_t d = 0; d < cols; d++) {
      const double g = ref_round(ref_load(dy, r * cols + d, dt) * mod_ref(scale, j * cols + d, dt), dt);
      if (w) {
        const double wv = ref_load(w, d, dt);
        m[d] = casting == GEMMA ? g * (offset + wv) : ref_round(g * ref_round(offset + wv, dt), dt);
      } else {
        m[d] = g;
      }
      s += m[d] * ref_load(x, r * cols + d, dt);
    }
    for (int64_t d = 0; d < cols; d++) {
      const double dv = ref_load(dy, r * cols + d, dt), xv = ref_load(x, r * cols + d, dt);
      const double g = ref_round(dv * mod_ref(scale, j * cols + d, dt), dt);
      dx[r * cols + d] = rs * m[d] - rs * rs * rs / (double)cols * s * xv;
      if (dw) dw[d] += g * (casting == GEMMA ? xv * rs : ref_round(xv * rs, dt));
      dscale[j * cols + d] += dv * norm_ref(xv * rs, w, d, offset, casting, dt);
      if (dshift) dshift[j * cols + d] += dv;
    }
  }
  free(m);
}
