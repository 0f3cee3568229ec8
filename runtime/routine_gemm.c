/* gemm.onednn: a GEMM with its epilogues on oneDNN's matmul, for a
 * composite step whose named axis picks it instead of a generated pass.
 *
 *   c [m, n] (+)= op(a) [m, k] op(b) [k, n]   (beta = 1: +=)
 *     op(a) = a [m, k], or with a_t = 1 the transpose of a [k, m]
 *     op(b) = b [k, n], or with b_t = 1 the transpose of b [n, k]
 *   c_sum [m, n] (dtype) := rnd(c_sum + op(a) op(b))  instead of c
 *   c += bias [n] on every row, after the product
 *   colsum [m] (f32) += sum over k of op(a); colsum_sum [m] (dtype) := rnd(colsum_sum + that sum)
 *     (of op(sums_of) instead, an f32 tensor laid out as a, where it is bound:
 *     a's f32 values where a is their rounding)
 *
 * c is f32, or of the call's dtype (the product summed in f32, rounded once);
 * a is f32 or the dtype, b the dtype. oneDNN runs f32 and bf16 (and f16
 * where the linked library can: runtime/gemm_onednn.h). m = 0 or k = 0
 * writes nothing. */
#include <stdio.h>
#include <string.h>

#include "../templates/prelude.h"
#include "gemm_onednn.h"
#include "routine.h"
#include "../gen/ckd.h"

typedef struct {
  int64_t m, n, k;
  const void *a, *b;
  bool a_t, b_t, beta, a_f32;
  void *c, *c_sum, *colsum_sum;
  float *colsum;
  const void *bias, *sums_of;
  bool c_in_dtype; /* c is of the call's dtype, not f32 */
} gemm;

static gemm bound(const rt_routine_call *c) {
  gemm g = {rt_routine_i(c, "m", 0), rt_routine_i(c, "n", 0), rt_routine_i(c, "k", 0), rt_routine_p(c, "a"),
            rt_routine_p(c, "b"), rt_routine_i(c, "a_t", 0) != 0, rt_routine_i(c, "b_t", 0) != 0,
            rt_routine_i(c, "beta", 0) != 0, false, rt_routine_p(c, "c"), rt_routine_p(c, "c_sum"),
            rt_routine_p(c, "colsum_sum"), rt_routine_p(c, "colsum"), rt_routine_p(c, "bias"), rt_routine_p(c, "sums_of"),
            false};
  g.a_f32 = c->dtype == UBG_F32 || rt_routine_elem(c, "a") == UG_ELEM_F32;
  g.c_in_dtype = c->dtype != UBG_F32 && rt_routine_elem(c, "c") == UG_ELEM_T;
  return g;
}

static bool gemm_writes(const rt_routine_call *c, const char *name) {
  static const char *const outputs[] = {"c", "c_sum", "colsum", "colsum_sum", NULL};
  return rt_routine_named(name, outputs);
}

/* every operand holds its shape from where it is bound, in a type the GEMM takes */
static ubg_status gemm_check(const rt_routine_call *c, bool call) {
  (void)call;
  const gemm g = bound(c);
  int64_t mk, kn, mn;
  if (g.m < 0 || g.n < 0 || g.k < 0 || ug_ckd_mul(&mk, g.m, g.k) || ug_ckd_mul(&kn, g.k, g.n) ||
      ug_ckd_mul(&mn, g.m, g.n))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine gemm: m = %lld, n = %lld, k = %lld", c->what, (long long)g.m,
                   (long long)g.n, (long long)g.k);
  const bool product = mk > 0; /* m = 0 or k = 0 writes nothing */
  const char *r = "gemm";
  ubg_status s;
  if ((s = rt_routine_need(c, r, "a", RT_F32_OR_T, mk, "m x k", true)) ||
      (s = rt_routine_need(c, r, "b", UG_ELEM_T, product ? kn : 0, "k x n", true)) ||
      (s = rt_routine_need(c, r, "c", RT_F32_OR_T, product ? mn : 0, "m x n", !g.c_sum)) ||
      (s = rt_routine_need(c, r, "c_sum", UG_ELEM_T, mn, "m x n", false)) ||
      (s = rt_routine_need(c, r, "bias", UG_ELEM_T, g.n, "n", false)) ||
      (s = rt_routine_need(c, r, "colsum", UG_ELEM_F32, g.m, "m", false)) ||
      (s = rt_routine_need(c, r, "colsum_sum", UG_ELEM_T, g.m, "m", false)) ||
      (s = rt_routine_need(c, r, "sums_of", UG_ELEM_F32, mk, "m x k", false)))
    return s;
  return UBG_OK;
}

static float load(const void *p, int64_t i, ubg_dtype dt) {
  return dt == UBG_F32 ? ubg_ld_f32(p, i) : dt == UBG_F16 ? ubg_ld_f16(p, i) : ubg_ld_bf16(p, i);
}

/* dst [n] := rnd(dst + src), in the dtype */
static void add_into(void *dst, const float *src, int64_t n, ubg_dtype dt, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float v = load(dst, i, dt) + src[i];
    if (dt == UBG_F32) ((float *)dst)[i] = v;
    else if (dt == UBG_F16) ubg_st_f16(dst, i, v);
    else ubg_st_bf16(dst, i, v);
  }
}

/* sums [m] += sum over k of op(sums_of), else of op(a) (f32, or of the dtype dt), in k order */
static void column_sums(const gemm *g, float *sums, ubg_dtype dt) {
  const void *a = g->sums_of ? g->sums_of : g->a;
  const ubg_dtype a_dt = g->sums_of || g->a_f32 ? UBG_F32 : dt;
  if (g->a_t) {
    for (int64_t kk = 0; kk < g->k; kk++)
      for (int64_t r = 0; r < g->m; r++) sums[r] += load(a, kk * g->m + r, a_dt);
  } else {
    for (int64_t r = 0; r < g->m; r++)
      for (int64_t kk = 0; kk < g->k; kk++) sums[r] += load(a, r * g->k + kk, a_dt);
  }
}

/* colsum, or colsum_sum through sums [m] of scratch */
static void epilogue_sums(const gemm *g, float *sums, ubg_dtype dt, int threads) {
  if (g->colsum) column_sums(g, g->colsum, dt);
  if (!g->colsum_sum) return;
  memset(sums, 0, (size_t)g->m * 4);
  column_sums(g, sums, dt);
  add_into(g->colsum_sum, sums, g->m, dt, threads);
}

/* n bytes in whole 64-byte lines */
static size_t lines(size_t n) { return (n + 63) / 64 * 64; }

/* the library's GEMM into c (f32 or the dtype) or c_sum; a_lo: a in the
 * dtype where a is f32 and the call's dtype is not */
static rt_dnnl_gemm onednn_args(const gemm *g, ubg_dtype dt, const void *a_lo, bool to_sum) {
  return (rt_dnnl_gemm){g->m,   g->n, g->k, a_lo ? a_lo : g->a, g->b, g->a_t, g->b_t, dt,
                        to_sum ? g->c_sum : g->c,
                        to_sum || g->c_in_dtype ? dt : UBG_F32,
                        to_sum || g->beta, to_sum ? NULL : g->bias};
}

/* the step's scratch: a rounded to the dtype, the sums, then the library's (the rest of the block) */
static void onednn_layout(const rt_routine_call *c, const gemm *g, size_t *a_lo, size_t *sums) {
  const size_t elem = c->dtype == UBG_F32 ? 4 : 2;
  *a_lo = g->a_f32 && c->dtype != UBG_F32 ? lines((size_t)(g->m * g->k) * elem) : 0;
  *sums = g->colsum_sum ? lines((size_t)g->m * 4) : 0;
}

static size_t onednn_scratch(const rt_routine_call *c) {
  const gemm g = bound(c);
  size_t a_lo, sums, lib = 0;
  onednn_layout(c, &g, &a_lo, &sums);
  for (int sum = 0; sum < 2; sum++) {
    if (!(sum ? g.c_sum : g.c) || g.m == 0 || g.k == 0) continue;
    const rt_dnnl_gemm d = onednn_args(&g, c->dtype, NULL, sum);
    const char *why;
    const size_t b = rt_dnnl_scratch(c->ctx->dnnl, &d, c->threads, &why);
    if (b != SIZE_MAX && lines(b) > lib) lib = lines(b); /* a GEMM it cannot make fails when it runs */
  }
  return a_lo + sums + lib;
}

static ubg_status onednn_run(rt_routine_call *c) {
  snprintf(c->variant, sizeof c->variant, "onednn");
  const gemm g = bound(c);
  if (g.m == 0 || g.k == 0) return UBG_OK;
  const int threads = c->threads;
  size_t a_lo_bytes, sums_bytes;
  onednn_layout(c, &g, &a_lo_bytes, &sums_bytes);
  char *s = c->scratch;
  /* the library's part: what is left of the block; at a chunk of other rows
   * than the whole one's it may need more, and rt_dnnl_run then takes its own */
  const size_t lib = c->scratch_bytes > a_lo_bytes + sums_bytes ? c->scratch_bytes - a_lo_bytes - sums_bytes : 0;
  const char *why;
  void *a_lo = a_lo_bytes ? s : NULL;
  if (a_lo && (g.c || g.c_sum)) rt_convert(a_lo, c->dtype, g.a, UBG_F32, g.m * g.k, threads);
  for (int sum = 0; sum < 2; sum++) {
    if (!(sum ? g.c_sum : g.c)) continue;
    const rt_dnnl_gemm d = onednn_args(&g, c->dtype, a_lo, sum);
    if (rt_dnnl_run(c->ctx->dnnl, &d, threads, s + a_lo_bytes + sums_bytes, lib, &why) < 0)
      return rt_fail(c->ctx, strcmp(why, "out of memory") ? UBG_EINVAL : UBG_ENOMEM,
                     "%s: gemm.onednn: m = %lld, n = %lld, k = %lld: %s", c->what, (long long)g.m, (long long)g.n,
                     (long long)g.k, why);
  }
  epilogue_sums(&g, (float *)(s + a_lo_bytes), c->dtype, threads);
  return UBG_OK;
}

const rt_routine rt_routine_gemm_onednn = {.name = "gemm.onednn",
                                 .missing = rt_dnnl_missing,
                                 .writes = gemm_writes,
                                 .check = gemm_check,
                                 .runs = rt_dnnl_runs,
                                 .scratch = onednn_scratch,
                                 .run = onednn_run};
