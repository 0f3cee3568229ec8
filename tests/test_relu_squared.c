/* Squared ReLU against the double-precision reference
 * (specs/relu_squared_ref.c): every feasible variant, forced, over rows x
 * cols from 1 x 1 to shapes above the largest block (2 x 20000) and
 * Liger's benchmark width (64 x 4096), every dtype, with NaN, +-Inf and
 * +-0 among the inputs; every variant and 1 or 2 threads give the same
 * bits; dx over dy and over x, y over x, the same bits; an output
 * overlapping its input partly is refused with nothing written.
 *
 * Tolerances: Liger-Kernel's test_relu_squared.py uses f32 1e-5 / 1e-5 and
 * bf16 1e-1 / 5e-2; here bf16 and f16 1e-2 / 1e-2 (one rounding to the
 * dtype). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} rs_case;

static const rs_case cases[] = {{1, 1}, {3, 123}, {7, 4097}, {2, 20000}, {64, 4096}};
static const double tol_atol[3] = {1e-5, 1e-2, 1e-2}, tol_rtol[3] = {1e-5, 1e-2, 1e-2};

/* one dtype and shape: the inputs (x, dy: rows x cols), the output of the
 * pass that runs (y or dx) and its reference */
typedef struct {
  int dt;
  int64_t R, D;
  void *x, *dy, *out;
  const double *want;
  char shape[48];
} rs_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  rs_state *t = state;
  return ubg_relu_squared_fwd(ctx, t->dt, t->R, t->D, t->x, t->out);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  rs_state *t = state;
  return ubg_relu_squared_bwd(ctx, t->dt, t->R, t->D, t->dy, t->x, t->out);
}
static void check_fwd(void *state, const char *variant) {
  rs_state *t = state;
  tc_assert_close(t->out, t->dt, t->want, t->R * t->D, tol_atol[t->dt], tol_rtol[t->dt], "%s %s: y", variant,
                  t->shape);
}
static void check_bwd(void *state, const char *variant) {
  rs_state *t = state;
  tc_assert_close(t->out, t->dt, t->want, t->R * t->D, tol_atol[t->dt], tol_rtol[t->dt], "%s %s: dx", variant,
                  t->shape);
}

static void sweep(int dt, const rs_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  void *x = tc_tensor(dt, n, 0, 2, (uint64_t)(n + 1)), *dy = tc_tensor(dt, n, 0, 1, 2);
  const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  for (int64_t i = 0; i < n && i < 5; i++) ref_store(x, i * 7 % n, dt, specials[i]);
  double *y_ref = malloc((size_t)n * sizeof(double)), *dx_ref = malloc((size_t)n * sizeof(double));
  ref_slot fa[4] = {{.p = x}, {0}, {.i = R}, {.i = D}};
  double *fo[4] = {NULL, y_ref};
  ref_find("relu_squared", "fwd")->fn(fa, dt, fo);
  ref_slot ba[5] = {{.p = dy}, {.p = x}, {0}, {.i = R}, {.i = D}};
  double *bo[5] = {NULL, NULL, dx_ref};
  ref_find("relu_squared", "bwd")->fn(ba, dt, bo);
  rs_state t = {.dt = dt, .R = R, .D = D, .x = x, .dy = dy, .out = malloc(bytes)};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s", (long long)R, (long long)D, ug_dtype_name(dt));
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    t.want = pass ? dx_ref : y_ref;
    tc_sweep_variants("relu_squared", pn, dt, 0, pass ? run_bwd : run_fwd, pass ? check_bwd : check_fwd, &t,
                      &(tc_out){t.out, bytes}, 1, t.shape);
    /* the output over its inputs: the same bits as the sweep's (t.out) */
    for (int over = 0; over < (pass ? 2 : 1); over++) {
      void *io = malloc(bytes);
      memcpy(io, over ? x : (pass ? dy : x), bytes);
      const ubg_status s = !pass ? ubg_relu_squared_fwd(ctx, dt, R, D, io, io)
                           : over ? ubg_relu_squared_bwd(ctx, dt, R, D, dy, io, io)
                                  : ubg_relu_squared_bwd(ctx, dt, R, D, io, x, io);
      cr_assert_eq(s, UBG_OK, "%s", ubg_ctx_error(ctx));
      cr_assert(!memcmp(io, t.out, bytes), "%s written over its input %d differs", pn, over);
      free(io);
    }
  }
  ubg_ctx_destroy(ctx);
  free(x), free(dy), free(y_ref), free(dx_ref), free(t.out);
}

Test(relu_squared, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

Test(relu_squared, refusals_write_nothing) {
  enum { N = 64 };
  float buf[2 * N], y[N];
  for (int i = 0; i < 2 * N; i++) buf[i] = (float)i;
  for (int i = 0; i < N; i++) y[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_relu_squared_fwd(ctx, UBG_F32, 1, N, buf, buf + 1), UBG_EINVAL, "y one element past x");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_relu_squared_fwd(ctx, UBG_F32, 1, 0, buf, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_relu_squared_bwd(ctx, UBG_F32, 1, N, buf, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "x"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < 2 * N; i++) cr_assert(buf[i] == (float)i);
  for (int i = 0; i < N; i++) cr_assert(y[i] == 7);
  ubg_ctx_destroy(ctx);
}
