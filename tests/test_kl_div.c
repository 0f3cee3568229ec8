/* KL divergence against the double-precision reference
 * (specs/kl_div_ref.c): every feasible variant, forced, over rows x cols
 * from 1 x 1 to 64 x 4096 (3 x 20000 longer than a tile of the forward's
 * largest variant), every dtype, the reductions (none, sum, mean,
 * batchmean) with and without log_target, forward (loss) and backward
 * (dy_pred); every variant and 1 or 2 threads give the same bits;
 * dy_pred over y_true gives the same bits; the logarithm within its bound;
 * zeros, negatives and NaN in y_true; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_kl_div.py uses atol 1e-8 with rtol 1e-6
 * (f32), 1e-3 / 1e-3 (f16) and rtol 5e-2 (bf16). The loss is f32 for
 * every dtype (Liger's) and computed from the stored inputs in f32, so it
 * is held to 1e-5 / 1e-5 for all three (a reduction sums up to 262,144
 * terms in double); dy_pred, in the dtype: f32 1e-6 / 1e-5, f16 1e-3 /
 * 1e-3, bf16 1e-2 / 1e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} kl_case;

enum { NONE = UBG_REDUCE_NONE };
static const kl_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {3, 20000}, {64, 4096}};
static const int reductions[4] = {UBG_REDUCE_NONE, UBG_REDUCE_SUM, UBG_REDUCE_MEAN, UBG_REDUCE_BATCHMEAN};
static const double atol_bwd[3] = {1e-6, 1e-3, 1e-2}, rtol_bwd[3] = {1e-5, 1e-3, 1e-2};
static const float eps = 1e-10f;

/* one dtype, shape, reduction and log_target: the inputs (y_pred, y_true:
 * rows x cols; g: the loss's shape), the outputs (loss: rows x cols for
 * none, else 1, in f32; dy: rows x cols) and their references */
typedef struct {
  int dt, red, log_target;
  int64_t R, D, nl;
  void *y_pred, *y_true, *dy;
  float *g, *loss;
  double *loss_ref, *dy_ref;
  char shape[96];
} kl_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  kl_state *t = state;
  return ubg_kl_div_fwd(ctx, t->dt, t->R, t->D, t->red, t->log_target, eps, t->y_pred, t->y_true, t->loss);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  kl_state *t = state;
  return ubg_kl_div_bwd(ctx, t->dt, t->R, t->D, t->red, t->log_target, t->y_true, t->g, t->dy);
}
static void check_fwd(void *state, const char *variant) {
  kl_state *t = state;
  tc_assert_close(t->loss, REF_F32, t->loss_ref, t->nl, 1e-5, 1e-5, "%s %s: loss", variant, t->shape);
}
static void check_bwd(void *state, const char *variant) {
  kl_state *t = state;
  tc_assert_close(t->dy, t->dt, t->dy_ref, t->R * t->D, atol_bwd[t->dt], rtol_bwd[t->dt], "%s %s: dy_pred", variant,
                  t->shape);
}

/* one dtype, shape, reduction and log_target: every variant of both passes */
static void sweep(int dt, const kl_case *c, int red, int log_target) {
  const int64_t R = c->rows, D = c->cols, n = R * D, nl = red == NONE ? n : 1;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), lbytes = (size_t)nl * 4;
  kl_state t = {.dt = dt, .red = red, .log_target = log_target, .R = R, .D = D, .nl = nl};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s reduction %d log_target %d", (long long)R, (long long)D,
           ug_dtype_name(dt), red, log_target);
  /* y_pred about log(1 / 150), y_true about 0.5 with a sixth below 0 (the clamp to eps) */
  t.y_pred = tc_tensor(dt, n, -5, 2, (uint64_t)(n + 1)), t.y_true = tc_tensor(dt, n, 0.5, 0.5, 2);
  t.g = tc_tensor(REF_F32, nl, 0, 1, 3), t.loss = malloc(lbytes);
  if (red != NONE) t.g[0] = 0.75f;
  t.dy = malloc(bytes);
  t.loss_ref = malloc((size_t)nl * sizeof(double)), t.dy_ref = malloc((size_t)(n ? n : 1) * sizeof(double));
  ref_slot fa[8] = {{.p = t.y_pred}, {.p = t.y_true}, {0},          {.i = R},
                    {.i = D},          {.i = red},        {.i = log_target}, {.f = eps}};
  double *fo[8] = {NULL, NULL, t.loss_ref};
  ref_find("kl_div", "fwd")->fn(fa, dt, fo);
  ref_slot ba[7] = {{.p = t.y_true}, {.p = t.g}, {0}, {.i = R}, {.i = D}, {.i = red}, {.i = log_target}};
  double *bo[7] = {NULL, NULL, t.dy_ref};
  ref_find("kl_div", "bwd")->fn(ba, dt, bo);
  tc_sweep_variants("kl_div", "fwd", dt, 0, run_fwd, check_fwd, &t, &(tc_out){t.loss, lbytes}, 1, t.shape);
  tc_sweep_variants("kl_div", "bwd", dt, 0, run_bwd, check_bwd, &t, &(tc_out){t.dy, bytes}, 1, t.shape);
  /* dy_pred over y_true: the same bits as the sweep's */
  void *dy0 = malloc(bytes ? bytes : 1);
  memcpy(dy0, t.dy, bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.dy, t.y_true, bytes);
  cr_assert_eq(ubg_kl_div_bwd(ctx, dt, R, D, red, log_target, t.dy, t.g, t.dy), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dy, dy0, bytes), "dy_pred over y_true differs");
  ubg_ctx_destroy(ctx);
  free(t.y_pred), free(t.y_true), free(t.g), free(t.loss), free(t.dy), free(dy0), free(t.loss_ref), free(t.dy_ref);
}

/* two reductions a shape, c % 4 and (c + 2) % 4, and log_target (c / 2) % 2:
 * each reduction meets 3 or 4 shapes, odd ones among them, and both log_targets
 * (every reduction at every shape took twice the time for no other path) */
Test(kl_div, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (size_t k = 0; k < 2; k++) sweep(dt, &cases[c], reductions[(c + 2 * k) % 4], (int)(c / 2) % 2);
}

/* rows = 0: a sum of nothing, 0, and a mean of nothing, NaN (torch's 0 / 0) */
Test(kl_div, no_rows) {
  float loss = 7, x = 0;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, 0, 5, UBG_REDUCE_SUM, 0, eps, &x, &x, &loss), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(loss == 0.0f, "%g", loss);
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, 0, 5, UBG_REDUCE_BATCHMEAN, 0, eps, &x, &x, &loss), UBG_OK);
  cr_assert(loss != loss, "%g", loss);
  ubg_ctx_destroy(ctx);
}

/* y_pred = 0 makes the loss y_true log y_true: the logarithm (Cephes'
 * polynomial, templates/log_f32.h) and the product within 2 ulp of
 * libm's in double, over y_true from 1e-37 to 1e36 */
Test(kl_div, log_within_its_bound) {
  enum { N = 4096 };
  float zero[N] = {0}, t[N], l[N];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  double worst = 0;
  for (int round = 0; round < 16; round++) {
    for (int i = 0; i < N; i++) t[i] = (float)pow(10.0, -37.0 + 73.0 * (round * N + i) / (16.0 * N));
    cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, 1, N, UBG_REDUCE_NONE, 0, 1e-38f, zero, t, l), UBG_OK, "%s",
                 ubg_ctx_error(ctx));
    for (int i = 0; i < N; i++) {
      const double want = (double)t[i] * log((double)t[i]);
      if (want == 0) continue;
      const double e = fabs((double)l[i] - want) / fabs(want);
      worst = e > worst ? e : worst;
    }
  }
  cr_assert(worst <= 2.4e-7, "t log t off libm's by %g relative", worst);
  ubg_ctx_destroy(ctx);
}

/* y_true 0 gives 0 (0 log eps); below 0 the clamp, y_true (log eps -
 * y_pred); NaN stays NaN; eps = 0 makes 0 log 0 NaN, as Liger's */
Test(kl_div, special_targets) {
  const float nan = 0.0f / 0.0f;
  float p[4] = {-1, -1, -1, -1}, t[4] = {0, -0.5f, nan, 1}, l[4];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, 1, 4, UBG_REDUCE_NONE, 0, eps, p, t, l), UBG_OK, "%s", ubg_ctx_error(ctx));
  const double clamp = -0.5 * (log((double)eps) + 1);
  cr_assert(l[0] == 0.0f && fabs(l[1] - clamp) <= 1e-6 * fabs(clamp) && l[2] != l[2] && l[3] == 1.0f, "%g %g %g %g",
            l[0], l[1], l[2], l[3]);
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, 1, 4, UBG_REDUCE_NONE, 0, 0.0f, p, t, l), UBG_OK);
  cr_assert(l[0] != l[0], "%g", l[0]);
  ubg_ctx_destroy(ctx);
}

Test(kl_div, refusals_write_nothing) {
  enum { R = 2, D = 8 };
  float p[R * D], t[R * D], loss[R * D], dy[R * D], g[1] = {1};
  for (int i = 0; i < R * D; i++) p[i] = -2, t[i] = 0.125f, loss[i] = dy[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, D, 4, 0, eps, p, t, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "reduction"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, D, UBG_REDUCE_SUM, 2, eps, p, t, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "log_target"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, D, UBG_REDUCE_SUM, 0, -1e-10f, p, t, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, D, UBG_REDUCE_SUM, 0, 0.0f / 0.0f, p, t, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, D, UBG_REDUCE_NONE, 0, eps, p, NULL, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "y_true"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, 0, UBG_REDUCE_NONE, 0, eps, p, t, loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_fwd(ctx, UBG_F32, R, D, UBG_REDUCE_NONE, 0, eps, p, t, p + 1), UBG_EINVAL,
               "loss over y_pred");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_bwd(ctx, UBG_F32, R, D, UBG_REDUCE_SUM, 0, t, NULL, dy), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "grad_output"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_kl_div_bwd(ctx, UBG_F32, R, D, 4, 0, t, g, dy), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "reduction"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < R * D; i++) cr_assert(loss[i] == 7 && dy[i] == 7 && p[i] == -2 && t[i] == 0.125f);
  ubg_ctx_destroy(ctx);
}
