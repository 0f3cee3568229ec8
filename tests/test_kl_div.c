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

static void close_to(const void *got, int dt, const double *want, int64_t n, double atol, double rtol,
                     const char *what, const char *name, const kl_case *c, int red, int log_target) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, atol, rtol, &err);
  cr_assert(bad < 0, "%s %lldx%lld reduction %d log_target %d: %s[%lld] = %.9g, reference %.9g", name,
            (long long)c->rows, (long long)c->cols, red, log_target, what, (long long)bad, ref_load(got, bad, dt),
            want[bad]);
}

/* one dtype, shape, reduction and log_target: every variant of both passes */
static void sweep(int dt, const kl_case *c, int red, int log_target) {
  const int64_t R = c->rows, D = c->cols, n = R * D, nl = red == NONE ? n : 1;
  tc_skip_if_large(n, "rows x cols");
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), lbytes = (size_t)nl * 4;
  /* y_pred about log(1 / 150), y_true about 0.5 with a sixth below 0 (the clamp to eps) */
  void *y_pred = tc_tensor(dt, n, -5, 2, (uint64_t)(n + 1)), *y_true = tc_tensor(dt, n, 0.5, 0.5, 2);
  float *g = tc_tensor(REF_F32, nl, 0, 1, 3), *loss = malloc(lbytes), *loss0 = malloc(lbytes);
  if (red != NONE) g[0] = 0.75f;
  void *dy = malloc(bytes), *dy0 = malloc(bytes);
  double *loss_ref = malloc((size_t)nl * sizeof(double)), *dy_ref = malloc((size_t)(n ? n : 1) * sizeof(double));
  ref_slot fa[8] = {{.p = y_pred}, {.p = y_true}, {0}, {.i = R}, {.i = D}, {.i = red}, {.i = log_target}, {.f = eps}};
  double *fo[8] = {NULL, NULL, loss_ref};
  ref_find("kl_div", "fwd")->fn(fa, dt, fo);
  ref_slot ba[7] = {{.p = y_true}, {.p = g}, {0}, {.i = R}, {.i = D}, {.i = red}, {.i = log_target}};
  double *bo[7] = {NULL, NULL, dy_ref};
  ref_find("kl_div", "bwd")->fn(ba, dt, bo);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("kl_div", pn, dt);
    for (int v = 0; v < vs.n; v++) {
      const char *name = vs.v[v].name;
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(ubg_set_variant(ctxs[k], "kl_div", pn, name), UBG_OK, "%s", ubg_ctx_error(ctxs[k]));
        ubg_status s;
        if (!pass) {
          memset(loss, 0xff, lbytes);
          s = ubg_kl_div_fwd(ctxs[k], dt, R, D, red, log_target, eps, y_pred, y_true, loss);
        } else {
          memset(dy, 0xff, bytes);
          s = ubg_kl_div_bwd(ctxs[k], dt, R, D, red, log_target, y_true, g, dy);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", name, ubg_ctx_error(ctxs[k]));
        if (v == 0 && k == 0) {
          if (!pass) {
            close_to(loss, REF_F32, loss_ref, nl, 1e-5, 1e-5, "loss", name, c, red, log_target);
            memcpy(loss0, loss, lbytes);
          } else {
            close_to(dy, dt, dy_ref, n, atol_bwd[dt], rtol_bwd[dt], "dy_pred", name, c, red, log_target);
            memcpy(dy0, dy, bytes);
          }
        } else {
          cr_assert(pass ? !memcmp(dy, dy0, bytes) : !memcmp(loss, loss0, lbytes),
                    "%s (%d threads) %lldx%lld reduction %d: bits differ", name, k + 1, (long long)R, (long long)D,
                    red);
        }
      }
    }
    cr_assert_gt(vs.n, 0, "no %s variant", pn);
    tc_free_variants(&vs);
  }
  /* dy_pred over y_true: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "kl_div", "bwd", NULL), UBG_OK);
  memcpy(dy, y_true, bytes);
  cr_assert_eq(ubg_kl_div_bwd(ctxs[1], dt, R, D, red, log_target, dy, g, dy), UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(dy, dy0, bytes), "dy_pred over y_true differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(y_pred), free(y_true), free(g), free(loss), free(loss0), free(dy), free(dy0), free(loss_ref), free(dy_ref);
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
