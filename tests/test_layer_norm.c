/* LayerNorm against the double-precision reference (specs/layer_norm_ref.c):
 * every feasible variant, forced, over rows x cols from 1 x 1 to rows
 * longer than any whole-row variant holds (3 x 20000), every dtype, forward
 * (y, mean, rstd) and backward (dx, dw, db from the forward's mean and
 * rstd); every variant and 1 or 2 threads give the same bits; dx over dy
 * gives the same bits; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_layer_norm.py uses atol = rtol = 1e-5
 * (f32) and 2e-2 (bf16). Here f32 1e-4 / 1e-5: dw and db are sums over up to
 * 64 rows in f32 and rows of 20000 sum in f32 lanes, where the reference
 * sums in double; f16 1e-2 / 1e-2 between the two. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} ln_case;

static const ln_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {3, 20000}, {64, 4096}};
static const double tol_atol[3] = {1e-4, 1e-2, 2e-2}, tol_rtol[3] = {1e-5, 1e-2, 2e-2};
static const float EPS = 1e-5f;

static void close_to(const void *got, int dt, const double *want, int64_t n, const char *what, const char *name,
                     const ln_case *c) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, tol_atol[dt], tol_rtol[dt], &err);
  cr_assert(bad < 0, "%s %lldx%lld %s: %s[%lld] = %.9g, reference %.9g", name, (long long)c->rows, (long long)c->cols,
            ug_dtype_name(dt), what, (long long)bad, ref_load(got, bad, dt), want[bad]);
}

static void sweep(int dt, const ln_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  tc_skip_if_large(n, "rows x cols");
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es;
  void *x = tc_tensor(dt, n, 0.5, 2, (uint64_t)(n + 1)), *w = tc_tensor(dt, D, 1, 0.5, 2), *b = tc_tensor(dt, D, 0, 1, 3);
  void *dy = tc_tensor(dt, n, 0, 1, 4);
  /* the reference's forward, and its backward from the kernel's mean and rstd */
  double *y_ref = malloc((size_t)(n + 1) * sizeof(double)), *mean_ref = malloc((size_t)(R + 1) * sizeof(double));
  double *rstd_ref = malloc((size_t)(R + 1) * sizeof(double));
  ref_slot fa[9] = {{.p = x}, {.p = w}, {.p = b}, {0}, {0}, {0}, {.i = R}, {.i = D}, {.f = EPS}};
  double *fo[9] = {0};
  fo[3] = y_ref, fo[4] = mean_ref, fo[5] = rstd_ref;
  ref_find("layer_norm", "fwd")->fn(fa, dt, fo);
  void *y = malloc(bytes + 1), *y0 = malloc(bytes + 1), *dx = malloc(bytes + 1), *dx0 = malloc(bytes + 1);
  float *mean = malloc((size_t)(R + 1) * 4), *rstd = malloc((size_t)(R + 1) * 4);
  float *mean0 = malloc((size_t)(R + 1) * 4), *rstd0 = malloc((size_t)(R + 1) * 4);
  void *dw = malloc((size_t)D * es), *db = malloc((size_t)D * es), *dw0 = malloc((size_t)D * es), *db0 = malloc((size_t)D * es);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("layer_norm", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      for (int k = 0; k < 2; k++) {
        ubg_ctx *ctx = ctxs[k];
        cr_assert_eq(ubg_set_variant(ctx, "layer_norm", pn, vs.v[v].name), UBG_OK, "%s", ubg_ctx_error(ctx));
        ubg_status s;
        if (!pass) {
          memset(y, 0xff, bytes), memset(mean, 0xff, (size_t)R * 4), memset(rstd, 0xff, (size_t)R * 4);
          s = ubg_layer_norm_fwd(ctx, dt, R, D, x, w, b, EPS, y, mean, rstd);
        } else {
          memset(dx, 0xff, bytes), memset(dw, 0xff, (size_t)D * es), memset(db, 0xff, (size_t)D * es);
          s = ubg_layer_norm_bwd(ctx, dt, R, D, dy, x, w, mean0, rstd0, dx, dw, db);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", vs.v[v].name, ubg_ctx_error(ctx));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(y, dt, y_ref, n, "y", vs.v[v].name, c);
            close_to(mean, 0, mean_ref, R, "mean", vs.v[v].name, c);
            close_to(rstd, 0, rstd_ref, R, "rstd", vs.v[v].name, c);
            memcpy(y0, y, bytes), memcpy(mean0, mean, (size_t)R * 4), memcpy(rstd0, rstd, (size_t)R * 4);
          } else {
            double *dx_ref = malloc((size_t)(n + 1) * sizeof(double));
            double *dw_ref = malloc((size_t)D * sizeof(double)), *db_ref = malloc((size_t)D * sizeof(double));
            ref_slot ba[10] = {{.p = dy}, {.p = x}, {.p = w}, {.p = mean0}, {.p = rstd0}, {0}, {0}, {0}, {.i = R}, {.i = D}};
            double *bo[10] = {0};
            bo[5] = dx_ref, bo[6] = dw_ref, bo[7] = db_ref;
            ref_find("layer_norm", "bwd")->fn(ba, dt, bo);
            close_to(dx, dt, dx_ref, n, "dx", vs.v[v].name, c);
            close_to(dw, dt, dw_ref, D, "dw", vs.v[v].name, c);
            close_to(db, dt, db_ref, D, "db", vs.v[v].name, c);
            free(dx_ref), free(dw_ref), free(db_ref);
            memcpy(dx0, dx, bytes), memcpy(dw0, dw, (size_t)D * es), memcpy(db0, db, (size_t)D * es);
          }
        } else if (!pass) {
          cr_assert(!memcmp(y, y0, bytes) && !memcmp(mean, mean0, (size_t)R * 4) && !memcmp(rstd, rstd0, (size_t)R * 4),
                    "%s (%d threads) %lldx%lld: forward bits differ", vs.v[v].name, k + 1, (long long)R, (long long)D);
        } else {
          cr_assert(!memcmp(dx, dx0, bytes) && !memcmp(dw, dw0, (size_t)D * es) && !memcmp(db, db0, (size_t)D * es),
                    "%s (%d threads) %lldx%lld: backward bits differ", vs.v[v].name, k + 1, (long long)R, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to %lldx%lld", pn, (long long)R, (long long)D);
    tc_free_variants(&vs);
  }
  /* dx over dy: the same bits */
  memcpy(dx, dy, bytes);
  cr_assert_eq(ubg_set_variant(ctxs[1], "layer_norm", "bwd", NULL), UBG_OK);
  cr_assert_eq(ubg_layer_norm_bwd(ctxs[1], dt, R, D, dx, x, w, mean0, rstd0, dx, dw, db), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(w), free(b), free(dy), free(y_ref), free(mean_ref), free(rstd_ref), free(y), free(y0), free(dx);
  free(dx0), free(mean), free(rstd), free(mean0), free(rstd0), free(dw), free(db), free(dw0), free(db0);
}

Test(layer_norm, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

Test(layer_norm, refusals_write_nothing) {
  enum { R = 2, D = 8 };
  float x[R * D], w[D], b[D], y[R * D], mean[R], rstd[R];
  for (int i = 0; i < R * D; i++) x[i] = (float)i, y[i] = 7;
  for (int i = 0; i < D; i++) w[i] = 1, b[i] = 0;
  mean[0] = mean[1] = rstd[0] = rstd[1] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_layer_norm_fwd(ctx, UBG_F32, R, D, x, NULL, b, 1e-5f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "w"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_layer_norm_fwd(ctx, UBG_F32, R, D, x, w, b, -1.0f / 0.0f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_layer_norm_fwd(ctx, UBG_F32, R, 0, x, w, b, 1e-5f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_layer_norm_fwd(ctx, UBG_F32, R, D, x, w, b, 1e-5f, y, mean, mean), UBG_EINVAL, "rstd over mean");
  for (int i = 0; i < R * D; i++) cr_assert(y[i] == 7);
  cr_assert(mean[0] == 7 && rstd[1] == 7);
  ubg_ctx_destroy(ctx);
}
