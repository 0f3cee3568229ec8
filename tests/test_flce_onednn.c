/* ubg_flce's GEMMs on oneDNN (runtime/gemm_onednn.c; gemm=onednn, the
 * default where the library is linked): the GEMM alone in the layouts
 * ubg_flce uses against a double reference, then whole calls against the
 * FLCE reference, in f32 and bf16 (f16: where the linked oneDNN has an
 * f16 matmul for this CPU, else refused by name and replaced by the
 * generated GEMMs). oneDNN sums in its own order, and in bf16 ubg_flce
 * rounds the logits' gradient to bf16 for it (as Liger does), so the
 * check is a tolerance, not the generated GEMMs' bits. What is promised
 * about bits, and tested: one shape, dtype and thread count give the same
 * bits from call to call and from context to context. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/gemm_onednn.h"
#include "flce_library.h"

#define SKIP_WITHOUT_ONEDNN()                                                                            \
  do {                                                                                                   \
    if (rt_dnnl_missing()) cr_skip_test("%s: tested is only that gemm=onednn is refused", rt_dnnl_missing()); \
  } while (0)

/* ---- the GEMM alone: C (+)= op(A) op(B), the three layouts of a chunk */

static void gemm_case(int dt, int64_t m, int64_t n, int64_t k, bool a_t, bool b_t, bool acc, bool c_dt, int threads) {
  char where[160];
  snprintf(where, sizeof where, "%s m=%lld n=%lld k=%lld%s%s%s%s, %d threads", ug_dtype_name(dt), (long long)m,
           (long long)n, (long long)k, a_t ? " A^T" : "", b_t ? " B^T" : "", acc ? " C +=" : " C =",
           c_dt ? " C in the dtype" : "", threads);
  const int cdt = c_dt ? dt : REF_F32;
  void *a = tc_tensor(dt, m * k, 0, 1, 41 + (uint64_t)m), *b = tc_tensor(dt, k * n, 0, 1, 42 + (uint64_t)n);
  void *c = tc_tensor(cdt, m * n, 0, 1, 43);
  const size_t cbytes = (size_t)(m * n) * ref_dtype_bytes(cdt);
  void *c0 = malloc(cbytes);
  memcpy(c0, c, cbytes);
  rt_dnnl_cache *cache = rt_dnnl_cache_new();
  const rt_dnnl_gemm g = {m, n, k, a, b, a_t, b_t, (ubg_dtype)dt, c, (ubg_dtype)cdt, acc, NULL};
  const char *why = NULL;
  const size_t bytes = rt_dnnl_scratch(cache, &g, threads, &why);
  cr_assert(bytes != SIZE_MAX, "%s: %s", where, why);
  void *scratch = bytes ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
  cr_assert_eq(rt_dnnl_run(cache, &g, threads, scratch, bytes, &why), 0, "%s: %s", where, why ? why : "");
  const double u = dt == REF_F32 && cdt == REF_F32 ? 0x1p-24 : 0x1p-8; /* the result's rounding */
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double sum = 0, mag = 0;
      for (int64_t q = 0; q < k; q++) {
        const double p = ref_load(a, a_t ? q * m + i : i * k + q, dt) * ref_load(b, b_t ? j * k + q : q * n + j, dt);
        sum += p, mag += fabs(p);
      }
      const double old = acc ? ref_load(c0, i * n + j, cdt) : 0, want = old + sum;
      const double got = ref_load(c, i * n + j, cdt);
      /* the result's rounding, and the f32 sums' error */
      cr_assert(fabs(got - want) <= u * fabs(want) + 1e-6 * (mag + fabs(old)) + 1e-30,
                "%s: C[%lld][%lld] = %.9g, reference %.9g", where, (long long)i, (long long)j, got, want);
    }
  free(scratch), free(a), free(b), free(c), free(c0);
  rt_dnnl_cache_free(cache);
}

Test(flce_onednn, gemm_in_every_layout) {
  SKIP_WITHOUT_ONEDNN();
  const int64_t shapes[][3] = {{1, 1, 1}, {16, 16, 32}, {33, 17, 65}, {70, 130, 257}, {5, 300, 37}, {100, 40, 3}};
  for (int dt = REF_F32; dt <= REF_BF16; dt++) {
    if (!rt_dnnl_runs((ubg_dtype)dt)) continue;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
      const int threads = 1 + (int)(i & 1);
      gemm_case(dt, m, n, k, false, true, false, false, threads); /* the logits: x weight^T */
      gemm_case(dt, m, n, k, false, false, false, true, threads); /* dx: dlogits weight, in the dtype */
      gemm_case(dt, m, n, k, true, false, true, false, threads);  /* dW += dlogits^T x, in f32 */
      gemm_case(dt, m, n, k, true, false, true, true, 3 - threads); /* ... in the dtype */
    }
  }
}

/* ---- whole calls */

Test(flce_onednn, matches_the_reference) {
  SKIP_WITHOUT_ONEDNN();
  for (int dt = REF_F32; dt <= REF_BF16; dt += REF_BF16 - REF_F32) {
    if (!rt_dnnl_runs((ubg_dtype)dt)) continue;
    const flce_lib_case cases[] = {
        {dt, 37, 64, 300, true, UBG_REDUCE_MEAN, "chunk=16,gemm=onednn"},   /* three chunks, the last short */
        {dt, 70, 130, 257, false, UBG_REDUCE_MEAN, "chunk=64,gemm=onednn"}, /* odd sizes */
        {dt, 1, 1, 1, false, UBG_REDUCE_MEAN, "chunk=1,gemm=onednn"},
        {dt, 33, 40, 1000, true, UBG_REDUCE_NONE, "chunk=8,gemm=onednn"},   /* per-row upstream gradients */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) flce_lib_call(&cases[i], "onednn", 2, NULL, NULL);
  }
}

/* the promise: one shape, dtype and thread count, the same bits, call
 * after call (primitives kept in the context) and context after context */
Test(flce_onednn, same_bits_for_the_same_thread_count) {
  SKIP_WITHOUT_ONEDNN();
  for (int dt = REF_F32; dt <= REF_BF16; dt += REF_BF16 - REF_F32) {
    if (!rt_dnnl_runs((ubg_dtype)dt)) continue;
    const flce_lib_case k = {dt, 70, 130, 257, true, UBG_REDUCE_MEAN, "chunk=32,gemm=onednn"};
    const size_t es = ref_dtype_bytes(dt);
    for (int threads = 1; threads <= 2; threads++) {
      void *dx[3], *dw[3];
      for (int r = 0; r < 3; r++) flce_lib_call(&k, "onednn", threads, &dx[r], &dw[r]);
      for (int r = 1; r < 3; r++) {
        cr_assert(!memcmp(dx[0], dx[r], (size_t)(k.bt * k.h) * es), "%s, %d threads: dx differs between calls",
                  ug_dtype_name(dt), threads);
        cr_assert(!memcmp(dw[0], dw[r], (size_t)(k.v * k.h) * es), "%s, %d threads: dweight differs between calls",
                  ug_dtype_name(dt), threads);
      }
      for (int r = 0; r < 3; r++) free(dx[r]), free(dw[r]);
    }
  }
}

/* by default, with no tuning DB: oneDNN where it runs the dtype, the AMX
 * tiles for bf16 from H = 2048 on a CPU that has them (the spec's
 * "prefer"); f16 without an f16 matmul keeps the generated GEMMs */
Test(flce_onednn, the_default_gemm) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
  const int64_t shapes[][2] = {{64, 300}, {2048, 40}};
  for (int dt = REF_F32; dt <= REF_BF16; dt++)
    for (int i = 0; i < 2; i++) {
      const int64_t bt = 4, h = shapes[i][0], v = shapes[i][1];
      void *x = tc_tensor(dt, bt * h, 0, 1, 51), *w = tc_tensor(dt, v * h, 0, 0.25, 52);
      int64_t target[4] = {0, 1, 2, 3};
      float loss;
      ubg_flce_out out = {&loss, NULL, NULL, NULL, NULL, NULL, NULL};
      cr_assert_eq(ubg_flce(ctx, (ubg_dtype)dt, bt, h, v, x, w, target, NULL, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
      const char *want = dt == REF_BF16 && h >= 2048 && !rt_dnnl_missing() ? "amx" : "onednn";
      const bool library = dt != REF_F16 || rt_dnnl_runs(UBG_F16);
      const char *lv = ubg_ctx_last_variant(ctx);
      if (!strcmp(want, "amx") && strncmp(lv, "amx;", 4)) want = "onednn"; /* a CPU without AMX-BF16 */
      if (rt_dnnl_missing() || !library)
        cr_assert(!strstr(lv, "onednn"), "%s H=%lld: ran %s", ug_dtype_name(dt), (long long)h, lv);
      else
        cr_assert(!strncmp(lv, want, strlen(want)) && strstr(lv, "(spec rule)"), "%s H=%lld: ran %s, want %s",
                  ug_dtype_name(dt), (long long)h, lv, want);
      free(x), free(w);
    }
  ubg_ctx_destroy(ctx);
}

/* a build without oneDNN, or a dtype it has no matmul for, refuses gemm=onednn by name */
Test(flce_onednn, refused_where_it_cannot_run) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
  const ubg_status s = ubg_set_variant(ctx, "flce", "chunk", "chunk=16,gemm=onednn");
  if (rt_dnnl_missing()) {
    cr_assert_eq(s, UBG_ENOTFOUND);
    cr_assert(strstr(ubg_ctx_error(ctx), "gemm=onednn, but this library was built without oneDNN"), "%s",
              ubg_ctx_error(ctx));
  } else {
    cr_assert_eq(s, UBG_OK, "%s", ubg_ctx_error(ctx));
  }
  ubg_ctx_destroy(ctx);
}
