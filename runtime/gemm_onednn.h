/* A GEMM on oneDNN's matmul primitive, for composite ops that choose it
 * (ubg_flce's gemm=onednn, its default where the library is linked):
 *
 *   C[m, n] (+)= op(A)[m, k] op(B)[k, n] (+ bias[n] on every row)
 *
 * A and B are both f32 or both bf16 (f16: only where the linked oneDNN has
 * an f16 matmul for this CPU); the products are summed in f32 and C, f32
 * or of the inputs' type, is rounded once from that sum (with accumulate,
 * from the sum plus C's old value). oneDNN picks the kernel for the CPU
 * (AMX, AVX512-BF16, AVX-512, AVX2) and its own order of summation: for one
 * shape and thread count the bits are the same from call to call; another
 * thread count or shape may sum in another order.
 *
 * A primitive is made once per shape, types and thread count and kept in
 * the context's cache (made when the first call needs it, freed with the
 * context); calls of one context may run at once from several threads. */
#ifndef UBG_GEMM_ONEDNN_H
#define UBG_GEMM_ONEDNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/ubgen.h"

typedef struct {
  int64_t m, n, k;
  const void *a; /* A(m, k) at a[i * k + p], or a_t: a[p * m + i] */
  const void *b; /* B(k, n) at b[p * n + j], or b_t: b[j * k + p] */
  bool a_t, b_t;
  ubg_dtype ab;   /* the type of A and B */
  void *c;        /* C(m, n) at c[i * n + j] */
  ubg_dtype c_dt; /* f32, or ab */
  bool accumulate;
  const void *bias; /* [n] of type ab, or NULL */
} rt_dnnl_gemm;

typedef struct rt_dnnl_cache rt_dnnl_cache;

/* NULL when this library has oneDNN; else why not */
const char *rt_dnnl_missing(void);
/* whether the linked oneDNN has a matmul for inputs of dtype on this CPU */
bool rt_dnnl_runs(ubg_dtype dtype);

/* a context's cache of primitives: made empty, freed with what it holds */
rt_dnnl_cache *rt_dnnl_cache_new(void);
void rt_dnnl_cache_free(rt_dnnl_cache *cache);

/* the scratch bytes g needs on `threads` threads; sets *why (and returns
 * SIZE_MAX) when oneDNN cannot make the GEMM */
size_t rt_dnnl_scratch(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, const char **why);

/* runs g on `threads` threads with `scratch` (64-byte aligned, `bytes`
 * long; less than g needs: it takes its own); 0, or -1 and *why */
int rt_dnnl_run(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, void *scratch, size_t bytes,
                const char **why);

#endif
