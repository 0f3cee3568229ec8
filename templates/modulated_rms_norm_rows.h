{{! Modulated RMSNorm's per-row and per-element steps, for its forward and
    backward. The including template defines RND, LD, DT and the CAST_
    modes, and pastes tile_ops.h first. }}
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
