/* ubg_fused_moe_forward, ubg_fused_moe_backward: a mixture of experts'
 * expert layers with SwiGLU (Liger's LigerFusedMoEFunction), the typed
 * entries of the fused_moe spec's composites "forward" and "backward",
 * which declare their arguments (top_k_index's range among them), their
 * scratch and the passes they run (composite_run.c runs them):
 *
 *   x [tokens, hidden], gate_up_proj [experts, 2 inter, hidden], down_proj [experts, hidden, inter]
 *   top_k_index, top_k_weights [tokens, top_k]; per chunk of tokens:
 *   forward:  route (pairs sorted by expert) -> h = x W_gu[e]^T -> act = silu(h_g) h_u
 *             -> y = act W_d[e]^T -> out = sum over k of w y
 *   backward: route -> da = dout W_d[e] -> dw = da . act, dh -> dW_d[e] += dout^T w act,
 *             dW_gu[e] += dh^T x -> dx = sum over k of dh W_gu[e]
 *
 * Here the C arguments become the spec's named ones; below them, the
 * routines moe_mm.onednn and moe_dw.onednn, which run the grouped GEMMs as
 * one oneDNN matmul per expert where the composites' axis gemm picks them. */
#include <stdio.h>
#include <string.h>

#include "../templates/prelude.h"
#include "gemm_onednn.h"
#include "internal.h"
#include "routine.h"

static const rt_composite fused_moe_forward = {"fused_moe", "forward"}, fused_moe_backward = {"fused_moe", "backward"};

ubg_status ubg_fused_moe_forward(ubg_ctx *ctx, ubg_dtype dtype, int64_t tokens, int64_t hidden, int64_t inter,
                                 int64_t experts, int64_t top_k, const void *x, const void *gate_up_proj,
                                 const void *down_proj, const int32_t *top_k_index, const void *top_k_weights,
                                 void *out, float *pre_act) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_moe_forward: ctx is NULL");
  const ubg_arg a[] = {
      T_ARG("x", x),
      T_ARG("gate_up_proj", gate_up_proj),
      T_ARG("down_proj", down_proj),
      T_ARG("top_k_index", top_k_index),
      T_ARG("top_k_weights", top_k_weights),
      T_ARG("out", out),
      T_ARG("pre_act", pre_act),
      I_ARG("tokens", tokens),
      I_ARG("hidden", hidden),
      I_ARG("inter", inter),
      I_ARG("experts", experts),
      I_ARG("top_k", top_k),
  };
  return rt_composite_run(ctx, &fused_moe_forward, "ubg_fused_moe_forward", dtype, a, sizeof a / sizeof a[0], NULL);
}

ubg_status ubg_fused_moe_backward(ubg_ctx *ctx, ubg_dtype dtype, int64_t tokens, int64_t hidden, int64_t inter,
                                  int64_t experts, int64_t top_k, const void *x, const void *gate_up_proj,
                                  const void *down_proj, const int32_t *top_k_index, const void *top_k_weights,
                                  const float *pre_act, const void *dout, void *dx, void *dgate_up_proj,
                                  void *ddown_proj, void *dtop_k_weights) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_moe_backward: ctx is NULL");
  const ubg_arg a[] = {
      T_ARG("x", x),
      T_ARG("gate_up_proj", gate_up_proj),
      T_ARG("down_proj", down_proj),
      T_ARG("top_k_index", top_k_index),
      T_ARG("top_k_weights", top_k_weights),
      T_ARG("pre_act", pre_act),
      T_ARG("dout", dout),
      T_ARG("dx", dx),
      T_ARG("dgate_up_proj", dgate_up_proj),
      T_ARG("ddown_proj", ddown_proj),
      T_ARG("dtop_k_weights", dtop_k_weights),
      I_ARG("tokens", tokens),
      I_ARG("hidden", hidden),
      I_ARG("inter", inter),
      I_ARG("experts", experts),
      I_ARG("top_k", top_k),
  };
  return rt_composite_run(ctx, &fused_moe_backward, "ubg_fused_moe_backward", dtype, a, sizeof a / sizeof a[0], NULL);
}

/* moe_mm.onednn and moe_dw.onednn: the passes mm and dw (their arguments,
 * templates/fused_moe_mm.c.tmpl, fused_moe_dw.c.tmpl) as one oneDNN matmul
 * per expert hit, one expert after the other. An expert's rows, gathered
 * from their tokens' or rounded from f32 to the dtype (the library
 * multiplies two tensors of one type), lie contiguous in scratch, padded
 * with zero rows to a multiple of PAD: the library makes a primitive per
 * shape, and padding keeps the shapes of a call few (a zero row adds
 * nothing to dw's sums, and mm's padded rows of C are dropped). The scratch
 * holds one expert's rows: the most an expert can have. */
enum { PAD = 32 };

typedef struct {
  int64_t pairs, experts, top_k, rows_cap; /* rows_cap: one expert's padded rows, at most */
  const int64_t *offsets, *order;
} moe_rows;

static int64_t padded(int64_t rows) { return (rows + PAD - 1) / PAD * PAD; }
static size_t lines(size_t n) { return (n + 63) / 64 * 64; }

static moe_rows moe_rows_of(const rt_routine_call *c) {
  const int64_t top_k = rt_routine_i(c, "top_k", 1), pairs = rt_routine_i(c, "tokens", 0) * top_k;
  return (moe_rows){pairs, rt_routine_i(c, "experts", 1), top_k, padded(pairs), rt_routine_p(c, "offsets"),
                    rt_routine_p(c, "order")};
}

/* dst [padded(rows), cols] (dtype) := rows r0.. of the experts' order, each
 * src_tok's row order[r] / top_k (the dtype) or src_rows's row r (f32),
 * then zero rows */
static void gather(void *dst, const moe_rows *r, int64_t r0, int64_t rows, const void *src_tok, const float *src_rows,
                   int64_t cols, ubg_dtype dt, int threads) {
  const size_t row = (size_t)cols * ug_dtype_bytes((int)dt);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < padded(rows); i++) {
    char *d = (char *)dst + (size_t)i * row;
    if (i >= rows) memset(d, 0, row);
    else if (src_tok) memcpy(d, (const char *)src_tok + (size_t)(r->order[r0 + i] / r->top_k) * row, row);
    else rt_convert(d, dt, src_rows + (r0 + i) * cols, UBG_F32, cols, 1);
  }
}

static ubg_status moe_fail(rt_routine_call *c, const char *routine, const rt_dnnl_gemm *g, const char *why) {
  return rt_fail(c->ctx, strcmp(why, "out of memory") ? UBG_EINVAL : UBG_ENOMEM,
                 "%s: %s: m = %lld, n = %lld, k = %lld: %s", c->what, routine, (long long)g->m, (long long)g->n,
                 (long long)g->k, why);
}

/* the routing both take */
static ubg_status moe_check(const rt_routine_call *c, const char *rt, const moe_rows *r) {
  ubg_status s;
  if ((s = rt_routine_need(c, rt, "offsets", UG_ELEM_I64, r->experts + 1, "experts + 1", true)) ||
      (s = rt_routine_need(c, rt, "order", UG_ELEM_I64, r->pairs, "tokens x top_k", true)))
    return s;
  return UBG_OK;
}

/* the library's scratch for an expert of the mean rows (the rows: m, or
 * with rows_are_k k); one that needs more takes its own */
static size_t lib_scratch(const rt_routine_call *c, rt_dnnl_gemm g, const moe_rows *r, bool rows_are_k) {
  const int64_t mean = padded(r->pairs / r->experts > 0 ? r->pairs / r->experts : 1);
  if (rows_are_k) g.k = mean;
  else g.m = mean;
  const char *why;
  const size_t b = rt_dnnl_scratch(c->ctx->dnnl, &g, c->threads, &why);
  return b == SIZE_MAX ? 0 : lines(b);
}

static bool mm_writes(const rt_routine_call *c, const char *name) {
  (void)c;
  return !strcmp(name, "c");
}

static ubg_status mm_check(const rt_routine_call *c, bool call) {
  (void)call;
  const moe_rows r = moe_rows_of(c);
  const int64_t n = rt_routine_i(c, "n", 0), k = rt_routine_i(c, "kdim", 0), tokens = rt_routine_i(c, "tokens", 0);
  const char *rt = "moe_mm";
  ubg_status s;
  if (!rt_routine_p(c, "a_tok") == !rt_routine_p(c, "a_rows"))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine moe_mm: one of a_tok and a_rows is bound", c->what);
  if ((s = moe_check(c, rt, &r)) || (s = rt_routine_need(c, rt, "a_tok", UG_ELEM_T, tokens * k, "tokens x kdim", false)) ||
      (s = rt_routine_need(c, rt, "a_rows", UG_ELEM_F32, r.pairs * k, "tokens x top_k x kdim", false)) ||
      (s = rt_routine_need(c, rt, "w", UG_ELEM_T, r.experts * n * k, "experts x n x kdim", true)) ||
      (s = rt_routine_need(c, rt, "c", UG_ELEM_F32, r.pairs * n, "tokens x top_k x n", true)))
    return s;
  return UBG_OK;
}

/* C [m, n] (f32) := A [m, kdim] W[e]^T (w_t) or A W[e] */
static rt_dnnl_gemm mm_gemm(const rt_routine_call *c, int64_t m, const void *a, int64_t e, float *out) {
  const int64_t n = rt_routine_i(c, "n", 0), k = rt_routine_i(c, "kdim", 0);
  const char *w = rt_routine_p(c, "w");
  return (rt_dnnl_gemm){m, n, k, a, w + (size_t)(e * n * k) * ug_dtype_bytes((int)c->dtype), false,
                        rt_routine_i(c, "w_t", 0) != 0, c->dtype, out, UBG_F32, false, NULL};
}

/* the scratch's parts: A [rows_cap, kdim] (dtype), C [rows_cap, n] (f32), then the library's */
static void mm_parts(const rt_routine_call *c, const moe_rows *r, size_t *a, size_t *cc) {
  *a = lines((size_t)(r->rows_cap * rt_routine_i(c, "kdim", 0)) * ug_dtype_bytes((int)c->dtype));
  *cc = lines((size_t)(r->rows_cap * rt_routine_i(c, "n", 0)) * 4);
}

static size_t mm_scratch(const rt_routine_call *c) {
  const moe_rows r = moe_rows_of(c);
  size_t a, cc;
  mm_parts(c, &r, &a, &cc);
  return a + cc + (r.pairs ? lib_scratch(c, mm_gemm(c, 0, NULL, 0, NULL), &r, false) : 0);
}

static ubg_status mm_run(rt_routine_call *c) {
  snprintf(c->variant, sizeof c->variant, "onednn");
  const moe_rows r = moe_rows_of(c);
  const int64_t n = rt_routine_i(c, "n", 0), k = rt_routine_i(c, "kdim", 0);
  const bool scatter = rt_routine_i(c, "c_scatter", 0) != 0;
  float *out = rt_routine_p(c, "c");
  size_t a_bytes, c_bytes;
  mm_parts(c, &r, &a_bytes, &c_bytes);
  char *a = c->scratch;
  float *cs = (float *)(a + a_bytes);
  const size_t lib = c->scratch_bytes > a_bytes + c_bytes ? c->scratch_bytes - a_bytes - c_bytes : 0;
  for (int64_t e = 0; e < r.experts; e++) {
    const int64_t r0 = r.offsets[e], rows = r.offsets[e + 1] - r0;
    if (rows == 0) continue;
    gather(a, &r, r0, rows, rt_routine_p(c, "a_tok"), rt_routine_p(c, "a_rows"), k, c->dtype, c->threads);
    const rt_dnnl_gemm g = mm_gemm(c, padded(rows), a, e, cs);
    const char *why;
    if (rt_dnnl_run(c->ctx->dnnl, &g, c->threads, (char *)cs + c_bytes, lib, &why) < 0)
      return moe_fail(c, "moe_mm.onednn", &g, why);
    /* C's row i to row r0 + i, or to its slot order[r0 + i] */
#pragma omp parallel for num_threads(c->threads) schedule(static)
    for (int64_t i = 0; i < rows; i++)
      memcpy(out + (scatter ? r.order[r0 + i] : r0 + i) * n, cs + i * n, (size_t)n * 4);
  }
  return UBG_OK;
}

const rt_routine rt_routine_moe_mm_onednn = {.name = "moe_mm.onednn",
                                             .missing = rt_dnnl_missing,
                                             .runs = rt_dnnl_runs,
                                             .writes = mm_writes,
                                             .check = mm_check,
                                             .scratch = mm_scratch,
                                             .run = mm_run};

static bool dw_writes(const rt_routine_call *c, const char *name) {
  (void)c;
  return !strcmp(name, "dw");
}

static ubg_status dw_check(const rt_routine_call *c, bool call) {
  (void)call;
  const moe_rows r = moe_rows_of(c);
  const int64_t m = rt_routine_i(c, "m", 0), n = rt_routine_i(c, "n", 0), tokens = rt_routine_i(c, "tokens", 0);
  const char *rt = "moe_dw";
  ubg_status s;
  if ((s = moe_check(c, rt, &r)) ||
      (s = rt_routine_need(c, rt, "a_rows", UG_ELEM_F32, r.pairs * m, "tokens x top_k x m", true)) ||
      (s = rt_routine_need(c, rt, "b_tok", UG_ELEM_T, tokens * n, "tokens x n", true)) ||
      (s = rt_routine_need(c, rt, "dw", UG_ELEM_T, r.experts * m * n, "experts x m x n", true)))
    return s;
  return UBG_OK;
}

/* dw[e] [m, n] += A^T B, or with c_t its [n, m] += B^T A, over the expert's k rows of A [k, m] and B [k, n] */
static rt_dnnl_gemm dw_gemm(const rt_routine_call *c, int64_t k, const void *a, const void *b, int64_t e) {
  const int64_t m = rt_routine_i(c, "m", 0), n = rt_routine_i(c, "n", 0);
  const bool t = rt_routine_i(c, "c_t", 0) != 0;
  char *dw = rt_routine_p(c, "dw");
  return (rt_dnnl_gemm){t ? n : m, t ? m : n, k, t ? b : a, t ? a : b, true, false, c->dtype,
                        dw + (size_t)(e * m * n) * ug_dtype_bytes((int)c->dtype), c->dtype, true, NULL};
}

/* the scratch's parts: A [rows_cap, m] and B [rows_cap, n] (dtype), then the library's */
static void dw_parts(const rt_routine_call *c, const moe_rows *r, size_t *a, size_t *b) {
  const size_t es = ug_dtype_bytes((int)c->dtype);
  *a = lines((size_t)(r->rows_cap * rt_routine_i(c, "m", 0)) * es);
  *b = lines((size_t)(r->rows_cap * rt_routine_i(c, "n", 0)) * es);
}

static size_t dw_scratch(const rt_routine_call *c) {
  const moe_rows r = moe_rows_of(c);
  size_t a, b;
  dw_parts(c, &r, &a, &b);
  return a + b + (r.pairs ? lib_scratch(c, dw_gemm(c, 0, NULL, NULL, 0), &r, true) : 0);
}

static ubg_status dw_run(rt_routine_call *c) {
  snprintf(c->variant, sizeof c->variant, "onednn");
  const moe_rows r = moe_rows_of(c);
  const int64_t m = rt_routine_i(c, "m", 0), n = rt_routine_i(c, "n", 0);
  size_t a_bytes, b_bytes;
  dw_parts(c, &r, &a_bytes, &b_bytes);
  char *a = c->scratch, *b = a + a_bytes;
  const size_t lib = c->scratch_bytes > a_bytes + b_bytes ? c->scratch_bytes - a_bytes - b_bytes : 0;
  for (int64_t e = 0; e < r.experts; e++) {
    const int64_t r0 = r.offsets[e], rows = r.offsets[e + 1] - r0;
    if (rows == 0) continue;
    gather(a, &r, r0, rows, NULL, rt_routine_p(c, "a_rows"), m, c->dtype, c->threads);
    gather(b, &r, r0, rows, rt_routine_p(c, "b_tok"), NULL, n, c->dtype, c->threads);
    const rt_dnnl_gemm g = dw_gemm(c, padded(rows), a, b, e);
    const char *why;
    if (rt_dnnl_run(c->ctx->dnnl, &g, c->threads, b + b_bytes, lib, &why) < 0)
      return moe_fail(c, "moe_dw.onednn", &g, why);
  }
  return UBG_OK;
}

const rt_routine rt_routine_moe_dw_onednn = {.name = "moe_dw.onednn",
                                             .missing = rt_dnnl_missing,
                                             .runs = rt_dnnl_runs,
                                             .writes = dw_writes,
                                             .check = dw_check,
                                             .scratch = dw_scratch,
                                             .run = dw_run};
