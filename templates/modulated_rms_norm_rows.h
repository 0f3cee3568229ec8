{{! Modulated RMSNorm's per-row and per-element steps, for its forward and
    backward. The including template defines RND, LD, DT and the CAST_
    modes, and pastes tile_ops.h first. }}
/* rstd = 1 / sqrt(sum(x^2) / cols + eps) from the lanes of sum(x^2), none
 * rounding it to the dtype: RMSNorm's rstd_of (rms_norm_fwd.c.tmpl) */
UBG_INLINE float rstd_of(const float *acc, ubg_i64 cols, float eps, int casting) {
  float r = 1.0f / sqrtf(ubg_lanes_fold(acc) / (float)cols + eps);
  return casting == CAST_NONE ? RND(r) : r;
}

/* mod[0, n) = rnd(1 + scale[base, base + n)), as Liger's kernel forms it */
UBG_INLINE void load_mod(float *UBG_RESTRICT mod, const void *scale, ubg_i64 base, ubg_i64 n) {
  load_f32(mod, scale, base, n);
#ifdef __TINYC__
  ubg_vop_adds(mod, mod, 1.0f, n);
  ubg_vop_rnd(mod, mod, n, DT);
#else
  {
    ubg_i64 d;
    for (d = 0; d < n; d++) mod[d] = RND(1.0f + mod[d]);
  }
#endif
}
