/* The total variation distance against the double-precision reference
 * (specs/tvd_ref.c): every feasible variant, forced, over rows x cols from
 * 1 x 1 to rows of 70000 (many tiles), every dtype, every reduction, with
 * and without shift_labels (a quarter of the rows ignored), forward (loss)
 * and backward (dp for a given dloss); every variant and 1 or 2 threads
 * give the same bits; dp over p, the same bits; ties, NaN, calls whose
 * rows are all ignored or none; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_tvd.py uses atol 1e-8, rtol 1e-6 for the
 * loss and the gradient (f32, bf16). Here the loss (f32 for every dtype)
 * at 1e-7 / 1e-6; dp at 1e-12 / 1e-6 in f32, and its rounding to the dtype
 * in f16 (1e-3, and 6e-8 where f16 is subnormal) and bf16 (4e-3). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} tvd_case;

static const tvd_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {3, 4097}, {2, 70000}, {64, 4096}};
static const double dp_atol[3] = {1e-12, 6e-8, 1e-12}, dp_rtol[3] = {1e-6, 1e-3, 4e-3};
static const char *const reductions[4] = {"mean", "sum", "none", "batchmean"};
enum { IGNORE = -1 };

static void close_to(const void *got, int dt, const double *want, int64_t n, double atol, double rtol,
                     const char *what, const char *name, const tvd_case *c, int red) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, atol, rtol, &err);
  cr_assert(bad < 0, "%s %lldx%lld %s %s: %s[%lld] = %.9g, reference %.9g", name, (long long)c->rows,
            (long long)c->cols, ug_dtype_name(dt), reductions[red], what, (long long)bad, ref_load(got, bad, dt),
            want[bad]);
}

/* labels in [-1, 3): about a quarter of them IGNORE */
static int64_t *labels_for(int64_t rows, uint64_t seed) {
  int64_t *t = malloc((size_t)(rows ? rows : 1) * sizeof *t);
  for (int64_t r = 0; r < rows; r++) t[r] = (int64_t)(tc_next(&seed) % 4) - 1;
  return t;
}

static void sweep(int dt, const tvd_case *c, int red, int with_labels) {
  const int64_t R = c->rows, D = c->cols, n = R * D, nl = red == UBG_REDUCE_NONE ? n : 1;
  tc_skip_if_large(n, "rows x cols");
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), lbytes = (size_t)nl * 4;
  void *p = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), *q = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 2));
  int64_t *labels = with_labels ? labels_for(R, (uint64_t)R) : NULL;
  float *dloss = tc_tensor(UBG_F32, nl, 0.75, red == UBG_REDUCE_NONE ? 1 : 0, 3);
  float *loss = malloc(lbytes), *loss0 = malloc(lbytes);
  void *dp = malloc(bytes), *dp0 = malloc(bytes);
  double *loss_ref = malloc((size_t)nl * sizeof(double)), *dp_ref = malloc((size_t)n * sizeof(double));
  ref_slot fa[8] = {{.p = p}, {.p = q}, {.p = labels}, {0}, {.i = R}, {.i = D}, {.i = IGNORE}, {.i = red}};
  double *fo[8] = {0};
  fo[3] = loss_ref;
  ref_find("tvd", "fwd")->fn(fa, dt, fo);
  ref_slot ba[9] = {{.p = dloss}, {.p = p},      {.p = q},      {.p = labels}, {0},
                    {.i = R},      {.i = D},      {.i = IGNORE}, {.i = red}};
  double *bo[9] = {0};
  bo[4] = dp_ref;
  ref_find("tvd", "bwd")->fn(ba, dt, bo);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("tvd", pn, dt);
    for (int v = 0; v < vs.n; v++)
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(ubg_set_variant(ctxs[k], "tvd", pn, vs.v[v].name), UBG_OK, "%s", ubg_ctx_error(ctxs[k]));
        memset(pass ? dp : (void *)loss, 0xff, pass ? bytes : lbytes);
        const ubg_status s = pass ? ubg_tvd_bwd(ctxs[k], dt, R, D, dloss, p, q, labels, IGNORE, red, dp)
                                  : ubg_tvd_fwd(ctxs[k], dt, R, D, p, q, labels, IGNORE, red, loss);
        cr_assert_eq(s, UBG_OK, "%s: %s", vs.v[v].name, ubg_ctx_error(ctxs[k]));
        if (v == 0 && k == 0) {
          if (pass) close_to(dp, dt, dp_ref, n, dp_atol[dt], dp_rtol[dt], "dp", vs.v[v].name, c, red);
          else close_to(loss, UBG_F32, loss_ref, nl, 1e-7, 1e-6, "loss", vs.v[v].name, c, red);
          memcpy(pass ? dp0 : (void *)loss0, pass ? dp : (void *)loss, pass ? bytes : lbytes);
        } else {
          cr_assert(!memcmp(pass ? dp : (void *)loss, pass ? dp0 : (void *)loss0, pass ? bytes : lbytes),
                    "%s (%d threads) %lldx%lld %s: bits differ", vs.v[v].name, k + 1, (long long)R, (long long)D,
                    reductions[red]);
        }
      }
    cr_assert_gt(vs.n, 0, "no %s variant", pn);
    tc_free_variants(&vs);
  }
  /* dp over p: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "tvd", "bwd", NULL), UBG_OK);
  memcpy(dp, p, bytes);
  cr_assert_eq(ubg_tvd_bwd(ctxs[1], dt, R, D, dloss, dp, q, labels, IGNORE, red, dp), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(dp, dp0, bytes), "dp over p differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(p), free(q), free(labels), free(dloss), free(loss), free(loss0), free(dp), free(dp0), free(loss_ref);
  free(dp_ref);
}

Test(tvd, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (int red = 0; red < 4; red++) sweep(dt, &cases[c], red, (int)(c + red) % 2);
}

/* p == q gives a gradient of 0 (torch's for |x| at 0; Liger's kernel gives
 * -0.5 there), a NaN stays NaN in the loss and the gradient; ignored rows
 * give 0 */
Test(tvd, ties_nan_and_ignored_rows) {
  enum { R = 2, D = 4 };
  const float nan = 0.0f / 0.0f;
  float p[R * D] = {0.25f, 0.5f, nan, 1, 7, 7, 7, 7}, q[R * D] = {0.25f, 0.25f, 0, 2, 0, 0, 0, 0};
  float loss[R * D], dp[R * D], one = 1;
  const int64_t labels[R] = {5, -100};
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, R, D, p, q, labels, -100, UBG_REDUCE_NONE, loss), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(loss[0] == 0 && loss[1] == 0.125f && loss[2] != loss[2] && loss[3] == 0.5f, "%g %g %g %g", loss[0],
            loss[1], loss[2], loss[3]);
  for (int d = D; d < R * D; d++) cr_assert(loss[d] == 0, "ignored row: loss[%d] = %g", d, loss[d]);
  cr_assert_eq(ubg_tvd_bwd(ctx, UBG_F32, R, D, &one, p, q, labels, -100, UBG_REDUCE_SUM, dp), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(dp[0] == 0 && dp[1] == 0.5f && dp[2] != dp[2] && dp[3] == -0.5f, "%g %g %g %g", dp[0], dp[1], dp[2],
            dp[3]);
  for (int d = D; d < R * D; d++) cr_assert(dp[d] == 0, "ignored row: dp[%d] = %g", d, dp[d]);
  ubg_ctx_destroy(ctx);
}

/* every row ignored: mean and batchmean give 0, not 0 / 0 (Liger divides
 * by zero); no rows at all: a loss of 0 */
Test(tvd, no_row_kept) {
  enum { R = 3, D = 5 };
  float p[R * D], q[R * D], loss = 7, dp[R * D], one = 1;
  const int64_t labels[R] = {-100, -100, -100};
  for (int i = 0; i < R * D; i++) p[i] = (float)i, q[i] = 0;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  for (int red = 0; red < 4; red += 3) {
    cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, R, D, p, q, labels, -100, red, &loss), UBG_OK, "%s", ubg_ctx_error(ctx));
    cr_assert(loss == 0, "%s: %g", reductions[red], loss);
    cr_assert_eq(ubg_tvd_bwd(ctx, UBG_F32, R, D, &one, p, q, labels, -100, red, dp), UBG_OK, "%s", ubg_ctx_error(ctx));
    for (int i = 0; i < R * D; i++) cr_assert(dp[i] == 0, "%s: dp[%d] = %g", reductions[red], i, dp[i]);
    loss = 7;
    cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, 0, D, p, q, NULL, -100, red, &loss), UBG_OK, "%s", ubg_ctx_error(ctx));
    cr_assert(loss == 0, "0 rows, %s: %g", reductions[red], loss);
  }
  ubg_ctx_destroy(ctx);
}

Test(tvd, refusals_write_nothing) {
  enum { R = 2, D = 8 };
  float p[R * D], q[R * D], loss[R * D], dp[R * D], one = 1;
  for (int i = 0; i < R * D; i++) p[i] = (float)i, q[i] = 1, loss[i] = dp[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, R, D, p, q, NULL, -100, (ubg_reduction)4, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "reduction") && strstr(ubg_ctx_error(ctx), "4"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, R, D, p, NULL, NULL, -100, UBG_REDUCE_SUM, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "q"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, R, 0, p, q, NULL, -100, UBG_REDUCE_SUM, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_tvd_fwd(ctx, UBG_F32, R, D, p, q, NULL, -100, UBG_REDUCE_NONE, p + 1), UBG_EINVAL, "loss over p");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_tvd_bwd(ctx, UBG_F32, R, D, NULL, p, q, NULL, -100, UBG_REDUCE_MEAN, dp), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "dloss"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_tvd_bwd(ctx, UBG_F32, R, D, &one, p, q, NULL, -100, UBG_REDUCE_MEAN, q), UBG_EINVAL, "dp over q");
  for (int i = 0; i < R * D; i++) cr_assert(p[i] == (float)i && q[i] == 1 && loss[i] == 7 && dp[i] == 7);
  ubg_ctx_destroy(ctx);
}
