/* A GEMM on Intel AMX tiles (AMX-BF16), for composite ops that choose it
 * (ubg_flce's gemm=amx):
 *
 *   C[m, n] (+)= sum_k A(m, k) B(k, n)
 *
 * A and B are bf16 (A may be f32, rounded to bf16 to nearest even as it is
 * packed); each product is exact and the tile instruction sums them in f32
 * in its own order, flushing subnormals: not the k-ordered FMA chain of the
 * generated GEMMs, so not their bits (the chooser says so). */
#ifndef UBG_GEMM_AMX_H
#define UBG_GEMM_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int64_t m, n, k;
  const void *a;  /* A(m, k) at a[m * lda + k] (a_kcontig) or a[k * lda + m] */
  int64_t lda;
  bool a_f32;     /* A is f32 (rounded to bf16 when packed), else bf16 */
  bool a_kcontig;
  const uint16_t *b; /* bf16 B(k, n) at b[n * ldb + k] (b_kcontig) or b[k * ldb + n] */
  int64_t ldb;
  bool b_kcontig;
  float *c;       /* C(m, n) at c[m * ldc + n] */
  int64_t ldc;
  bool accumulate; /* C += A B, else C = A B */
  uint16_t *c_bf16; /* instead of c: bf16 C(m, n) at c_bf16[m * ldc + n] := rnd(C + A B),
                       the product summed over all of k in f32 first */
} rt_amx_gemm_args;

/* this CPU has AMX-BF16 and the kernel lets the process use its tiles
 * (asked once, with arch_prctl) */
bool rt_amx_available(void);

/* the bytes of scratch rt_amx_gemm needs for g on `threads` threads */
size_t rt_amx_gemm_scratch(const rt_amx_gemm_args *g, int threads);

/* the GEMM on `threads` OpenMP threads, in `scratch` (64-byte aligned, of
 * rt_amx_gemm_scratch bytes); only after rt_amx_available() said yes */
void rt_amx_gemm(const rt_amx_gemm_args *g, int threads, void *scratch);

#endif
