/* DyT against the double-precision reference (specs/dyt_ref.c): every
 * feasible variant, forced, over rows x cols from 1 x 1 to rows longer
 * than any whole-row variant holds (3 x 20000), every dtype, with and
 * without beta, forward (y) and backward (dx, dalpha, dgamma, dbeta);
 * every variant and 1 or 2 threads give the same bits; dx over dy gives
 * the same bits; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_dyt.py uses atol = rtol = 1e-5 (f32)
 * and rtol 5e-2 (bf16). Here the forward f32 at 1e-5 / 1e-5 and the
 * backward at 1e-4 / 1e-5: dalpha sums up to 262,144 terms in f32 lanes
 * where the reference sums in double; f16 1e-2, bf16 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} dyt_case;

static const dyt_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {3, 20000}, {64, 4096}};
static const double atol_fwd[3] = {1e-5, 1e-2, 2e-2}, atol_bwd[3] = {1e-4, 1e-2, 2e-2};
static const double rtol[3] = {1e-5, 1e-2, 2e-2};

static void close_to(const void *got, int dt, const double *want, int64_t n, double atol, const char *what,
                     const char *name, const dyt_case *c) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, atol, rtol[dt], &err);
  cr_assert(bad < 0, "%s %lldx%lld %s: %s[%lld] = %.9g, reference %.9g", name, (long long)c->rows, (long long)c->cols,
            ug_dtype_name(dt), what, (long long)bad, ref_load(got, bad, dt), want[bad]);
}

typedef struct {
  void *y, *dx, *dalpha, *dgamma, *dbeta;
} dyt_out;

static void sweep(int dt, const dyt_case *c, bool with_beta) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  tc_skip_if_large(n, "rows x cols");
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es;
  void *x = tc_tensor(dt, n, 0, 2, (uint64_t)(n + 1)), *alpha = tc_tensor(dt, 1, 0.5, 0.25, 2);
  void *gamma = tc_tensor(dt, D, 1, 0.5, 3), *beta = with_beta ? tc_tensor(dt, D, 0, 1, 4) : NULL;
  void *dy = tc_tensor(dt, n, 0, 1, 5);
  double *y_ref = malloc((size_t)(n + 1) * sizeof(double)), *dx_ref = malloc((size_t)(n + 1) * sizeof(double));
  double da_ref, *dg_ref = malloc((size_t)D * sizeof(double)), *db_ref = malloc((size_t)D * sizeof(double));
  ref_slot fa[7] = {{.p = x}, {.p = alpha}, {.p = gamma}, {.p = beta}, {0}, {.i = R}, {.i = D}};
  double *fo[7] = {0};
  fo[4] = y_ref;
  ref_find("dyt", "fwd")->fn(fa, dt, fo);
  ref_slot ba[10] = {{.p = dy}, {.p = x}, {.p = alpha}, {.p = gamma}, {0}, {0}, {0}, {0}, {.i = R}, {.i = D}};
  double *bo[10] = {0};
  bo[4] = dx_ref, bo[5] = &da_ref, bo[6] = dg_ref, bo[7] = with_beta ? db_ref : NULL;
  ref_find("dyt", "bwd")->fn(ba, dt, bo);
  dyt_out got = {malloc(bytes + 1), malloc(bytes + 1), malloc(es), malloc((size_t)D * es),
                 with_beta ? malloc((size_t)D * es) : NULL};
  dyt_out first = {malloc(bytes + 1), malloc(bytes + 1), malloc(es), malloc((size_t)D * es), malloc((size_t)D * es)};
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("dyt", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      const char *name = vs.v[v].name;
      for (int k = 0; k < 2; k++) {
        ubg_ctx *ctx = ctxs[k];
        cr_assert_eq(ubg_set_variant(ctx, "dyt", pn, name), UBG_OK, "%s", ubg_ctx_error(ctx));
        ubg_status s;
        if (!pass) {
          memset(got.y, 0xff, bytes);
          s = ubg_dyt_fwd(ctx, dt, R, D, x, alpha, gamma, beta, got.y);
        } else {
          memset(got.dx, 0xff, bytes), memset(got.dalpha, 0xff, es), memset(got.dgamma, 0xff, (size_t)D * es);
          if (got.dbeta) memset(got.dbeta, 0xff, (size_t)D * es);
          s = ubg_dyt_bwd(ctx, dt, R, D, dy, x, alpha, gamma, got.dx, got.dalpha, got.dgamma, got.dbeta);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", name, ubg_ctx_error(ctx));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(got.y, dt, y_ref, n, atol_fwd[dt], "y", name, c);
            memcpy(first.y, got.y, bytes);
          } else {
            close_to(got.dx, dt, dx_ref, n, atol_bwd[dt], "dx", name, c);
            close_to(got.dalpha, dt, &da_ref, 1, atol_bwd[dt], "dalpha", name, c);
            close_to(got.dgamma, dt, dg_ref, D, atol_bwd[dt], "dgamma", name, c);
            if (got.dbeta) close_to(got.dbeta, dt, db_ref, D, atol_bwd[dt], "dbeta", name, c);
            memcpy(first.dx, got.dx, bytes), memcpy(first.dalpha, got.dalpha, es);
            memcpy(first.dgamma, got.dgamma, (size_t)D * es);
            if (got.dbeta) memcpy(first.dbeta, got.dbeta, (size_t)D * es);
          }
        } else if (!pass) {
          cr_assert(!memcmp(got.y, first.y, bytes), "%s (%d threads) %lldx%lld: forward bits differ", name, k + 1,
                    (long long)R, (long long)D);
        } else {
          cr_assert(!memcmp(got.dx, first.dx, bytes) && !memcmp(got.dalpha, first.dalpha, es) &&
                        !memcmp(got.dgamma, first.dgamma, (size_t)D * es) &&
                        (!got.dbeta || !memcmp(got.dbeta, first.dbeta, (size_t)D * es)),
                    "%s (%d threads) %lldx%lld: backward bits differ", name, k + 1, (long long)R, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to %lldx%lld", pn, (long long)R, (long long)D);
    tc_free_variants(&vs);
  }
  /* dx over dy, y over x: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "dyt", "fwd", NULL), UBG_OK);
  cr_assert_eq(ubg_set_variant(ctxs[1], "dyt", "bwd", NULL), UBG_OK);
  memcpy(got.y, x, bytes);
  cr_assert_eq(ubg_dyt_fwd(ctxs[1], dt, R, D, got.y, alpha, gamma, beta, got.y), UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(got.y, first.y, bytes), "y over x differs");
  memcpy(got.dx, dy, bytes);
  cr_assert_eq(ubg_dyt_bwd(ctxs[1], dt, R, D, got.dx, x, alpha, gamma, got.dx, got.dalpha, got.dgamma, got.dbeta),
               UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(got.dx, first.dx, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(alpha), free(gamma), free(beta), free(dy), free(y_ref), free(dx_ref), free(dg_ref), free(db_ref);
  free(got.y), free(got.dx), free(got.dalpha), free(got.dgamma), free(got.dbeta);
  free(first.y), free(first.dx), free(first.dalpha), free(first.dgamma), free(first.dbeta);
}

Test(dyt, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c], c % 2 == 0);
}

Test(dyt, without_beta_every_shape, .timeout = 300 * TC_TIME_SCALE) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(UBG_F32, &cases[c], c % 2 != 0);
}

/* tanh as 2 sigmoid(2z) - 1 stays within 4e-7 of libm's over the floats
 * where it is not yet +-1, and saturates to +-1 and keeps NaN (the bound
 * docs/semantics.md states) */
Test(dyt, tanh_within_its_bound) {
  enum { N = 4096 };
  float x[N], y[N], one = 1, g[1] = {1};
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  double worst = 0;
  for (int round = 0; round < 64; round++) {
    for (int i = 0; i < N; i++) x[i] = (float)((round * N + i) - 131072) / 8192.0f; /* [-16, 16) */
    cr_assert_eq(ubg_dyt_fwd(ctx, UBG_F32, N, 1, x, &one, g, NULL, y), UBG_OK, "%s", ubg_ctx_error(ctx));
    for (int i = 0; i < N; i++) {
      const double e = fabs((double)y[i] - tanh((double)x[i]));
      worst = e > worst ? e : worst;
    }
  }
  cr_assert(worst <= 4e-7, "tanh off libm's by %g", worst);
  x[0] = 1.0f / 0.0f, x[1] = -1.0f / 0.0f, x[2] = 0.0f / 0.0f, x[3] = 100.0f;
  cr_assert_eq(ubg_dyt_fwd(ctx, UBG_F32, 4, 1, x, &one, g, NULL, y), UBG_OK);
  cr_assert(y[0] == 1.0f && y[1] == -1.0f && y[2] != y[2] && y[3] == 1.0f, "%g %g %g %g", y[0], y[1], y[2], y[3]);
  ubg_ctx_destroy(ctx);
}

Test(dyt, refusals_write_nothing) {
  enum { R = 2, D = 8 };
  float x[R * D], a[1] = {0.5f}, g[D], y[R * D], dx[R * D], da[1] = {7}, dg[D];
  for (int i = 0; i < R * D; i++) x[i] = (float)i, y[i] = dx[i] = 7;
  for (int i = 0; i < D; i++) g[i] = 1, dg[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_dyt_fwd(ctx, UBG_F32, R, D, x, a, NULL, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "gamma"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_dyt_fwd(ctx, UBG_F32, R, D, x, NULL, g, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "alpha"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_dyt_fwd(ctx, UBG_F32, R, 0, x, a, g, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_dyt_bwd(ctx, UBG_F32, R, D, x, x, a, g, dx, NULL, dg, NULL), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "dalpha"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_dyt_bwd(ctx, UBG_F32, R, D, x, x, a, g, dx, da, g, NULL), UBG_EINVAL, "dgamma over gamma");
  for (int i = 0; i < R * D; i++) cr_assert(y[i] == 7 && dx[i] == 7);
  cr_assert(da[0] == 7 && dg[0] == 7 && g[0] == 1);
  ubg_ctx_destroy(ctx);
}
