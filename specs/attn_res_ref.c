/* Attention residuals in double precision (docs/semantics.md "What each kernel computes").
 *   fwd args: v, w_query, w_norm, out, alpha, rstd, nblocks, tokens, dim, eps
 *   bwd args: dout, v, w_query, w_norm, alpha, rstd, dv, dw_query, dw_norm,
 *             nblocks, tokens, dim
 * The one intermediate rounding the semantics name is k = rnd(v * rstd). */

#include "ubgen_ref.h"

UBGEN_REF(attn_res, fwd) {
  const void *v = a[0].p, *wq = a[1].p, *wn = a[2].p;
  double *out = outs[3], *alpha = outs[4], *rstd = outs[5];
  int64_t nb = a[6].i, tokens = a[7].i, dim = a[8].i;
  double eps = (float)a[9].f;
  double *s = malloc((size_t)nb * sizeof *s);
  for (int64_t t = 0; t < tokens; t++) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < nb; i++) {
      const int64_t base = (i * tokens + t) * dim;
      double ss = 0, sc = 0;
      for (int64_t d = 0; d < dim; d++) ss += ref_load(v, base + d, dt) * ref_load(v, base + d, dt);
      double r = 1.0 / sqrt(ss / (double)dim + eps);
      for (int64_t d = 0; d < dim; d++)
        sc += ref_load(wq, d, dt) * ref_round(ref_load(v, base + d, dt) * r, dt) * ref_load(wn, d, dt);
      rstd[t * nb + i] = r;
      s[i] = sc;
      if (sc > mx) mx = sc;
    }
    for (int64_t i = 0; i < nb; i++) sum += exp(s[i] - mx);
    for (int64_t i = 0; i < nb; i++) alpha[t * nb + i] = exp(s[i] - mx) / sum;
    for (int64_t d = 0; d < dim; d++) {
      double h = 0;
      for (int64_t i = 0; i < nb; i++) h += alpha[t * nb + i] * ref_load(v, (i * tokens + t) * dim + d, dt);
      out[t * dim + d] = h;
    }
  }
  free(s);
}

UBGEN_REF(attn_res, bwd) {
  const void *dout = a[0].p, *v = a[1].p, *wq = a[2].p, *wn = a[3].p;
  const float *alpha = a[4].p, *rstd = a[5].p;
  double *dv = outs[6], *dwq = outs[7], *dwn = outs[8];
  int64_t nb = a[9].i, tokens = a[10].i, dim = a[11].i;
  double *da = malloc((size_t)nb * sizeof *da);
  /* dwq and dwn first hold S = sum_{t,i} ds_i v_i rstd_i; the weights,
   * the same for every term, multiply it at the end (as the kernels do):
   * with an infinite weight the expanded terms of both signs would give
   * Inf - Inf = NaN where the product is +-Inf */
  for (int64_t d = 0; d < dim; d++) dwq[d] = 0;
  for (int64_t t = 0; t < tokens; t++) {
    double sum_a_da = 0;
    for (int64_t i = 0; i < nb; i++) {
      double x = 0;
      for (int64_t d = 0; d < dim; d++) x += ref_load(dout, t * dim + d, dt) * ref_load(v, (i * tokens + t) * dim + d, dt);
      da[i] = x;
      sum_a_da += alpha[t * nb + i] * x;
    }
    for (int64_t i = 0; i < nb; i++) {
      const int64_t base = (i * tokens + t) * dim;
      double al = alpha[t * nb + i], r = rstd[t * nb + i], ds = al * (da[i] - sum_a_da), e = 0;
      /* sum_d dk_i v_i with the scalar ds_i taken out, ds_i sum_d wq wn v_i
       * (as docs/semantics.md's dk_i = ds_i w_query w_norm gives it, and as the
       * kernels evaluate it): with an infinite ds_i (an Inf in dout or v)
       * the sum of the expanded terms would be Inf - Inf = NaN where the
       * product is +-Inf */
      for (int64_t d = 0; d < dim; d++) e += ref_load(wq, d, dt) * ref_load(wn, d, dt) * ref_load(v, base + d, dt);
      const double sdv = ds * e;
      for (int64_t d = 0; d < dim; d++) {
        double vd = ref_load(v, base + d, dt), q = ref_load(wq, d, dt), w = ref_load(wn, d, dt);
        double dk = ds * q * w;
        dv[base + d] = al * ref_load(dout, t * dim + d, dt) + r * dk - r * r * r * (sdv / (double)dim) * vd;
        dwq[d] += ds * vd * r;
      }
    }
  }
  for (int64_t d = 0; d < dim; d++) {
    const double S = dwq[d];
    dwq[d] = S * ref_load(wn, d, dt);
    dwn[d] = S * ref_load(wq, d, dt);
  }
  free(da);
}
