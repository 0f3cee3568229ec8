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

/* labels in [-1, 3): about a quarter of them IGNORE */
static int64_t *labels_for(int64_t rows, uint64_t seed) {
  int64_t *t = malloc((size_t)(rows ? rows : 1) * sizeof *t);
  for (int64_t r = 0; r < rows; r++) t[r] = (int64_t)(tc_next(&seed) % 4) - 1;
  return t;
}

/* one case: the inputs (p, q: rows x cols; labels: rows or NULL; dloss:
 * the loss's shape), the outputs (loss: rows x cols for none, else 1, in
 * f32; dp: rows x cols) and their references */
typedef struct {
  int dt, red;
  int64_t R, D, nl;
  void *p, *q, *dp;
  int64_t *labels;
  float *dloss, *loss;
  double *loss_ref, *dp_ref;
  char shape[64];
} tvd_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  tvd_state *t = state;
  return ubg_tvd_fwd(ctx, t->dt, t->R, t->D, t->p, t->q, t->labels, IGNORE, t->red, t->loss);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  tvd_state *t = state;
  return ubg_tvd_bwd(ctx, t->dt, t->R, t->D, t->dloss, t->p, t->q, t->labels, IGNORE, t->red, t->dp);
}
static void check_fwd(void *state, const char *variant) {
  tvd_state *t = state;
  tc_assert_close(t->loss, UBG_F32, t->loss_ref, t->nl, 1e-7, 1e-6, "%s %s: loss", variant, t->shape);
}
static void check_bwd(void *state, const char *variant) {
  tvd_state *t = state;
  tc_assert_close(t->dp, t->dt, t->dp_ref, t->R * t->D, dp_atol[t->dt], dp_rtol[t->dt], "%s %s: dp", variant,
                  t->shape);
}

static void sweep(int dt, const tvd_case *c, int red, int with_labels) {
  const int64_t R = c->rows, D = c->cols, n = R * D, nl = red == UBG_REDUCE_NONE ? n : 1;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), lbytes = (size_t)nl * 4;
  tvd_state t = {.dt = dt, .red = red, .R = R, .D = D, .nl = nl};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s %s", (long long)R, (long long)D, ug_dtype_name(dt),
           reductions[red]);
  t.p = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), t.q = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 2));
  t.labels = with_labels ? labels_for(R, (uint64_t)R) : NULL;
  t.dloss = tc_tensor(UBG_F32, nl, 0.75, red == UBG_REDUCE_NONE ? 1 : 0, 3);
  t.loss = malloc(lbytes), t.dp = malloc(bytes);
  t.loss_ref = malloc((size_t)nl * sizeof(double)), t.dp_ref = malloc((size_t)n * sizeof(double));
  ref_slot fa[8] = {{.p = t.p}, {.p = t.q}, {.p = t.labels}, {0}, {.i = R}, {.i = D}, {.i = IGNORE}, {.i = red}};
  double *fo[8] = {0};
  fo[3] = t.loss_ref;
  ref_find("tvd", "fwd")->fn(fa, dt, fo);
  ref_slot ba[9] = {{.p = t.dloss}, {.p = t.p},    {.p = t.q},    {.p = t.labels}, {0},
                    {.i = R},        {.i = D},      {.i = IGNORE}, {.i = red}};
  double *bo[9] = {0};
  bo[4] = t.dp_ref;
  ref_find("tvd", "bwd")->fn(ba, dt, bo);
  tc_sweep_variants("tvd", "fwd", dt, 0, run_fwd, check_fwd, &t, &(tc_out){t.loss, lbytes}, 1, t.shape);
  tc_sweep_variants("tvd", "bwd", dt, 0, run_bwd, check_bwd, &t, &(tc_out){t.dp, bytes}, 1, t.shape);
  /* dp over p: the same bits as the sweep's */
  void *dp0 = malloc(bytes);
  memcpy(dp0, t.dp, bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.dp, t.p, bytes);
  cr_assert_eq(ubg_tvd_bwd(ctx, dt, R, D, t.dloss, t.dp, t.q, t.labels, IGNORE, red, t.dp), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dp, dp0, bytes), "dp over p differs");
  ubg_ctx_destroy(ctx);
  free(t.p), free(t.q), free(t.labels), free(t.dloss), free(t.loss), free(t.dp), free(dp0), free(t.loss_ref);
  free(t.dp_ref);
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
