{{! RMSNorm's weight tile, for the forward and the backward: one body per
    backend, the same bits. The including template defines RND, LD, DT and
    the CAST_ modes. }}
/* wt[0, n) = offset + w[c0, c0 + n), rounded to the dtype unless gemma */
UBG_INLINE void load_w(float *UBG_RESTRICT wt, const void *w, ubg_i64 c0, ubg_i64 n, float offset, int casting) {
  ubg_i64 d;
#ifdef __TINYC__
  ubg_vop_load(wt, w, c0, n, DT);
  ubg_vop_adds(wt, wt, offset, n);
  if (casting != CAST_GEMMA) ubg_vop_rnd(wt, wt, n, DT);
  return;
#endif
  if (casting == CAST_GEMMA)
    for (d = 0; d < n; d++) wt[d] = offset + LD(w, c0 + d);
  else
    for (d = 0; d < n; d++) wt[d] = RND(offset + LD(w, c0 + d));
}
