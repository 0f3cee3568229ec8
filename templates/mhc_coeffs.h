{{! mHC's per-token coefficient steps, pasted into mhc_coeffs_fwd.c.tmpl
    and mhc_coeffs_bwd.c.tmpl so that the backward recomputes the
    forward's bits. hc <= MAX_HC. }}
enum { MAX_HC = 16, ROW_BLOCK = 8 }; /* the spec's hc maximum; rows sharing one read of phi */

/* the alpha that scales mix[m]: alpha[0] for h_pre's hc logits, alpha[1]
 * for h_post's, alpha[2] for h_res's hc * hc */
UBG_INLINE float alpha_of(const float *alpha, ubg_i64 m, ubg_i64 hc) { return alpha[m < hc ? 0 : m < 2 * hc ? 1 : 2]; }

/* Sinkhorn-Knopp as Liger's: p = softmax of each row of the logits,
 * mat = p + eps, then tmax column normalizations with tmax - 1 row
 * normalizations between them, each dividing by (sum + eps); every sum
 * over i or j in order.  All matrices [hc, hc] f32, row-major. */

/* p = softmax of each row of lg */
UBG_INLINE void sk_softmax(float *p, const float *lg, ubg_i64 hc) {
  ubg_i64 i, j;
  for (i = 0; i < hc; i++) {
    float mx = lg[i * hc], s = 0.0f;
    for (j = 1; j < hc; j++) mx = lg[i * hc + j] > mx ? lg[i * hc + j] : mx;
    for (j = 0; j < hc; j++) s += p[i * hc + j] = ubg_exp(lg[i * hc + j] - mx);
    for (j = 0; j < hc; j++) p[i * hc + j] = p[i * hc + j] / s;
  }
}

/* rs[i] = sum_j m[i, j]; m[i, :] /= rs[i] + eps */
UBG_INLINE void sk_rows(float *m, float *rs, ubg_i64 hc, float eps) {
  ubg_i64 i, j;
  for (i = 0; i < hc; i++) {
    float s = 0.0f;
    for (j = 0; j < hc; j++) s += m[i * hc + j];
    rs[i] = s;
    for (j = 0; j < hc; j++) m[i * hc + j] = m[i * hc + j] / (s + eps);
  }
}

/* cs[j] = sum_i m[i, j]; m[:, j] /= cs[j] + eps */
UBG_INLINE void sk_cols(float *m, float *cs, ubg_i64 hc, float eps) {
  ubg_i64 i, j;
  for (j = 0; j < hc; j++) cs[j] = 0.0f;
  for (i = 0; i < hc; i++)
    for (j = 0; j < hc; j++) cs[j] += m[i * hc + j];
  for (i = 0; i < hc; i++)
    for (j = 0; j < hc; j++) m[i * hc + j] = m[i * hc + j] / (cs[j] + eps);
}

/* m0 = (p + eps) after the first column normalization (its sums in cs0),
 * from the logits lg */
UBG_INLINE void sk_start(float *m0, float *p, float *cs0, const float *lg, ubg_i64 hc, float eps) {
  ubg_i64 k;
  sk_softmax(p, lg, hc);
  for (k = 0; k < hc * hc; k++) m0[k] = p[k] + eps;
  sk_cols(m0, cs0, hc, eps);
}

/* m = m0 after `steps` more row and column normalizations; rs, cs scratch */
UBG_INLINE void sk_steps(float *m, const float *m0, float *rs, float *cs, ubg_i64 hc, ubg_i64 steps, float eps) {
  ubg_i64 k, t;
  for (k = 0; k < hc * hc; k++) m[k] = m0[k];
  for (t = 0; t < steps; t++) {
    sk_rows(m, rs, hc, eps);
    sk_cols(m, cs, hc, eps);
  }
}

/* the logits of one token from its mix row: lg [hc, hc] (h_res's),
 * pre and post [hc] (before their sigmoids) */
UBG_INLINE void logits_of(float *pre, float *post, float *lg, const float *mix_r, const float *b, const float *alpha,
                          ubg_i64 hc) {
  ubg_i64 k;
  for (k = 0; k < hc; k++) {
    pre[k] = mix_r[k] * alpha[0] + b[k];
    post[k] = mix_r[hc + k] * alpha[1] + b[hc + k];
  }
  for (k = 0; k < hc * hc; k++) lg[k] = mix_r[2 * hc + k] * alpha[2] + b[2 * hc + k];
}
