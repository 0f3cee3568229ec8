{{! A query's or a key's row against the rows of its window, for the
    neighborhood attention passes; the including template defines LD first.
    Plain loops over head_dim (gcc vectorizes them; tcc runs them with the
    same float operations in the same order), independent of BLOCK_D. }}
/* sum over d < n of t[d] src[base + d]: element d in lane d % UBG_LANES,
 * the lanes folded by the prelude's fixed tree */
UBG_INLINE float dot_row(const float *UBG_RESTRICT t, const void *src, ubg_i64 base, ubg_i64 n) {
  float acc[UBG_LANES];
  ubg_i64 j = 0;
  int l;
  ubg_lanes_zero(acc);
  for (; j + UBG_LANES <= n; j += UBG_LANES)
    for (l = 0; l < UBG_LANES; l++) acc[l] += t[j + l] * LD(src, base + j + l);
  for (l = 0; j + l < n; l++) acc[l] += t[j + l] * LD(src, base + j + l);
  return ubg_lanes_fold(acc);
}

/* acc[d] += w src[base + d] for d < n */
UBG_INLINE void axpy_row(float *UBG_RESTRICT acc, float w, const void *src, ubg_i64 base, ubg_i64 n) {
  ubg_i64 d;
  for (d = 0; d < n; d++) acc[d] += w * LD(src, base + d);
}

/* acc[d] *= c for d < n */
UBG_INLINE void scale_row(float *UBG_RESTRICT acc, float c, ubg_i64 n) {
  ubg_i64 d;
  for (d = 0; d < n; d++) acc[d] *= c;
}
