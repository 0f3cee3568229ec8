/* Vector operations over UB tiles, for kernels tcc compiles.
 *
 * tcc inlines nothing and emits no vector code, so a kernel written as
 * per-element helpers runs far slower under tcc than under gcc. The
 * templates' __TINYC__ path therefore works like an NPU kernel's vector
 * unit: one call per tile or chunk, "multiply this UB buffer by a scalar",
 * "round it to bf16", "store it to global memory as f16". These functions
 * are compiled by gcc with the kernels' flags (vectorized, -ffp-contract=off)
 * and handed to tcc like the libm functions (runtime/jit_tcc.c).
 *
 * Each gives exactly the bits of the scalar loop it stands for: the same
 * float operations in the same order per element, the prelude's conversions
 * (with their AVX-512 paths, which have the scalar bits), and the prelude's
 * lanes for the one reduction. test_jit checks every variant bit for bit. */
#include "prelude.h"
#include "vops.h"

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2

void ubg_vop_load(float *dst, const void *src, ubg_i64 i0, ubg_i64 n, int dtype) {
  ubg_i64 k;
  if (dtype == DT_F32)
    for (k = 0; k < n; k++) dst[k] = ubg_ld_f32(src, i0 + k);
  else if (dtype == DT_F16) {
    k = 0;
#ifdef UBG_V16
    for (; k + 16 <= n; k += 16) ubg_v_st(dst + k, ubg_v_ld_f16(src, i0 + k));
#endif
    for (; k < n; k++) dst[k] = ubg_ld_f16(src, i0 + k);
  }
  else
    for (k = 0; k < n; k++) dst[k] = ubg_ld_bf16(src, i0 + k);
}

void ubg_vop_store(void *dst, ubg_i64 i0, const float *src, ubg_i64 n, int dtype, int stream) {
  ubg_i64 k = 0;
  if (dtype == DT_F32) {
    ubg_move((ubg_u8 *)((float *)dst + i0), (const ubg_u8 *)src, n * 4, stream); /* no conversion: the (streaming) copy */
  } else if (dtype == DT_F16) {
#ifdef UBG_V16
    k = ubg_v_store_f16_row(dst, i0, src, n, stream);
#endif
    for (; k < n; k++) ubg_st_f16(dst, i0 + k, src[k]);
  } else {
#ifdef UBG_V16
    k = ubg_v_store_bf16_row(dst, i0, src, n, stream); /* up to a chunk with an f32 subnormal */
#endif
    for (; k < n; k++) ubg_st_bf16(dst, i0 + k, src[k]);
  }
  (void)stream;
}

void ubg_vop_rnd(float *dst, const float *src, ubg_i64 n, int dtype) {
  ubg_i64 k = 0;
  if (dtype == DT_F32) {
    for (; k < n; k++) dst[k] = src[k];
  } else if (dtype == DT_F16) {
#ifdef UBG_V16
    for (; k + 16 <= n; k += 16) {
      unsigned sub = 0;
      ubg_v_st(dst + k, ubg_v_rnd_f16(ubg_v_ld(src + k), &sub));
    }
#endif
    for (; k < n; k++) dst[k] = ubg_rnd_f16(src[k]);
  } else {
#ifdef UBG_V16
    for (; k + 16 <= n; k += 16) {
      unsigned sub = 0;
      ubg_f32x16 v = ubg_v_rnd_bf16(ubg_v_ld(src + k), &sub);
      if (sub != 0) break;
      ubg_v_st(dst + k, v);
    }
#endif
    for (; k < n; k++) dst[k] = ubg_rnd_bf16(src[k]);
  }
}

void ubg_vop_muls(float *dst, const float *a, float s, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = a[k] * s;
}

void ubg_vop_mul(float *dst, const float *a, const float *b, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = a[k] * b[k];
}

void ubg_vop_adds(float *dst, const float *a, float s, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = s + a[k];
}

void ubg_vop_add(float *dst, const float *a, const float *b, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = a[k] + b[k];
}

void ubg_vop_axpby(float *dst, float alpha, const float *x, float beta, const float *y, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = alpha * x[k] + beta * y[k];
}

void ubg_vop_mac(float *acc, const float *a, const float *b, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) acc[k] += a[k] * b[k];
}

void ubg_vop_fmas(float *dst, const float *x, float s, const float *y, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = fmaf(s, x[k], y[k]);
}

void ubg_vop_copy(float *dst, const float *src, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = src[k];
}

void ubg_vop_fill(float *dst, float v, ubg_i64 n) {
  for (ubg_i64 k = 0; k < n; k++) dst[k] = v;
}

void ubg_vop_lanes_dot(float *acc, const float *a, const float *b, ubg_i64 n) { ubg_lanes_dot(acc, a, b, n); }
/* ubg_lanes_dot with each step fused: the lanes of the AttnRes sums */
void ubg_vop_lanes_fma(float *acc, const float *a, const float *b, ubg_i64 n) {
  ubg_i64 j = 0;
  for (; j + UBG_LANES <= n; j += UBG_LANES)
    for (int l = 0; l < UBG_LANES; l++) acc[l] = fmaf(a[j + l], b[j + l], acc[l]);
  for (int l = 0; j + l < n; l++) acc[l] = fmaf(a[j + l], b[j + l], acc[l]);
}

/* ubg_copy and ubg_zero of tile_calls.h, for tcc (which declares these
 * only when __TINYC__ is defined) */
void ubg_vop_copy_bytes(void *dst, const void *src, ubg_i64 n, int stream);
void ubg_vop_zero_bytes(void *dst, ubg_i64 n, int stream);
void ubg_vop_copy_bytes(void *dst, const void *src, ubg_i64 n, int stream) { ubg_move((ubg_u8 *)dst, (const ubg_u8 *)src, n, stream); }
void ubg_vop_zero_bytes(void *dst, ubg_i64 n, int stream) { ubg_move((ubg_u8 *)dst, 0, n, stream); }

const ubg_vop_symbol ubg_vop_symbols[] = {
    {"ubg_vop_load", (const void *)ubg_vop_load},   {"ubg_vop_store", (const void *)ubg_vop_store},
    {"ubg_vop_rnd", (const void *)ubg_vop_rnd},     {"ubg_vop_muls", (const void *)ubg_vop_muls},
    {"ubg_vop_mul", (const void *)ubg_vop_mul},     {"ubg_vop_adds", (const void *)ubg_vop_adds},
    {"ubg_vop_add", (const void *)ubg_vop_add},     {"ubg_vop_axpby", (const void *)ubg_vop_axpby},
    {"ubg_vop_mac", (const void *)ubg_vop_mac},     {"ubg_vop_fill", (const void *)ubg_vop_fill},
    {"ubg_vop_fmas", (const void *)ubg_vop_fmas},   {"ubg_vop_copy", (const void *)ubg_vop_copy},
    {"ubg_vop_lanes_dot", (const void *)ubg_vop_lanes_dot}, {"ubg_vop_lanes_fma", (const void *)ubg_vop_lanes_fma},
    {"ubg_vop_copy_bytes", (const void *)ubg_vop_copy_bytes},
    {"ubg_vop_zero_bytes", (const void *)ubg_vop_zero_bytes}, {0, 0},
};
