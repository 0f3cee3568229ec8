{{! Moving rows between global memory (the storage dtype) and f32 UB tiles; the
    including template defines LD, ST and DT first. Under tcc each is one
    call of the library's vector operations (tile_calls.h); gcc inlines the
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

/* acc[0, n) += src[base, base + n) as f32; the same piece of the row at
 * element offset next (< 0: none) is requested into the L2 meanwhile, a
 * chunk at a time (a burst of requests larger than the core's miss buffers
 * is partly dropped). Under tcc: a chunk staged on the stack, then added. */
UBG_INLINE void acc_load_l2(float *UBG_RESTRICT acc, const void *src, ubg_i64 base, ubg_i64 n, ubg_i64 next) {
#ifdef __TINYC__
  float stage_buf[UBG_VCHUNK];
  ubg_i64 c;
  (void)next;
  for (c = 0; c < n; c += UBG_VCHUNK) {
    const ubg_i64 k = ubg_min(UBG_VCHUNK, n - c);
    ubg_vop_load(stage_buf, src, base + c, k, DT);
    ubg_vop_add(acc + c, acc + c, stage_buf, k);
  }
#else
  ubg_i64 c, d;
  for (c = 0; c < n; c += UBG_PF_CHUNK) {
    const ubg_i64 end = ubg_min(n, c + UBG_PF_CHUNK);
    if (next >= 0) ubg_prefetch_l2((const ubg_u8 *)src + (next + c) * {{dtype_bytes}}, (end - c) * {{dtype_bytes}});
    for (d = c; d < end; d++) acc[d] += LD(src, base + d);
  }
#endif
}

/* dst[0, n) = a[0, n) * b[0, n) */
UBG_INLINE void mul_f32(float *UBG_RESTRICT dst, const float *UBG_RESTRICT a, const float *UBG_RESTRICT b, ubg_i64 n) {
#ifdef __TINYC__
  ubg_vop_mul(dst, a, b, n);
#else
  ubg_i64 d;
  for (d = 0; d < n; d++) dst[d] = a[d] * b[d];
#endif
}

/* dst[base, base + n) = rnd(src[0, n)); stream: bypassing the caches where
 * the vector path stores (the stage ends with UBG_SFENCE) */
UBG_INLINE void store_f32(void *dst, ubg_i64 base, const float *UBG_RESTRICT src, ubg_i64 n, int stream) {
#ifdef __TINYC__
  ubg_vop_store(dst, base, src, n, DT, stream);
#else
  ubg_i64 d = 0;
{{#is_f32}}
  if (stream) { /* f32 needs no conversion: the streaming copy */
    ubg_copy((float *)dst + base, src, n * 4, 1);
    return;
  }
{{/is_f32}}
{{^is_f32}}
#ifdef UBG_V16
  d = ubg_v_store_{{dtype}}_row(dst, base, src, n, stream); /* up to a chunk with an f32 subnormal (bf16) */
#endif
{{/is_f32}}
  (void)stream;
  for (; d < n; d++) ST(dst, base + d, src[d]);
#endif
}



/* src[at, at + k) requested into the L2, clipped to the n elements there
 * are: a piece of the block a program takes next, asked for while it
 * computes this one (its blocks are not contiguous, so the hardware's
 * prefetchers start again at each). tcc's kernels ask for nothing. */
UBG_INLINE void prefetch_l2_clipped(const void *src, ubg_i64 at, ubg_i64 k, ubg_i64 n) {
#ifdef __TINYC__
  (void)src, (void)at, (void)k, (void)n;
#else
  if (at + k > n) k = n - at;
  if (k > 0) ubg_prefetch_l2((const ubg_u8 *)src + at * {{dtype_bytes}}, k * {{dtype_bytes}});
#endif
}

/* load_f32 with the same prefetch of the row at next */
UBG_INLINE void load_f32_pf(float *UBG_RESTRICT dst, const void *src, ubg_i64 base, ubg_i64 n, ubg_i64 next) {
  ubg_i64 c;
  for (c = 0; c < n; c += UBG_PF_CHUNK) {
    const ubg_i64 k = ubg_min(UBG_PF_CHUNK, n - c);
    if (next >= 0) ubg_prefetch((const ubg_u8 *)src + (next + c) * {{dtype_bytes}}, k * {{dtype_bytes}});
    load_f32(dst + c, src, base + c, k);
  }
}

#ifndef __TINYC__
/* dst[i, i + 16) = rnd(x) by the scalar code, element by element */
UBG_INLINE void store16_scalar(void *dst, ubg_i64 i, ubg_f32x16 x) {
  int l;
  for (l = 0; l < 16; l++) ST(dst, i + l, x[l]);
}
/* the same out of line, for the vector paths' rare f32 subnormal */
UBG_COLD void store16_exact(void *dst, ubg_i64 i, ubg_f32x16 x) { store16_scalar(dst, i, x); }
/* dst[i, i + 16) = rnd(x): one chunk of a row computed in registers */
UBG_INLINE void store16(void *dst, ubg_i64 i, ubg_f32x16 x, int stream) {
{{^is_f32}}
#ifdef UBG_V16
  {
    unsigned sub = 0;
    const ubg_i16x16 h = ubg_v_to_{{dtype}}(x, &sub);
    if (sub != 0) {
      store16_exact(dst, i, x);
      return;
    }
    if (stream) ubg_v_stream_{{dtype}}(dst, i, h);
    else ubg_v_st_{{dtype}}(dst, i, h);
    return;
  }
#endif
{{/is_f32}}
{{#is_f32}}
  if (stream && ubg_v_stream_f32((float *)dst + i, x)) return;
{{/is_f32}}
  (void)stream;
  store16_scalar(dst, i, x);
}
#endif

#ifndef __TINYC__
/* dst[i, i + 32) = rnd(x0, x1): two adjacent chunks, for bf16 in one
 * conversion and one 64-byte store (store16 twice otherwise) */
UBG_INLINE void store32(void *dst, ubg_i64 i, ubg_f32x16 x0, ubg_f32x16 x1, int stream) {
{{#is_bf16}}
#ifdef UBG_V16
  {
    unsigned sub = 0;
    const ubg_i16x32 h = ubg_v_to_bf16x32(x0, x1, &sub);
    if (sub != 0) {
      store16_exact(dst, i, x0);
      store16_exact(dst, i + 16, x1);
      return;
    }
    ubg_v_st_x32(dst, i, h, stream);
    return;
  }
#endif
{{/is_bf16}}
  store16(dst, i, x0, stream);
  store16(dst, i + 16, x1, stream);
}
#endif

#ifndef __TINYC__
/* rnd(x * r) on 16 lanes for x read from {{dtype}} storage and a float r,
 * with the bits of the scalar RND for every input: no *sub to check */
UBG_INLINE ubg_f32x16 rnd16_scaled(ubg_f32x16 x, float r) {
{{#is_f32}}
  return x * r;
{{/is_f32}}
{{^is_f32}}
  int l;
  unsigned sub = 0;
  ubg_f32x16 p = x * r;
#ifdef UBG_V16
{{#is_bf16}}
  (void)sub;
  return ubg_v_rnd_bf16_product(p);
{{/is_bf16}}
{{^is_bf16}}
  return ubg_v_rnd_{{dtype}}(p, &sub); /* the f16 conversions never set it */
{{/is_bf16}}
#endif
  (void)sub;
  for (l = 0; l < 16; l++) p[l] = RND(p[l]);
  return p;
{{/is_f32}}
}

/* src[i, i + 16) as f32 */
UBG_INLINE ubg_f32x16 ld16(const void *src, ubg_i64 i) {
{{#is_f32}}
  return ubg_v_ld((const float *)src + i);
{{/is_f32}}
{{^is_f32}}
#ifdef UBG_V16
  return ubg_v_ld_{{dtype}}(src, i);
#endif
  ubg_f32x16 x;
  int l;
  for (l = 0; l < 16; l++) x[l] = LD(src, i + l);
  return x;
{{/is_f32}}
}

#endif

/* dst[base, base + n) = rnd(the pairs (re, im) of src[base, base + n)
 * times the complex numbers of fr and fi[0, n), pairs (re', re') and
 * (-im', im'): element e is src[e] fr[e] + src[e ^ 1] fi[e]), n even; dst
 * may be src. gcc: 16 lanes at a time in registers (ubg_v_mul_pairs, the
 * same operations), bf16 a 64-byte line per store. */
UBG_INLINE void mul_pairs(void *dst, const void *src, ubg_i64 base, const float *UBG_RESTRICT fr,
                          const float *UBG_RESTRICT fi, ubg_i64 n, int stream) {
  ubg_i64 e = 0;
#ifndef __TINYC__
  for (; e + 32 <= n; e += 32)
    store32(dst, base + e, ubg_v_mul_pairs(ld16(src, base + e), ubg_v_ld(fr + e), ubg_v_ld(fi + e)),
            ubg_v_mul_pairs(ld16(src, base + e + 16), ubg_v_ld(fr + e + 16), ubg_v_ld(fi + e + 16)), stream);
  for (; e + 16 <= n; e += 16)
    store16(dst, base + e, ubg_v_mul_pairs(ld16(src, base + e), ubg_v_ld(fr + e), ubg_v_ld(fi + e)), stream);
#endif
  (void)stream;
  for (; e < n; e += 2) {
    const float re = LD(src, base + e), im = LD(src, base + e + 1);
    ST(dst, base + e, re * fr[e] + im * fi[e]);
    ST(dst, base + e + 1, im * fr[e + 1] + re * fi[e + 1]);
  }
}
