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
{{^is_f32}}

#if !defined(__TINYC__) && defined(UBG_V16)
/* load_mod's rnd(1 + scale[i, i + 16)) in registers; a lane holding an f32
 * subnormal before the rounding is ORed into *sub (prelude.h) */
UBG_INLINE ubg_f32x16 mod16(const void *scale, ubg_i64 i, unsigned *sub) {
  return ubg_v_rnd_{{dtype}}(1.0f + ld16(scale, i), sub);
}
#endif
{{/is_f32}}
