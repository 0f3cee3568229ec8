/* Softmax over the last dimension against the double-precision reference
 * (specs/softmax_ref.c): every feasible variant, forced, over rows x cols
 * from 1 x 1 to rows longer than any whole-row variant holds (2 x 70000,
 * Liger's multi-block shape), every dtype, forward (y) and backward (dx
 * from the forward's y); every variant and 1 or 2 threads give the same
 * bits; dx over dy, y over x, the same bits; rows of -Inf, with a NaN,
 * and of one +Inf as torch gives them; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_softmax.py uses 1e-5 / 1e-5 (f32) and
 * 5e-2 (bf16). Here f32 1e-6 / 1e-5 (y is at most 1), f16 1e-3 / 1e-2,
 * bf16 1e-3 / 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} sm_case;

static const sm_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {2, 70000}, {64, 4096}};
static const double tol_atol[3] = {1e-6, 1e-3, 1e-3}, tol_rtol[3] = {1e-5, 1e-2, 2e-2};

/* one dtype and shape: the inputs (x, dy, and y0, the forward's y that the
 * backward takes: rows x cols), the outputs (y, dx: rows x cols) and their
 * references (y_ref, dx_ref) */
typedef struct {
  int dt;
  int64_t R, D;
  void *x, *dy, *y, *y0, *dx;
  double *y_ref, *dx_ref;
  char shape[48];
} sm_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  sm_state *t = state;
  return ubg_softmax_fwd(ctx, t->dt, t->R, t->D, t->x, t->y);
}
/* dx from the forward's y (y0) */
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  sm_state *t = state;
  return ubg_softmax_bwd(ctx, t->dt, t->R, t->D, t->dy, t->y0, t->dx);
}
static void check_fwd(void *state, const char *variant) {
  sm_state *t = state;
  tc_assert_close(t->y, t->dt, t->y_ref, t->R * t->D, tol_atol[t->dt], tol_rtol[t->dt], "%s %s: y", variant,
                  t->shape);
}
static void check_bwd(void *state, const char *variant) {
  sm_state *t = state;
  tc_assert_close(t->dx, t->dt, t->dx_ref, t->R * t->D, tol_atol[t->dt], tol_rtol[t->dt], "%s %s: dx", variant,
                  t->shape);
}

static void sweep(int dt, const sm_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  sm_state t = {.dt = dt, .R = R, .D = D,
                .x = tc_tensor(dt, n, 0, 3, (uint64_t)(n + 1)), .dy = tc_tensor(dt, n, 0, 1, 2)};
  t.y = malloc(bytes), t.y0 = malloc(bytes), t.dx = malloc(bytes);
  t.y_ref = malloc((size_t)n * sizeof(double)), t.dx_ref = malloc((size_t)n * sizeof(double));
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s", (long long)R, (long long)D, ug_dtype_name(dt));
  ref_slot fa[4] = {{.p = t.x}, {0}, {.i = R}, {.i = D}};
  double *fo[4] = {NULL, t.y_ref};
  ref_find("softmax", "fwd")->fn(fa, dt, fo);
  tc_sweep_variants("softmax", "fwd", dt, D, run_fwd, check_fwd, &t, &(tc_out){t.y, bytes}, 1, t.shape);
  /* the backward takes the forward's y, and its reference that y */
  memcpy(t.y0, t.y, bytes);
  ref_slot ba[5] = {{.p = t.dy}, {.p = t.y0}, {0}, {.i = R}, {.i = D}};
  double *bo[5] = {NULL, NULL, t.dx_ref};
  ref_find("softmax", "bwd")->fn(ba, dt, bo);
  tc_sweep_variants("softmax", "bwd", dt, D, run_bwd, check_bwd, &t, &(tc_out){t.dx, bytes}, 1, t.shape);
  void *dx0 = malloc(bytes);
  memcpy(dx0, t.dx, bytes);
  /* outputs over their inputs: the same bits */
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.y, t.x, bytes);
  cr_assert_eq(ubg_softmax_fwd(ctx, dt, R, D, t.y, t.y), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, t.y0, bytes), "y over x differs");
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(ubg_softmax_bwd(ctx, dt, R, D, t.dx, t.y0, t.dx), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.dy), free(t.y), free(t.y0), free(t.dx), free(dx0), free(t.y_ref), free(t.dx_ref);
}

Test(softmax, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

/* rows of -Inf (all masked: NaN, as torch's), with a NaN (NaN), with a
 * single +Inf among finite values (NaN: exp(Inf - Inf)), and a -Inf among
 * finite ones (0 there) */
Test(softmax, special_rows) {
  enum { D = 5 };
  const float inf = 1.0f / 0.0f, nan = 0.0f / 0.0f;
  float x[4 * D] = {-inf, -inf, -inf, -inf, -inf, 1, nan, 2, 3, 4, 1, inf, 2, 3, 4, 0, -inf, 0, 0, 0}, y[4 * D];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_softmax_fwd(ctx, UBG_F32, 4, D, x, y), UBG_OK, "%s", ubg_ctx_error(ctx));
  for (int d = 0; d < 3 * D; d++) cr_assert(y[d] != y[d], "row %d col %d: %g, not NaN", d / D, d % D, y[d]);
  cr_assert(y[3 * D + 1] == 0.0f && y[3 * D] == 0.25f, "%g %g", y[3 * D + 1], y[3 * D]);
  ubg_ctx_destroy(ctx);
}

Test(softmax, refusals_write_nothing) {
  enum { N = 64 };
  float buf[2 * N], y[N];
  for (int i = 0; i < 2 * N; i++) buf[i] = (float)i;
  for (int i = 0; i < N; i++) y[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_softmax_fwd(ctx, UBG_F32, 1, N, buf, buf + 3), UBG_EINVAL, "y partly over x");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_softmax_fwd(ctx, UBG_F32, 1, 0, buf, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_softmax_bwd(ctx, UBG_F32, 1, N, buf, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "y"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < 2 * N; i++) cr_assert(buf[i] == (float)i);
  for (int i = 0; i < N; i++) cr_assert(y[i] == 7);
  ubg_ctx_destroy(ctx);
}
