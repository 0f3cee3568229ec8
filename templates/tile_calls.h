/* The tile operations whose body depends on the compiler: gcc inlines
 * loops it vectorizes, tcc (which inlines nothing and has no vector code)
 * calls the library's vector operations (templates/vops.c), any other
 * compiler runs the scalar loop. Every body gives the same bits. Pasted
 * after the prelude into every kernel that moves or computes whole tiles.
 */
#ifndef UBG_TILE_CALLS_H
#define UBG_TILE_CALLS_H

/* ---- moving bytes -----------------------------------------------------------
 * ubg_copy: dst[0, n) = src[0, n) (bytes, no overlap); ubg_zero: dst = 0.
 * stream: dst bypasses the caches in whole 64-byte lines (an output
 * larger than the caches that nobody reads back soon; saves reading each
 * line before writing it); the stage must end with UBG_SFENCE(). For tcc
 * these are library calls (templates/vops.c), gcc inlines the prelude's
 * ubg_move. */
#if defined(__GNUC__) && !defined(__TINYC__) && defined(__SSE2__)
UBG_INLINE void ubg_copy(void *dst, const void *src, ubg_i64 n, int stream) {
  ubg_move((ubg_u8 *)dst, (const ubg_u8 *)src, n, stream);
}
UBG_INLINE void ubg_zero(void *dst, ubg_i64 n, int stream) { ubg_move((ubg_u8 *)dst, 0, n, stream); }
#elif defined(__TINYC__)
void ubg_vop_copy_bytes(void *dst, const void *src, ubg_i64 n, int stream);
void ubg_vop_zero_bytes(void *dst, ubg_i64 n, int stream);
#define ubg_copy(d, s, n, stream) ubg_vop_copy_bytes((d), (s), (n), (stream))
#define ubg_zero(d, n, stream) ubg_vop_zero_bytes((d), (n), (stream))
#else
UBG_INLINE void ubg_copy(void *dst, const void *src, ubg_i64 n, int stream) {
  ubg_i64 k;
  (void)stream;
  for (k = 0; k < n; k++) ((ubg_u8 *)dst)[k] = ((const ubg_u8 *)src)[k];
}
UBG_INLINE void ubg_zero(void *dst, ubg_i64 n, int stream) {
  ubg_i64 k;
  (void)stream;
  for (k = 0; k < n; k++) ((ubg_u8 *)dst)[k] = 0;
}
#endif

/* ---- vector operations over UB tiles, for tcc (templates/vops.c) -----------
 * tcc inlines nothing and has no vector code: its kernels call these, which
 * gcc compiled into the library, once per tile or chunk. Each gives the bits
 * of the scalar loop it replaces; dtype is 0 f32, 1 f16, 2 bf16. */
void ubg_vop_load(float *dst, const void *src, ubg_i64 i0, ubg_i64 n, int dtype);   /* dst = src[i0 + k] */
void ubg_vop_store(void *dst, ubg_i64 i0, const float *src, ubg_i64 n, int dtype, int stream);
void ubg_vop_rnd(float *dst, const float *src, ubg_i64 n, int dtype);               /* rnd() */
void ubg_vop_muls(float *dst, const float *a, float s, ubg_i64 n);                  /* a * s */
void ubg_vop_mul(float *dst, const float *a, const float *b, ubg_i64 n);            /* a * b */
void ubg_vop_adds(float *dst, const float *a, float s, ubg_i64 n);                  /* s + a */
void ubg_vop_add(float *dst, const float *a, const float *b, ubg_i64 n);            /* a + b */
void ubg_vop_axpby(float *dst, float alpha, const float *x, float beta, const float *y, ubg_i64 n);
void ubg_vop_mac(float *acc, const float *a, const float *b, ubg_i64 n);            /* acc += a * b */
void ubg_vop_fmas(float *dst, const float *x, float s, const float *y, ubg_i64 n);  /* fmaf(s, x, y) */
void ubg_vop_fill(float *dst, float v, ubg_i64 n);
void ubg_vop_copy(float *dst, const float *src, ubg_i64 n);
void ubg_vop_lanes_dot(float *acc, const float *a, const float *b, ubg_i64 n);      /* ubg_lanes_dot */
void ubg_vop_lanes_fma(float *acc, const float *a, const float *b, ubg_i64 n);      /* acc[l] = fmaf(a, b, acc[l]) */
enum { UBG_VCHUNK = 256 }; /* elements per chunk where a tcc path stages data */

#endif /* UBG_TILE_CALLS_H */
