{{! Moving rows between global memory (the storage dtype) and f32 UB tiles; the
    including template defines LD, ST and DT first. Under tcc each is one
    call of the library's vector operations (prelude.h); gcc inlines the
    loops. Every path gives the same bits. }}
/* dst[0, n) = src[base, base + n) as f32 */
UBG_INLINE void load_f32(float *UBG_RESTRICT dst, const void *src, ubg_i64 base, ubg_i64 n) {
#ifdef __TINYC__
  ubg_vop_load(dst, src, base, n, DT);
#else
  ubg_i64 d;
  for (d = 0; d < n; d++) dst[d] = LD(src, base + d);
#endif
}

/* load_f32, and acc[l] += v * v over the lanes in the same pass (the same
 * sums as ubg_lanes_dot over dst afterwards) */
UBG_INLINE void load_sumsq(float *UBG_RESTRICT dst, const void *src, ubg_i64 base, ubg_i64 n, float *UBG_RESTRICT acc) {
#ifdef __TINYC__
  ubg_vop_load(dst, src, base, n, DT);
  ubg_vop_lanes_dot(acc, dst, dst, n);
#else
  ubg_i64 j = 0;
  int l;
  for (; j + UBG_LANES <= n; j += UBG_LANES)
    for (l = 0; l < UBG_LANES; l++) {
      float v = LD(src, base + j + l);
      dst[j + l] = v;
      acc[l] += v * v;
    }
  for (l = 0; j + l < n; l++) {
    float v = LD(src, base + j + l);
    dst[j + l] = v;
    acc[l] += v * v;
  }
#endif
}

UBG_INLINE void fill_f32(float *UBG_RESTRICT dst, float x, ubg_i64 n) {
#ifdef __TINYC__
  ubg_vop_fill(dst, x, n);
#else
  ubg_i64 d;
  for (d = 0; d < n; d++) dst[d] = x;
#endif
}

/* dst[base, base + n) = rnd(src[0, n)); stream: bypassing the caches where
 * the vector path stores (the stage ends with UBG_SFENCE) */
UBG_INLINE void store_f32(void *dst, ubg_i64 base, const float *UBG_RESTRICT src, ubg_i64 n, int stream) {
#ifdef __TINYC__
  ubg_vop_store(dst, base, src, n, DT, stream);
#else
  ubg_i64 d = 0;
{{#is_bf16}}
#ifdef UBG_V16
  /* a chunk with an f32 subnormal in it is left to the scalar loop */
  for (; d + 16 <= n; d += 16) {
    unsigned sub = 0;
    ubg_i16x16 h = ubg_v_to_bf16(ubg_v_ld(src + d), &sub);
    if (__builtin_expect(sub != 0, 0)) break;
    if (stream) ubg_v_stream_bf16(dst, base + d, h);
    else ubg_v_st_bf16(dst, base + d, h);
  }
#endif
{{/is_bf16}}
  (void)stream;
  for (; d < n; d++) ST(dst, base + d, src[d]);
#endif
}

/* ubg_lanes_dot: acc[l] += a * b over the lanes */
UBG_INLINE void tile_dot(float *UBG_RESTRICT acc, const float *UBG_RESTRICT a, const float *UBG_RESTRICT b, ubg_i64 n) {
#ifdef __TINYC__
  ubg_vop_lanes_dot(acc, a, b, n);
#else
  ubg_lanes_dot(acc, a, b, n);
#endif
}
