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
#include <sys/mman.h>
#include <unistd.h>

#include "../runtime/gemm_onednn.h"
#include "ref/flce_ref.h"
#include "test_util.h"

#define SKIP_WITHOUT_ONEDNN()                                                                            \
  do {                                                                                                   \
    if (rt_dnnl_missing()) cr_skip_test("%s: tested is only that gemm=onednn is refused", rt_dnnl_missing()); \
  } while (0)

/* |got - want| <= tol (max |want| + |want|) everywhere */
static void expect_near(const char *what, const void *got, int dt, const double *want, int64_t n, double tol,
                        const char *where) {
  double big = 0;
  for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(want[i]));
  for (int64_t i = 0; i < n; i++) {
    const double g = ref_load(got, i, dt);
    cr_assert(fabs(g - want[i]) <= tol * (big + fabs(want[i])), "%s: %s[%lld] = %.9g, reference %.9g (largest %g)",
              where, what, (long long)i, g, want[i], big);
  }
}

typedef struct {
  int dt;
  int64_t bt, h, v;
  bool options; /* bias, class weights, smoothing, z-loss, softcap */
  ubg_reduction red;
  const char *variant;
} flce_lib_case;

/* one call of k on a context of `threads` threads with k->variant forced,
 * which must run the library GEMMs `lib` ("onednn"); checked
 * against the reference (f32: the sums' error; f16, bf16: 2% of the
 * largest value, the gradient rounded to the dtype for the GEMMs); its dx
 * and dweight into *dx_out, *dw_out when given */
static void flce_lib_call(const flce_lib_case *k, const char *lib, int threads, void **dx_out, void **dw_out) {
  char where[200];
  snprintf(where, sizeof where, "%s bt=%lld H=%lld V=%lld%s %s, %s, %d threads", ug_dtype_name(k->dt),
           (long long)k->bt, (long long)k->h, (long long)k->v, k->options ? " with options" : "",
           k->red == UBG_REDUCE_NONE ? "none" : "mean", k->variant, threads);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, threads);
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", k->variant), UBG_OK, "%s: %s", k->variant, ubg_ctx_error(ctx));
  const int dt = k->dt;
  const int64_t bt = k->bt, h = k->h, v = k->v;
  const size_t es = ref_dtype_bytes(dt);
  void *x = tc_tensor(dt, bt * h, 0, 1, 21), *w = tc_tensor(dt, v * h, 0, 0.25, 22), *bias = tc_tensor(dt, v, 0, 0.5, 23);
  float *cw = tc_tensor(REF_F32, v, 1, 0.2, 24), *go = tc_tensor(REF_F32, bt, 1, 0.5, 25);
  int64_t *target = malloc((size_t)bt * sizeof *target);
  uint64_t s = 26;
  for (int64_t i = 0; i < bt; i++) target[i] = i % 7 == 3 ? -100 : (int64_t)(tc_next(&s) % (uint64_t)v);
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  o.reduction = k->red;
  if (k->red == UBG_REDUCE_NONE) o.grad_output = go;
  if (k->options) o.label_smoothing = 0.1f, o.lse_square_scale = 1e-3f, o.softcap = 3.0f, o.bias = bias, o.ce_weight = cw;
  const int64_t nl = k->red == UBG_REDUCE_NONE ? bt : 1;
  float *loss = malloc((size_t)nl * 4);
  void *dx = malloc((size_t)(bt * h) * es), *dw = malloc((size_t)(v * h) * es), *db = malloc((size_t)v * es);
  ubg_flce_out out = {loss, NULL, NULL, dx, dw, k->options ? db : NULL, NULL};
  cr_assert_eq(ubg_flce(ctx, (ubg_dtype)dt, bt, h, v, x, w, target, &o, &out), UBG_OK, "%s: %s", where,
               ubg_ctx_error(ctx));
  char ran[64];
  snprintf(ran, sizeof ran, ";%s;%s;", lib, lib);
  cr_assert(!strncmp(ubg_ctx_last_variant(ctx), lib, strlen(lib)) && strstr(ubg_ctx_last_variant(ctx), ran),
            "%s: ran %s", where, ubg_ctx_last_variant(ctx));
  double *rl = malloc((size_t)nl * sizeof *rl), *rdx = malloc((size_t)(bt * h) * sizeof *rdx),
         *rdw = malloc((size_t)(v * h) * sizeof *rdw), *rdb = malloc((size_t)v * sizeof *rdb);
  flce_ref_full(dt, bt, h, v, x, w, target, &o, rl, NULL, NULL, rdx, rdw, k->options ? rdb : NULL);
  const double tol = dt == REF_F32 ? 1e-5 : 2e-2;
  expect_near("loss", loss, REF_F32, rl, nl, 1e-4, where);
  expect_near("dx", dx, dt, rdx, bt * h, tol, where);
  expect_near("dweight", dw, dt, rdw, v * h, tol, where);
  if (k->options) expect_near("dbias", db, dt, rdb, v, tol, where);
  if (dx_out) *dx_out = dx, *dw_out = dw;
  else free(dx), free(dw);
  free(x), free(w), free(bias), free(cw), free(go), free(target), free(loss), free(db);
  free(rl), free(rdx), free(rdw), free(rdb);
  ubg_ctx_destroy(ctx);
}

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
  if (bytes >= 128) { /* given less than it needs, right before a page it may not touch: it takes its own */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), short_bytes = bytes / 2 / 64 * 64;
    const size_t span = (short_bytes + page - 1) / page * page;
    char *map = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(map != MAP_FAILED);
    cr_assert_eq(mprotect(map + span, page, PROT_NONE), 0);
    void *again = malloc(cbytes);
    memcpy(again, c0, cbytes);
    const rt_dnnl_gemm g2 = {m, n, k, a, b, a_t, b_t, (ubg_dtype)dt, again, (ubg_dtype)cdt, acc, NULL};
    cr_assert_eq(rt_dnnl_run(cache, &g2, threads, map + span - short_bytes, short_bytes, &why), 0, "%s: %s", where,
                 why ? why : "");
    cr_assert(!memcmp(again, c, cbytes), "%s: other bits with its own scratch", where);
    munmap(map, span + page);
    free(again);
  }
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
        /* a last chunk whose GEMMs need more of oneDNN's scratch than a whole one's (bf16 on AVX-512 here) */
        {dt, 97, 64, 300, false, UBG_REDUCE_MEAN, "chunk=64,gemm=onednn"},
        {dt, 49, 96, 300, true, UBG_REDUCE_NONE, "chunk=32,gemm=onednn"},
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

/* by default, with no tuning DB: oneDNN where it runs the dtype (the
 * spec's "prefer"); f16 without an f16 matmul keeps the generated GEMMs */
Test(flce_onednn, the_default_gemm) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
  const int64_t shapes[][2] = {{64, 300}, {2048, 40}}; /* hidden, vocab */
  for (int dt = REF_F32; dt <= REF_BF16; dt++)
    for (int i = 0; i < 2; i++) {
      const int64_t bt = 4, h = shapes[i][0], v = shapes[i][1];
      void *x = tc_tensor(dt, bt * h, 0, 1, 51), *w = tc_tensor(dt, v * h, 0, 0.25, 52);
      int64_t target[4] = {0, 1, 2, 3};
      float loss;
      ubg_flce_out out = {&loss, NULL, NULL, NULL, NULL, NULL, NULL};
      cr_assert_eq(ubg_flce(ctx, (ubg_dtype)dt, bt, h, v, x, w, target, NULL, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
      const bool library = rt_dnnl_runs((ubg_dtype)dt);
      const char *lv = ubg_ctx_last_variant(ctx), *want = "onednn";
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
