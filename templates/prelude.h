/* ubgen kernel prelude: the only code every generated kernel sees.
 *
 * Templates paste it at the top of each rendered kernel (as a partial), and
 * the runtime includes it for the same conversions, so kernels, runtime and
 * tests share one definition of rounding. It holds no template tags.
 *
 * tcc sees no header: libtcc compiles kernels in memory and must not parse
 * system headers on the hot path, so the few types and libm functions kernels
 * use are declared here. Everything is plain C99 that gcc vectorizes and tcc
 * accepts; compiler-specific shapes go behind __TINYC__. gcc and clang get
 * machine operations from <immintrin.h>'s documented intrinsics, included
 * before any declaration so that a precompiled copy of it can serve every
 * kernel (the build makes one: parsing the header costs each kernel 0.12 s).
 */
#ifndef UBG_PRELUDE_H
#define UBG_PRELUDE_H
#if defined(__GNUC__) && !defined(__TINYC__) && defined(__x86_64__)
#include <immintrin.h>
#define UBG_X86 1
#endif

typedef unsigned char ubg_u8;
typedef unsigned short ubg_u16;
typedef unsigned int ubg_u32;
typedef long long ubg_i64;
typedef unsigned long long ubg_u64;

float sqrtf(float);
float expf(float);
float logf(float);
float tanhf(float);
float fmaf(float, float, float);

/* One argument slot, in the order of the spec's args, then derived values,
 * then workspace buffers. The runtime fills the same union. */
typedef union ubg_slot {
  void *p;
  ubg_i64 i;
  double f;
} ubg_slot;

/* Every kernel has this signature: one program of one stage of the grid.
 * ub is this worker's arena; buffers sit at offsets fixed by the planner. */
#define UBG_KERNEL(name)                                                       \
  void name(const void *ubg_args_, int stage, ubg_i64 pid, ubg_i64 nprog,      \
            unsigned char *ub)
/* A kernel whose plain loops gcc should vectorize 16 lanes wide where the
 * target has AVX-512: gcc's default there is 8 lanes, and a loop of
 * ubg_exp and divisions per element runs faster at 16. Not every kernel
 * gains (docs/performance.md), so a template opts in. */
#if defined(__GNUC__) && !defined(__TINYC__) && !defined(__clang__)
#define UBG_KERNEL_WIDE(name) __attribute__((target("prefer-vector-width=512"))) UBG_KERNEL(name)
#else
#define UBG_KERNEL_WIDE(name) UBG_KERNEL(name)
#endif

#if defined(__GNUC__) && !defined(__TINYC__)
#define UBG_INLINE static inline __attribute__((always_inline))
/* a rare path (an f32 subnormal in a vector store): out of line, and its
 * call tells gcc the branch to it is unlikely */
#define UBG_COLD static __attribute__((cold, noinline))
#define UBG_RESTRICT __restrict__
/* gcc and clang inline these by name; declared here, as the libm functions are */
void *memcpy(void *, const void *, unsigned long);
void *memset(void *, int, unsigned long);
#else
#define UBG_INLINE static inline
#define UBG_COLD static
#define UBG_RESTRICT
#endif
/* a request for the line at p: to read, into every cache level (T0); to
 * write (ET0, prefetchw where the CPU has it); to read, into the L2 and
 * below only (T2) */
#if defined(UBG_X86)
#define UBG_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#define UBG_PREFETCH_W(p) _mm_prefetch((const char *)(p), _MM_HINT_ET0)
#define UBG_PREFETCH_L2(p) _mm_prefetch((const char *)(p), _MM_HINT_T2)
#else
#define UBG_PREFETCH(p) ((void)(p))
#define UBG_PREFETCH_W(p) ((void)(p))
#define UBG_PREFETCH_L2(p) ((void)(p))
#endif
/* orders this thread's streaming stores before what follows */
#if defined(UBG_X86)
#define UBG_SFENCE() _mm_sfence()
#else
#define UBG_SFENCE() ((void)0)
#endif

UBG_INLINE ubg_i64 ubg_min(ubg_i64 a, ubg_i64 b) { return a < b ? a : b; }
UBG_INLINE ubg_i64 ubg_max(ubg_i64 a, ubg_i64 b) { return a > b ? a : b; }
UBG_INLINE ubg_i64 ubg_cdiv(ubg_i64 a, ubg_i64 b) { return (a + b - 1) / b; }

UBG_INLINE ubg_u32 ubg_f32_bits(float f) {
  union { float f; ubg_u32 u; } v;
  v.f = f;
  return v.u;
}
UBG_INLINE float ubg_bits_f32(ubg_u32 u) {
  union { float f; ubg_u32 u; } v;
  v.u = u;
  return v.f;
}

/* ---- bfloat16 --------------------------------------------------------- */

UBG_INLINE float ubg_bf16_to_f32(ubg_u16 h) { return ubg_bits_f32((ubg_u32)h << 16); }

/* Round to nearest even on the bits; a carry out of the mantissa rounds up
 * the exponent, so overflow becomes Inf. NaN stays NaN (sign and top payload
 * bits kept, quiet bit set). Subnormals need nothing special: bf16 shares the
 * f32 exponent range. Branch-free so gcc vectorizes it. */
UBG_INLINE ubg_u16 ubg_f32_to_bf16(float f) {
  ubg_u32 u = ubg_f32_bits(f);
  ubg_u32 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  ubg_u32 quiet_nan = (u >> 16) | 0x40u;
  return (ubg_u16)((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

/* ---- IEEE binary16 ---------------------------------------------------- */

/* The choices are made with masks, not ?:, so gcc vectorizes loops of it
 * (with ?: it kept a branch per element). */
UBG_INLINE float ubg_f16_to_f32(ubg_u16 h) {
  ubg_u32 sign = (ubg_u32)(h & 0x8000u) << 16;
  ubg_u32 em = h & 0x7fffu;
  ubg_u32 normal = (em << 13) + 0x38000000u;           /* rebias 15 -> 127 */
  ubg_u32 inf_nan = (em << 13) | 0x7f800000u | ((ubg_u32)(em > 0x7c00u) << 22); /* NaN comes out quiet, as from vcvtph2ps */
  ubg_u32 sub = ubg_f32_bits((float)(int)em * 5.9604644775390625e-08f); /* em * 2^-24, exact */
  ubg_u32 special = 0u - (ubg_u32)(em >= 0x7c00u), subnormal = 0u - (ubg_u32)(em < 0x0400u);
  ubg_u32 r = (normal & ~special) | (inf_nan & special);
  r = (r & ~subnormal) | (sub & subnormal);
  return ubg_bits_f32(r | sign);
}

/* Round to nearest even with integer operations only, so the result does not
 * depend on the FPU's rounding mode or flush-to-zero flags.
 *   e >= 143: |f| >= 65536 -> Inf (NaN stays NaN, quiet, top payload kept)
 *   e >= 113: normal half: drop 13 mantissa bits with RNE; a carry may round
 *             up to the next binade or to Inf (0x7c00), both correct encodings
 *   e <  113: subnormal half: shift the full mantissa right by 126 - e
 *             (>= 14) with RNE; everything below 2^-25 becomes zero. */
UBG_INLINE ubg_u16 ubg_f32_to_f16(float f) {
  ubg_u32 u = ubg_f32_bits(f);
  ubg_u32 sign = (u >> 16) & 0x8000u;
  ubg_u32 a = u & 0x7fffffffu;
  ubg_u32 e = a >> 23;
  ubg_u32 norm = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  ubg_u32 m = (a & 0x007fffffu) | 0x00800000u;
  ubg_u32 s = 126u - (e < 126u ? e : 126u);
  s = s > 31u ? 31u : s < 1u ? 1u : s; /* [1, 31]: only e < 113 (s >= 14) uses it */
  /* RNE as one add: half - 1, plus 1 when the kept part is odd (the
   * comparisons of rem against half kept gcc from vectorizing) */
  ubg_u32 sub = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
  ubg_u32 use_sub = 0u - (ubg_u32)(e < 113u), over = 0u - (ubg_u32)(e >= 143u), nan = 0u - (ubg_u32)(a > 0x7f800000u);
  ubg_u32 r = (norm & ~use_sub) | (sub & use_sub);
  r = (r & ~over) | (0x7c00u & over);
  r = (r & ~nan) | ((0x7e00u | ((a >> 13) & 0x03ffu)) & nan);
  return (ubg_u16)(r | sign);
}

/* ---- rounding to a storage dtype, staying in f32 ------------------------
 * rnd() of the semantics: the f32 value of the nearest dtype value. */
UBG_INLINE float ubg_rnd_f32(float v) { return v; }
UBG_INLINE float ubg_rnd_bf16(float v) { return ubg_bf16_to_f32(ubg_f32_to_bf16(v)); }
UBG_INLINE float ubg_rnd_f16(float v) { return ubg_f16_to_f32(ubg_f32_to_f16(v)); }

/* ---- typed loads and stores of global memory (element index i) --------- */
UBG_INLINE float ubg_ld_f32(const void *p, ubg_i64 i) { return ((const float *)p)[i]; }
UBG_INLINE float ubg_ld_bf16(const void *p, ubg_i64 i) { return ubg_bf16_to_f32(((const ubg_u16 *)p)[i]); }
UBG_INLINE float ubg_ld_f16(const void *p, ubg_i64 i) { return ubg_f16_to_f32(((const ubg_u16 *)p)[i]); }
UBG_INLINE void ubg_st_f32(void *p, ubg_i64 i, float v) { ((float *)p)[i] = v; }
UBG_INLINE void ubg_st_bf16(void *p, ubg_i64 i, float v) { ((ubg_u16 *)p)[i] = ubg_f32_to_bf16(v); }
UBG_INLINE void ubg_st_f16(void *p, ubg_i64 i, float v) { ((ubg_u16 *)p)[i] = ubg_f32_to_f16(v); }

/* ---- 16-lane vectors for gcc with AVX512-BF16 (UBG_V16) ------------------
 * The scalar functions above define every result. Where gcc targets a CPU
 * with AVX512-BF16, kernels may also run 16 lanes at a time with these,
 * which give the same bits: vcvtneps2bf16 rounds to nearest even and turns
 * NaN into (bits >> 16) | 0x40 exactly as ubg_f32_to_bf16 does, and differs
 * only on f32 subnormal inputs (it flushes them to zero). So every converting
 * helper ORs the lanes holding an f32 subnormal into *sub, and
 * a kernel that sees *sub != 0 redoes those 16 lanes with the scalar code.
 * Vector-extension types, so lanes read as plain C; machine operations
 * through <immintrin.h>'s intrinsics, cast at the call. */
#if defined(__GNUC__) && !defined(__TINYC__)
/* 16 floats as one gcc vector, for chunk-wise code on any gcc target (one
 * AVX-512 register, or two AVX2 ones), each operation elementwise in f32 as
 * written; returned by value only from inline functions (no ABI to keep) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float ubg_f32x16 __attribute__((vector_size(64)));
/* a 64-byte line of 16-bit values as 16 pairs (32-bit words), as 32 lanes,
 * and as 32 unsigned lanes: the shapes bf16's pair instructions take */
typedef int ubg_pair_i32x16 __attribute__((vector_size(64)));
typedef short ubg_pair_i16x32 __attribute__((vector_size(64)));
typedef unsigned short ubg_u16x32 __attribute__((vector_size(64)));
UBG_INLINE ubg_f32x16 ubg_v_ld(const float *p) {
  ubg_f32x16 v;
  memcpy(&v, p, 64);
  return v;
}
UBG_INLINE void ubg_v_st(float *p, ubg_f32x16 v) { memcpy(p, &v, 64); }
/* fma(a, b, c) on each lane, rounded once: the bits of fmaf, which is what
 * tcc's kernels call */
UBG_INLINE ubg_f32x16 ubg_v_fma(ubg_f32x16 a, ubg_f32x16 b, ubg_f32x16 c) {
#if defined(__AVX512F__)
  return (ubg_f32x16)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
  int l;
  for (l = 0; l < 16; l++) c[l] = fmaf(a[l], b[l], c[l]);
  return c;
#endif
}
/* the 8 complex numbers of x, pairs of lanes (re, im), times those given
 * by fr = (re', re') and fi = (-im', im') per pair: x fr + swap(x) fi, so
 * lane re re' + im (-im'), lane im im re' + re im' (a swap within each
 * pair, two products and a sum, each rounded as written) */
UBG_INLINE ubg_f32x16 ubg_v_mul_pairs(ubg_f32x16 x, ubg_f32x16 fr, ubg_f32x16 fi) {
#if defined(__AVX512F__)
  const ubg_f32x16 swapped = (ubg_f32x16)_mm512_permute_ps((__m512)x, 0xb1); /* lanes 1 0 3 2 ... */
#else
  ubg_f32x16 swapped;
  int l;
  for (l = 0; l < 16; l++) swapped[l] = x[l ^ 1];
#endif
  return x * fr + swapped * fi;
}
/* s in every lane (one broadcast; a loop of lane stores is not merged) */
UBG_INLINE ubg_f32x16 ubg_v_splat(float s) { return (ubg_f32x16){s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s}; }
/* a comparison of two ubg_f32x16 (a > b, a != a, ...): each lane all ones
 * where it holds, zero where not */
typedef int ubg_mask_x16 __attribute__((vector_size(64)));
/* c ? a : b on each lane, c a comparison's result: the bits of the scalar
 * select (one blend) */
UBG_INLINE ubg_f32x16 ubg_v_select(ubg_mask_x16 c, ubg_f32x16 a, ubg_f32x16 b) {
  return (ubg_f32x16)((c & (ubg_mask_x16)a) | (~c & (ubg_mask_x16)b));
}
/* lanes chosen by constant indices: lane l of the result is lane idx[l] of
 * a (0-15) or of b (16-31), one vpermt2ps where the target has AVX-512 */
typedef int ubg_index_x16 __attribute__((vector_size(64)));
UBG_INLINE ubg_f32x16 ubg_v_permute2(ubg_f32x16 a, ubg_f32x16 b, ubg_index_x16 idx) {
#if defined(__AVX512F__)
  return (ubg_f32x16)_mm512_permutex2var_ps((__m512)a, (__m512i)idx, (__m512)b);
#else
  ubg_f32x16 r;
  int l;
  for (l = 0; l < 16; l++) r[l] = idx[l] < 16 ? a[idx[l] & 15] : b[idx[l] & 15];
  return r;
#endif
}
/* the same for 32 16-bit lanes of one vector: lane l is lane idx[l] of h
 * (vpermw where the target has AVX512BW) */
typedef short ubg_index_x32 __attribute__((vector_size(64)));
UBG_INLINE ubg_pair_i16x32 ubg_v_permute_words(ubg_pair_i16x32 h, ubg_index_x32 idx) {
#if defined(__AVX512BW__)
  return (ubg_pair_i16x32)_mm512_permutexvar_epi16((__m512i)idx, (__m512i)h);
#else
  ubg_pair_i16x32 r;
  int l;
  for (l = 0; l < 32; l++) r[l] = h[idx[l] & 31];
  return r;
#endif
}
/* the lanes of v above s as bits (bit l: lane l), for a loop that visits
 * the few lanes that pass a test */
UBG_INLINE unsigned ubg_v_gt_bits(ubg_f32x16 v, float s) {
#if defined(__AVX512F__)
  return _mm512_cmp_ps_mask((__m512)v, _mm512_set1_ps(s), _CMP_GT_OQ);
#else
  unsigned bits = 0;
  int l;
  for (l = 0; l < 16; l++) bits |= (unsigned)(v[l] > s) << l;
  return bits;
#endif
}
/* v streamed (non-temporal) to p when p starts a 64-byte line: 1, else 0
 * and nothing stored (the caller stores through the caches). A whole
 * line at once, so the write-combining buffer leaves full; an f32 output
 * needs no conversion, so this is the f32 kernels' streaming path (the
 * stage must end with UBG_SFENCE()). */
UBG_INLINE int ubg_v_stream_f32(float *p, ubg_f32x16 v) {
#if defined(__AVX512F__)
  if (((unsigned long)p & 63) == 0) {
    _mm512_stream_ps(p, (__m512)v);
    return 1;
  }
#endif
  (void)p, (void)v;
  return 0;
}
#pragma GCC diagnostic pop
#endif
#if defined(UBG_X86) && defined(__AVX512F__) && defined(__AVX512BF16__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && !defined(UBG_NO_V16)
#define UBG_V16 1
typedef ubg_u32 ubg_u32x16 __attribute__((vector_size(64)));
typedef int ubg_i32x16 __attribute__((vector_size(64)));
typedef short ubg_i16x16 __attribute__((vector_size(32)));

/* bf16 to f32 is a zero extension and a shift; vpmovzxwd, because
 * gcc's generic vector conversion splits the extension into four
 * instructions */
UBG_INLINE ubg_f32x16 ubg_v_widen_bf16(ubg_i16x16 h) {
  return (ubg_f32x16)((ubg_i32x16)_mm512_cvtepu16_epi32((__m256i)h) << 16);
}
/* 16 bf16 at element i of p, as f32 (exact) */
UBG_INLINE ubg_f32x16 ubg_v_ld_bf16(const void *p, ubg_i64 i) {
  ubg_i16x16 h;
  memcpy(&h, (const ubg_u16 *)p + i, 32);
  return ubg_v_widen_bf16(h);
}
/* the lanes of v that hold an f32 subnormal: exponent bits 0, mantissa
 * not; tested on the integer bits because vfpclassps calls a subnormal zero
 * when MXCSR.DAZ is set; two mask tests (the vector comparison spelled in
 * C compiled to eight ops) */
UBG_INLINE unsigned ubg_v_subnormal_lanes(ubg_f32x16 v) {
  const ubg_i32x16 u = (ubg_i32x16)v, exp = (ubg_i32x16){0} + 0x7f800000, man = (ubg_i32x16){0} + 0x007fffff;
  return _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask((__m512i)u, (__m512i)exp), (__m512i)u, (__m512i)man);
}
UBG_INLINE ubg_i16x16 ubg_v_to_bf16(ubg_f32x16 v, unsigned *sub) {
  *sub |= ubg_v_subnormal_lanes(v);
  return (ubg_i16x16)_mm512_cvtneps_pbh((__m512)v);
}
/* ubg_rnd_bf16 on 16 lanes */
UBG_INLINE ubg_f32x16 ubg_v_rnd_bf16(ubg_f32x16 v, unsigned *sub) { return ubg_v_widen_bf16(ubg_v_to_bf16(v, sub)); }
/* ubg_rnd_bf16 on 16 lanes in integer arithmetic, ubg_f32_to_bf16's
 * rounding kept in the f32 lanes: exact for every finite value, subnormals
 * included (so no *sub, and no conversion and widening: a third of the
 * operations of ubg_v_rnd_bf16 with its subnormal test), and for the
 * infinities. A NaN comes out right when it is quiet and its low 16 bits
 * are zero, as is every NaN of a product of a bf16 value (zero low bits)
 * and a float, which quiets it; only for such products is it used. */
UBG_INLINE ubg_f32x16 ubg_v_rnd_bf16_product(ubg_f32x16 v) {
  const ubg_i32x16 u = (ubg_i32x16)v;
  return (ubg_f32x16)((u + 0x7fff + ((u >> 16) & 1)) & (int)0xffff0000u);
}
/* 16 bf16 (or f16) to element i of p */
UBG_INLINE void ubg_v_st_bf16(void *p, ubg_i64 i, ubg_i16x16 h) { memcpy((ubg_u16 *)p + i, &h, 32); }
#define ubg_v_st_f16 ubg_v_st_bf16

/* f16 the same way, with the AVX512F conversions, which give the scalar
 * code's bits for every input whatever MXCSR's FTZ and DAZ say (tested
 * exhaustively for decoding, on a 600M-value sweep for encoding): vcvtph2ps
 * is exact and quiets NaN as ubg_f16_to_f32 does; vcvtps2ph with imm 0
 * rounds to nearest even, keeps f16 subnormals and turns NaN into
 * 0x7e00 | top payload, as ubg_f32_to_f16. So *sub is never set. */
UBG_INLINE ubg_f32x16 ubg_v_widen_f16(ubg_i16x16 h) {
  return (ubg_f32x16)_mm512_cvtph_ps((__m256i)h);
}
UBG_INLINE ubg_f32x16 ubg_v_ld_f16(const void *p, ubg_i64 i) {
  ubg_i16x16 h;
  memcpy(&h, (const ubg_u16 *)p + i, 32);
  return ubg_v_widen_f16(h);
}
UBG_INLINE ubg_i16x16 ubg_v_to_f16(ubg_f32x16 v, unsigned *sub) {
  (void)sub;
  return (ubg_i16x16)_mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT);
}
UBG_INLINE ubg_f32x16 ubg_v_rnd_f16(ubg_f32x16 v, unsigned *sub) { return ubg_v_widen_f16(ubg_v_to_f16(v, sub)); }
/* The same with a streaming (non-temporal) store where the address allows:
 * for an output larger than the caches, which nobody reads back soon, this
 * saves reading every line before writing it (a third of the traffic of a
 * copy). The stage must end with UBG_SFENCE(). */
UBG_INLINE void ubg_v_stream_bf16(void *p, ubg_i64 i, ubg_i16x16 h) {
  ubg_u16 *q = (ubg_u16 *)p + i;
  unsigned long a = (unsigned long)q;
  if ((a & 31) == 0) {
    _mm256_stream_si256((__m256i *)q, (__m256i)h);
  } else if ((a & 15) == 0) {
    _mm_stream_si128((__m128i *)q, _mm256_castsi256_si128((__m256i)h));
    _mm_stream_si128((__m128i *)(q + 8), _mm256_extracti128_si256((__m256i)h, 1));
  } else {
    memcpy(q, &h, 32);
  }
}
#define ubg_v_stream_f16 ubg_v_stream_bf16
/* 32 values as bf16 (lo to the first 16, hi to the next) in one
 * conversion (vcvtne2ps2bf16), *sub nonzero where it flushed an f32
 * subnormal (then ubg_f32_to_bf16 must convert them), and their 64 bytes
 * stored at element i of p: a whole line when i is 32-aligned in an
 * aligned tensor, so a streaming store flushes its write-combining buffer
 * full instead of in two halves. A flushed subnormal comes out a zero
 * word, so the lanes are tested only where the conversion gave one: one
 * mask test instead of four. */
typedef short ubg_i16x32 __attribute__((vector_size(64)));
UBG_INLINE ubg_i16x32 ubg_v_to_bf16x32(ubg_f32x16 lo, ubg_f32x16 hi, unsigned *sub) {
  const ubg_i16x32 h = (ubg_i16x32)_mm512_cvtne2ps_pbh((__m512)hi, (__m512)lo);
  if (_mm512_testn_epi16_mask((__m512i)h, _mm512_set1_epi16(0x7fff)) != 0)
    *sub |= ubg_v_subnormal_lanes(lo) | ubg_v_subnormal_lanes(hi);
  return h;
}
UBG_INLINE void ubg_v_st_x32(void *p, ubg_i64 i, ubg_i16x32 h, int stream) {
  ubg_u16 *q = (ubg_u16 *)p + i;
  if (stream && ((unsigned long)q & 63) == 0) {
    _mm512_stream_si512((__m512i *)q, (__m512i)h);
  } else if (stream) { /* not line-aligned: as two halves */
    const ubg_i16x16 *half = (const ubg_i16x16 *)&h;
    ubg_v_stream_bf16(p, i, half[0]);
    ubg_v_stream_bf16(p, i + 16, half[1]);
  } else {
    memcpy(q, &h, 64);
  }
}
/* dst[i0, i0 + n) = bf16(src[0, n)) (f16 for the f16 name) 16 lanes at a
 * time (streaming when stream), stopping before the first chunk that holds
 * an f32 subnormal (bf16 only); returns how many elements it stored, the
 * caller's scalar code does the rest */
UBG_INLINE ubg_i64 ubg_v_store_half_row(void *dst, ubg_i64 i0, const float *src, ubg_i64 n, int stream, int bf16) {
  ubg_i64 k = 0;
  for (; k + 16 <= n; k += 16) {
    unsigned sub = 0;
    const ubg_f32x16 v = ubg_v_ld(src + k);
    const ubg_i16x16 h = bf16 ? ubg_v_to_bf16(v, &sub) : ubg_v_to_f16(v, &sub);
    if (sub != 0) break;
    if (stream) ubg_v_stream_bf16(dst, i0 + k, h);
    else ubg_v_st_bf16(dst, i0 + k, h);
  }
  return k;
}
UBG_INLINE ubg_i64 ubg_v_store_bf16_row(void *dst, ubg_i64 i0, const float *src, ubg_i64 n, int stream) {
  return ubg_v_store_half_row(dst, i0, src, n, stream, 1);
}
UBG_INLINE ubg_i64 ubg_v_store_f16_row(void *dst, ubg_i64 i0, const float *src, ubg_i64 n, int stream) {
  return ubg_v_store_half_row(dst, i0, src, n, stream, 0);
}
/* acc + a.lo * b.lo + a.hi * b.hi on each of the 16 pairs of bf16 values,
 * in the instruction's order (vdpbf16ps: products exact, sums f32) */
UBG_INLINE ubg_f32x16 ubg_v_dot_bf16_pairs(ubg_f32x16 acc, ubg_pair_i32x16 a, ubg_pair_i32x16 b) {
  return (ubg_f32x16)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
}
/* hi and lo rounded to bf16 (RNE) and interleaved as pairs: word l holds
 * lo[l] in its low half, hi[l] in its high half (vcvtne2ps2bf16) */
UBG_INLINE ubg_pair_i32x16 ubg_v_pack_bf16_pairs(ubg_f32x16 hi, ubg_f32x16 lo) {
  return (ubg_pair_i32x16)_mm512_cvtne2ps_pbh((__m512)hi, (__m512)lo);
}
/* min(a, b) on each unsigned 16-bit lane */
UBG_INLINE ubg_u16x32 ubg_v_min_u16x32(ubg_u16x32 a, ubg_u16x32 b) {
  return (ubg_u16x32)_mm512_min_epu16((__m512i)a, (__m512i)b);
}
#endif

/* ---- moving bytes, for gcc ----------------------------------------------------
 * The bodies of tile_calls.h's ubg_copy and ubg_zero under gcc, and of the
 * library calls tcc kernels make for them (templates/vops.c). */
#if defined(UBG_X86)
/* 64 bytes at d (64-byte aligned) bypassing the caches, from s or (s NULL)
 * zeros: whole lines, so the write-combining buffer is flushed full */
UBG_INLINE void ubg_stream_line(ubg_u8 *d, const ubg_u8 *s) {
#ifdef __AVX512F__
  __m512i v = _mm512_setzero_si512();
  if (s) memcpy(&v, s, 64);
  _mm512_stream_si512((__m512i *)d, v);
#else
  int q;
  for (q = 0; q < 4; q++) {
    __m128i v = _mm_setzero_si128();
    if (s) memcpy(&v, s + 16 * q, 16);
    _mm_stream_si128((__m128i *)(d + 16 * q), v);
  }
#endif
}
/* dst[0, n) = src[0, n), or zeros when src is NULL; streaming when asked
 * and worth it, the unaligned head and the tail through the caches */
UBG_INLINE void ubg_move(ubg_u8 *d, const ubg_u8 *s, ubg_i64 n, int stream) {
  ubg_i64 head = (ubg_i64)((64 - ((unsigned long)d & 63)) & 63), k;
  if (!stream || n < 256) head = n;
  if (s) memcpy(d, s, (unsigned long)head);
  else memset(d, 0, (unsigned long)head);
  for (k = head; k + 64 <= n; k += 64) ubg_stream_line(d + k, s ? s + k : 0);
  if (k < n) {
    if (s) memcpy(d + k, s + k, (unsigned long)(n - k));
    else memset(d + k, 0, (unsigned long)(n - k));
  }
}
#endif

/* Asks for bytes [0, n) of p to be brought into cache, to read (or, _w, to
 * write): the CPU's version of an NPU kernel loading its next tile into a
 * second UB buffer while it computes on the first. Kernels ask for a few
 * lines at a time, spread over their work, since a burst larger than the
 * core's miss buffers is partly dropped. A hint only; nothing for tcc. */
enum { UBG_PF_CHUNK = 256 }; /* elements computed between two requests */
UBG_INLINE void ubg_prefetch(const void *p, ubg_i64 n) {
  ubg_i64 off;
  for (off = 0; off < n; off += 64) UBG_PREFETCH((const ubg_u8 *)p + off);
}
/* the same into the L2 only: for rows gathered from scattered places, whose
 * requests would otherwise hold the L1's few miss buffers and push the
 * working tile out of the L1 (the embedding backward) */
UBG_INLINE void ubg_prefetch_l2(const void *p, ubg_i64 n) {
  ubg_i64 off;
  for (off = 0; off < n; off += 64) UBG_PREFETCH_L2((const ubg_u8 *)p + off);
}
UBG_INLINE void ubg_prefetch_w(void *p, ubg_i64 n) {
  ubg_i64 off;
  for (off = 0; off < n; off += 64) UBG_PREFETCH_W((ubg_u8 *)p + off);
}

/* ---- block-size independent reductions ----------------------------------
 * Element d of a row always goes to lane d % UBG_LANES, lanes are carried
 * across tiles and folded by one fixed tree, so the sum has the same bits
 * whatever tile size (BLOCK_D) or thread count produced it. Tiles start at
 * multiples of UBG_LANES (BLOCK_D >= UBG_LANES is a spec constraint). */
#define UBG_LANES 16

UBG_INLINE void ubg_lanes_zero(float *acc) {
  int l;
  for (l = 0; l < UBG_LANES; l++) acc[l] = 0.0f;
}

/* acc[l] += a[j] for j = l, l + 16, ... < n; a starts at lane 0 */
UBG_INLINE void ubg_lanes_add(float *UBG_RESTRICT acc, const float *UBG_RESTRICT a, ubg_i64 n) {
  ubg_i64 j = 0;
  int l;
  for (; j + UBG_LANES <= n; j += UBG_LANES)
    for (l = 0; l < UBG_LANES; l++) acc[l] += a[j + l];
  for (l = 0; j + l < n; l++) acc[l] += a[j + l];
}

/* acc[l] += a[j] * b[j] for j = l, l + 16, ... < n; a and b start at lane 0 */
UBG_INLINE void ubg_lanes_dot(float *UBG_RESTRICT acc, const float *UBG_RESTRICT a,
                              const float *UBG_RESTRICT b, ubg_i64 n) {
  ubg_i64 j = 0;
  int l;
  for (; j + UBG_LANES <= n; j += UBG_LANES)
    for (l = 0; l < UBG_LANES; l++) acc[l] += a[j + l] * b[j + l];
  for (l = 0; j + l < n; l++) acc[l] += a[j + l] * b[j + l];
}

UBG_INLINE float ubg_lanes_fold(const float *acc) {
  float s8[8], s4[4];
  int l;
  for (l = 0; l < 8; l++) s8[l] = acc[l] + acc[l + 8];
  for (l = 0; l < 4; l++) s4[l] = s8[l] + s8[l + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* The same with four times the lanes, UBG_LANES4: element d of a row to lane
 * d % 64, folded to UBG_LANES lanes by a fixed tree, then by ubg_lanes_fold.
 * A row's sum then runs as four independent vector chains instead of one,
 * so it is not bound by an add's latency. A kernel that uses them tiles by
 * multiples of 64 (BLOCK_D >= 64 in its spec). */
#define UBG_LANES4 64

UBG_INLINE void ubg_lanes4_zero(float *acc) {
  int l;
  for (l = 0; l < UBG_LANES4; l++) acc[l] = 0.0f;
}

UBG_INLINE float ubg_lanes4_fold(const float *acc) {
  float a[UBG_LANES];
  int l;
  for (l = 0; l < UBG_LANES; l++) a[l] = (acc[l] + acc[l + 16]) + (acc[l + 32] + acc[l + 48]);
  return ubg_lanes_fold(a);
}

/* ---- e^x -------------------------------------------------------------------
 * expf with + - * and bit operations only (Cephes' range reduction and
 * polynomial, within 2 ulp), so one loop of it is vectorized by gcc and
 * gives the same bits under tcc, where libm's expf would be a call per
 * element. Cephes' constants: 1 / ln 2, ln 2 in two parts (the first with
 * 9 bits, so n ln2_hi is exact), the polynomial's from its highest degree. */
#define UBG_EXP_LOG2E 1.44269504088896341f
#define UBG_EXP_ROUND 12582912.0f /* 1.5 * 2^23: x + it - it rounds x to an integer */
#define UBG_EXP_LN2_HI 0.693359375f
#define UBG_EXP_LN2_LO -2.12194440e-4f
#define UBG_EXP_P5 1.9875691500e-4f
#define UBG_EXP_P4 1.3981999507e-3f
#define UBG_EXP_P3 8.3334519073e-3f
#define UBG_EXP_P2 4.1665795894e-2f
#define UBG_EXP_P1 1.6666665459e-1f
#define UBG_EXP_P0 5.0000001201e-1f

/* x = n ln2 + r, |r| <= ln2 / 2, and e^r; x finite and in [-104, 88.7228] */
UBG_INLINE float ubg_exp_reduced(float x, float *n_out) {
  float n = (x * UBG_EXP_LOG2E + UBG_EXP_ROUND) - UBG_EXP_ROUND; /* round(x / ln 2) */
  float r = x - n * UBG_EXP_LN2_HI;
  r = r - n * UBG_EXP_LN2_LO;
  float p = UBG_EXP_P5;
  p = p * r + UBG_EXP_P4;
  p = p * r + UBG_EXP_P3;
  p = p * r + UBG_EXP_P2;
  p = p * r + UBG_EXP_P1;
  p = p * r + UBG_EXP_P0;
  *n_out = n;
  return (p * (r * r) + r) + 1.0f;
}

/* x <= -104 gives 0 (-Inf too), x > 88.7228 Inf, NaN stays NaN. 2^n is
 * applied as two halves so a subnormal result is rounded once. */
UBG_INLINE float ubg_exp(float x) {
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 88.7228f ? 88.7228f : xc;
  xc = xc != xc ? 0.0f : xc;
  float n, p = ubg_exp_reduced(xc, &n);
  int ni = (int)n, n1 = ni / 2, n2 = ni - n1;
  float res = p * ubg_bits_f32((ubg_u32)(n1 + 127) << 23) * ubg_bits_f32((ubg_u32)(n2 + 127) << 23);
  res = x > 88.7228f ? 1.0f / 0.0f : res;
  return x != x ? x : res;
}

/* ubg_exp_reduced with the rounding to n, the range reduction's second step
 * and each step of the polynomial one fmaf, about half the operations.
 * fmaf is rounded once under every compiler (gcc's vfmadd, tcc's call to
 * libm), so the backends still agree to the bit; ubg_exp keeps the plain
 * steps, the bits FLCE's cross entropy has. */
UBG_INLINE float ubg_exp_reduced_fma(float x, float *n_out) {
  float n = fmaf(x, UBG_EXP_LOG2E, UBG_EXP_ROUND) - UBG_EXP_ROUND; /* round(x / ln 2) */
  float r = x - n * UBG_EXP_LN2_HI; /* exact: n has at most 8 bits */
  r = fmaf(n, -UBG_EXP_LN2_LO, r);
  float p = UBG_EXP_P5;
  p = fmaf(p, r, UBG_EXP_P4);
  p = fmaf(p, r, UBG_EXP_P3);
  p = fmaf(p, r, UBG_EXP_P2);
  p = fmaf(p, r, UBG_EXP_P1);
  p = fmaf(p, r, UBG_EXP_P0);
  *n_out = n;
  return fmaf(p, r * r, r) + 1.0f;
}

/* e^t for t in [-87, 88]: ubg_exp_reduced_fma, with 2^n one normal float
 * (n stays within [-126, 127] there), about a third of ubg_exp's
 * operations; the caller clamps t and decides what lies outside */
UBG_INLINE float ubg_exp_fma_in_range(float t) {
  float n, p = ubg_exp_reduced_fma(t, &n);
  return p * ubg_bits_f32((ubg_u32)((int)n + 127) << 23);
}

/* 1 / (1 + e^-x), vectorized by gcc, the same bits under tcc, within 2.5
 * ulp of the exact sigmoid for |x| <= 87. Beyond, 1 + e^-x is 1 (x > 87),
 * or e^-x itself, which stays e^88 down to x = -88.7228 (the result
 * 6.1e-39 where 1/e^-x is smaller) and is Inf below, as ubg_exp's: 2^n is
 * one normal float and Inf a constant, about a third of ubg_exp's
 * operations. NaN gives 1 / (1 - x). */
UBG_INLINE float ubg_sigmoid(float x) {
  /* written as max then min, which gcc keeps as vmaxps, vminps: NaN becomes -87 */
  float t = -x > -87.0f ? -x : -87.0f;
  t = t < 88.0f ? t : 88.0f;
  float e = ubg_exp_fma_in_range(t);
  e = x < -88.7228f ? ubg_bits_f32(0x7f800000u) : e;
  e = x != x ? -x : e;
  return 1.0f / (1.0f + e);
}

#endif /* UBG_PRELUDE_H */
