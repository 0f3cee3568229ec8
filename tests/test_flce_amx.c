/* ubg_flce's GEMMs on AMX tiles (runtime/gemm_amx.c; gemm=amx, bf16 only):
 * the tile GEMM itself in every operand layout against a double
 * reference, then whole calls against the FLCE reference. AMX sums in its
 * own order and ubg_flce rounds the logits' gradient to bf16 for it, so the
 * check is a tolerance (2% of the largest value, as bf16 allows), not the
 * generated GEMMs' bits. On a CPU without AMX-BF16 the choice is refused
 * by name, and that is what is tested there. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/gemm_amx.h"
#include "flce_library.h"

#define SKIP_WITHOUT_AMX()                                                                                    \
  do {                                                                                                        \
    if (!rt_amx_available())                                                                                  \
      cr_skip_test("this CPU has no AMX-BF16 tiles (or the kernel does not grant them): tested is only that " \
                   "gemm=amx is refused (flce_amx.refused_without_amx)");                                     \
  } while (0)

/* ---- the tile GEMM alone: C (+)= A B for A bf16 or f32, either layout of
 * A and of B, sizes that are and are not whole tiles */

static void gemm_case(int64_t m, int64_t n, int64_t k, bool a_f32, bool a_kcontig, bool b_kcontig, bool acc,
                      int threads) {
  char where[160];
  snprintf(where, sizeof where, "m=%lld n=%lld k=%lld A %s %s, B %s, %s, %d threads", (long long)m, (long long)n,
           (long long)k, a_f32 ? "f32" : "bf16", a_kcontig ? "[m][k]" : "[k][m]", b_kcontig ? "[n][k]" : "[k][n]",
           acc ? "C +=" : "C =", threads);
  const int64_t lda = a_kcontig ? k + 3 : m + 5, ldb = b_kcontig ? k + 1 : n + 2, ldc = n + 7;
  const int64_t na = (a_kcontig ? m : k) * lda, nb = (b_kcontig ? n : k) * ldb;
  const int adt = a_f32 ? REF_F32 : REF_BF16;
  void *a = tc_tensor(adt, na, 0, 1, 11 + (uint64_t)m);
  uint16_t *b = tc_tensor(REF_BF16, nb, 0, 1, 12 + (uint64_t)n);
  float *c = tc_tensor(REF_F32, m * ldc, 0, 1, 13), *c0 = malloc((size_t)(m * ldc) * 4);
  memcpy(c0, c, (size_t)(m * ldc) * 4);
  double *want = malloc((size_t)(m * n + 1) * sizeof *want);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = acc ? c0[i * ldc + j] : 0;
      for (int64_t q = 0; q < k; q++) {
        double av = ref_load(a, a_kcontig ? i * lda + q : q * lda + i, adt);
        if (a_f32) { /* rounded to bf16 as it is packed */
          uint16_t h;
          ref_store(&h, 0, REF_BF16, av);
          av = ref_load(&h, 0, REF_BF16);
        }
        s += av * ref_load(b, b_kcontig ? j * ldb + q : q * ldb + j, REF_BF16);
      }
      want[i * n + j] = s;
    }
  const rt_amx_gemm_args g = {m, n, k, a, lda, a_f32, a_kcontig, b, ldb, b_kcontig, c, ldc, acc, NULL};
  void *scratch = aligned_alloc(64, rt_amx_gemm_scratch(&g, threads) + 64);
  rt_amx_gemm(&g, threads, scratch);
  for (int64_t i = 0; i < m; i++) {
    /* products of bf16 are exact; only the f32 sums round */
    for (int64_t j = 0; j < n; j++)
      cr_assert(fabs(c[i * ldc + j] - want[i * n + j]) <= 1e-5 * (1 + fabs(want[i * n + j])) * (1 + (double)k / 64),
                "%s: C[%lld][%lld] = %.9g, reference %.9g", where, (long long)i, (long long)j, c[i * ldc + j],
                want[i * n + j]);
    for (int64_t j = n; j < ldc; j++)
      cr_assert(!memcmp(&c[i * ldc + j], &c0[i * ldc + j], 4), "%s: C[%lld][%lld] beyond n was written", where,
                (long long)i, (long long)j);
  }
  free(scratch), free(a), free(b), free(c), free(c0), free(want);
}

/* C in bf16: C := rnd(C + A B), the product summed over all of k first
 * (dW's layout, as ubg_flce sums it in bf16), A and B bf16, so the only
 * roundings are the tiles' f32 sums and the one to bf16 */
static void gemm_bf16_case(int64_t m, int64_t n, int64_t k, int threads) {
  char where[120];
  snprintf(where, sizeof where, "bf16 C m=%lld n=%lld k=%lld, %d threads", (long long)m, (long long)n, (long long)k,
           threads);
  const int64_t lda = m + 5, ldb = n + 2, ldc = n + 7;
  uint16_t *a = tc_tensor(REF_BF16, k * lda, 0, 1, 31), *b = tc_tensor(REF_BF16, k * ldb, 0, 1, 32);
  uint16_t *c = tc_tensor(REF_BF16, m * ldc, 0, 4, 33), *c0 = malloc((size_t)(m * ldc) * 2);
  memcpy(c0, c, (size_t)(m * ldc) * 2);
  const rt_amx_gemm_args g = {m, n, k, a, lda, false, false, b, ldb, false, NULL, ldc, true, c};
  void *scratch = aligned_alloc(64, rt_amx_gemm_scratch(&g, threads) + 64);
  rt_amx_gemm(&g, threads, scratch);
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double sum = 0, mag = 0;
      for (int64_t q = 0; q < k; q++) {
        const double p = ref_load(a, q * lda + i, REF_BF16) * ref_load(b, q * ldb + j, REF_BF16);
        sum += p, mag += fabs(p);
      }
      const double old = ref_load(c0, i * ldc + j, REF_BF16), want = old + sum;
      const double got = ref_load(c, i * ldc + j, REF_BF16);
      /* half a bf16 ulp of the result, and the f32 sums' error */
      cr_assert(fabs(got - want) <= 0x1p-8 * fabs(want) + 1e-6 * (mag + fabs(old)) + 1e-30,
                "%s: C[%lld][%lld] = %.9g, reference %.9g", where, (long long)i, (long long)j, got, want);
    }
    for (int64_t j = n; j < ldc; j++)
      cr_assert(c[i * ldc + j] == c0[i * ldc + j], "%s: C[%lld][%lld] beyond n was written", where, (long long)i,
                (long long)j);
  }
  free(scratch), free(a), free(b), free(c), free(c0);
}

Test(flce_amx, tile_gemm_into_bf16) {
  SKIP_WITHOUT_AMX();
  /* the last one packs A in slices of m (more than 2 MiB of it) */
  const int64_t shapes[][3] = {{1, 1, 1}, {32, 32, 64}, {33, 17, 65}, {70, 130, 257}, {300, 64, 40}, {2100, 16, 1024}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    gemm_bf16_case(shapes[i][0], shapes[i][1], shapes[i][2], 1 + (int)(i & 1));
}

Test(flce_amx, tile_gemm_in_every_layout) {
  SKIP_WITHOUT_AMX();
  const int64_t shapes[][3] = {{1, 1, 1}, {16, 16, 32}, {32, 32, 64}, {33, 17, 65}, {70, 130, 257}, {5, 300, 37},
                               {100, 40, 3}, {64, 64, 1000}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    const int threads = 1 + (int)(i & 1);
    gemm_case(m, n, k, false, true, true, false, threads); /* the logits: x weight^T */
    gemm_case(m, n, k, true, true, false, false, threads); /* dx: dlogits weight */
    gemm_case(m, n, k, true, false, false, true, threads); /* dW += dlogits^T x */
    gemm_case(m, n, k, false, false, true, true, 3 - threads);
  }
}

/* ---- whole calls */

static ubg_ctx *amx_ctx(int threads, const char *variant) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, threads);
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", variant), UBG_OK, "%s: %s", variant, ubg_ctx_error(ctx));
  return ctx;
}

Test(flce_amx, matches_the_reference) {
  SKIP_WITHOUT_AMX();
  const flce_lib_case cases[] = {
      {REF_BF16, 37, 64, 300, true, UBG_REDUCE_MEAN, "chunk=16,gemm=amx"},   /* three chunks, the last short */
      {REF_BF16, 70, 130, 257, false, UBG_REDUCE_MEAN, "chunk=64,gemm=amx"}, /* no size a whole tile */
      {REF_BF16, 1, 1, 1, false, UBG_REDUCE_MEAN, "chunk=1,gemm=amx"},
      {REF_BF16, 33, 40, 1000, true, UBG_REDUCE_NONE, "chunk=8,gemm=amx"},   /* per-row upstream gradients */
      {REF_BF16, 64, 96, 512, false, UBG_REDUCE_MEAN, "chunk=64,gemm=amx"},  /* whole tiles throughout */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) flce_lib_call(&cases[i], "amx", 2, NULL, NULL);
}

/* every C block is one thread's, summed over all of k: the bits do not
 * depend on the thread count */
Test(flce_amx, same_bits_on_one_and_two_threads) {
  SKIP_WITHOUT_AMX();
  const flce_lib_case k = {REF_BF16, 70, 130, 257, true, UBG_REDUCE_MEAN, "chunk=32,gemm=amx"};
  void *dx1, *dw1, *dx2, *dw2;
  flce_lib_call(&k, "amx", 1, &dx1, &dw1);
  flce_lib_call(&k, "amx", 2, &dx2, &dw2);
  cr_assert(!memcmp(dx1, dx2, (size_t)(k.bt * k.h) * 2), "dx differs between 1 and 2 threads");
  cr_assert(!memcmp(dw1, dw2, (size_t)(k.v * k.h) * 2), "dweight differs between 1 and 2 threads");
  free(dx1), free(dw1), free(dx2), free(dw2);
}

/* AMX runs bf16 only: f32 and f16 calls keep the generated GEMMs and their
 * bits when AMX is forced */
Test(flce_amx, other_dtypes_keep_the_generated_gemms) {
  SKIP_WITHOUT_AMX();
  enum { BT = 9, H = 20, V = 70 };
  for (int dt = REF_F32; dt <= REF_F16; dt++) {
    void *x = tc_tensor(dt, BT * H, 0, 1, 31), *w = tc_tensor(dt, V * H, 0, 0.25, 32);
    int64_t target[BT];
    for (int i = 0; i < BT; i++) target[i] = (i * 13) % V;
    const size_t es = ref_dtype_bytes(dt);
    float loss[2];
    void *dx[2] = {malloc(BT * H * es), malloc(BT * H * es)}, *dw[2] = {malloc(V * H * es), malloc(V * H * es)};
    ubg_ctx *plain = tc_ctx(UBG_BACKEND_AUTO, 0), *amx = amx_ctx(0, "chunk=4,gemm=amx");
    cr_assert_eq(ubg_set_variant(plain, "flce", "chunk", "chunk=4"), UBG_OK);
    for (int q = 0; q < 2; q++) {
      ubg_ctx *ctx = q ? amx : plain;
      ubg_flce_out out = {&loss[q], NULL, NULL, dx[q], dw[q], NULL, NULL};
      cr_assert_eq(ubg_flce(ctx, (ubg_dtype)dt, BT, H, V, x, w, target, NULL, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
      cr_assert(!strstr(ubg_ctx_last_variant(ctx), "amx"), "%s ran %s", ug_dtype_name(dt), ubg_ctx_last_variant(ctx));
    }
    cr_assert(!memcmp(&loss[0], &loss[1], 4) && !memcmp(dx[0], dx[1], BT * H * es) && !memcmp(dw[0], dw[1], V * H * es),
              "%s: gemm=amx changed the generated GEMMs' results", ug_dtype_name(dt));
    ubg_ctx_destroy(plain), ubg_ctx_destroy(amx);
    free(x), free(w), free(dx[0]), free(dx[1]), free(dw[0]), free(dw[1]);
  }
}

/* where there are no tiles, gemm=amx is refused by name: by
 * ubg_set_variant, whole or alone, and from UBGEN_VARIANT when the context
 * is made */
Test(flce_amx, refused_without_amx) {
  if (rt_amx_available()) cr_skip_test("this CPU has AMX-BF16: the refusal cannot happen here");
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", "chunk=16,gemm=amx"), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "gemm=amx, but this CPU has no AMX-BF16"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", "gemm=amx"), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "gemm=amx, but this CPU has no AMX-BF16"), "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  setenv("UBGEN_VARIANT", "flce.chunk=gemm=amx", 1);
  ctx = NULL;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_ENOTFOUND);
  unsetenv("UBGEN_VARIANT");
  cr_assert_null(ctx);
  cr_assert(strstr(ubg_ctx_error(NULL), "UBGEN_VARIANT entry flce.chunk=gemm=amx") &&
                strstr(ubg_ctx_error(NULL), "this CPU has no AMX-BF16"),
            "%s", ubg_ctx_error(NULL));
}

/* a name that is no variant is refused with the list, on any CPU */
Test(flce_amx, unknown_gemm_names_are_refused) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
  const char *bad[] = {"chunk=16,gemm=amx2", "chunk=16,gemm=", "chunk=16,gemm=generated", "chunk=16,amx"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", bad[i]), UBG_ENOTFOUND, "%s: %s", bad[i], ubg_ctx_error(ctx));
    cr_assert(strstr(ubg_ctx_error(ctx), "chunk=N,gemm=amx"), "%s: %s", bad[i], ubg_ctx_error(ctx));
  }
  ubg_ctx_destroy(ctx);
}
