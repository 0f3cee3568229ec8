/* Shared by the softmax and sparsemax suites: ops of one row tensor whose
 * forward gives y = f(x) and whose backward takes dy and that y,
 *   x, y, dy, dx : [rows, cols]
 * swept over every variant against the double reference, then the same
 * bits written over the inputs (y over x, dx over dy). */
#ifndef UBG_TEST_ROW_PROB_SWEEP_H
#define UBG_TEST_ROW_PROB_SWEEP_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} row_case;

/* an op: its kernel name, C entry points, x's spread and tolerances (per
 * dtype; forward and backward atol apart) */
typedef struct {
  const char *kernel;
  ubg_status (*fwd)(ubg_ctx *, ubg_dtype, int64_t, int64_t, const void *, void *);
  ubg_status (*bwd)(ubg_ctx *, ubg_dtype, int64_t, int64_t, const void *, const void *, void *);
  double x_spread;
  double atol_fwd[3], atol_bwd[3], rtol[3];
} row_prob_op;

/* one dtype and shape: the inputs (x, dy, and y0, the forward's y that the
 * backward takes), the outputs (y, dx) and their references (y_ref, dx_ref) */
typedef struct {
  const row_prob_op *op;
  int dt;
  int64_t R, D;
  void *x, *dy, *y, *y0, *dx;
  double *y_ref, *dx_ref;
  char shape[48];
} row_prob_state;

static ubg_status row_prob_run_fwd(ubg_ctx *ctx, void *state) {
  row_prob_state *t = state;
  return t->op->fwd(ctx, t->dt, t->R, t->D, t->x, t->y);
}
/* dx from the forward's y (y0) */
static ubg_status row_prob_run_bwd(ubg_ctx *ctx, void *state) {
  row_prob_state *t = state;
  return t->op->bwd(ctx, t->dt, t->R, t->D, t->dy, t->y0, t->dx);
}
static void row_prob_check_fwd(void *state, const char *variant) {
  row_prob_state *t = state;
  tc_assert_close(t->y, t->dt, t->y_ref, t->R * t->D, t->op->atol_fwd[t->dt], t->op->rtol[t->dt], "%s %s: y",
                  variant, t->shape);
}
static void row_prob_check_bwd(void *state, const char *variant) {
  row_prob_state *t = state;
  tc_assert_close(t->dx, t->dt, t->dx_ref, t->R * t->D, t->op->atol_bwd[t->dt], t->op->rtol[t->dt], "%s %s: dx",
                  variant, t->shape);
}

static void row_prob_sweep(const row_prob_op *op, int dt, const row_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  row_prob_state t = {.op = op, .dt = dt, .R = R, .D = D,
                      .x = tc_tensor(dt, n, 0, op->x_spread, (uint64_t)(n + 1)), .dy = tc_tensor(dt, n, 0, 1, 2)};
  t.y = malloc(bytes), t.y0 = malloc(bytes), t.dx = malloc(bytes);
  t.y_ref = malloc((size_t)n * sizeof(double)), t.dx_ref = malloc((size_t)n * sizeof(double));
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s", (long long)R, (long long)D, ug_dtype_name(dt));
  ref_slot fa[4] = {{.p = t.x}, {0}, {.i = R}, {.i = D}};
  double *fo[4] = {NULL, t.y_ref};
  ref_find(op->kernel, "fwd")->fn(fa, dt, fo);
  tc_sweep_variants(op->kernel, "fwd", dt, D, row_prob_run_fwd, row_prob_check_fwd, &t, &(tc_out){t.y, bytes}, 1,
                    t.shape);
  /* the backward takes the forward's y, and its reference that y */
  memcpy(t.y0, t.y, bytes);
  ref_slot ba[5] = {{.p = t.dy}, {.p = t.y0}, {0}, {.i = R}, {.i = D}};
  double *bo[5] = {NULL, NULL, t.dx_ref};
  ref_find(op->kernel, "bwd")->fn(ba, dt, bo);
  tc_sweep_variants(op->kernel, "bwd", dt, D, row_prob_run_bwd, row_prob_check_bwd, &t, &(tc_out){t.dx, bytes}, 1,
                    t.shape);
  void *dx0 = malloc(bytes);
  memcpy(dx0, t.dx, bytes);
  /* outputs over their inputs: the same bits */
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.y, t.x, bytes);
  cr_assert_eq(op->fwd(ctx, dt, R, D, t.y, t.y), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, t.y0, bytes), "%s: y over x differs", t.shape);
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(op->bwd(ctx, dt, R, D, t.dx, t.y0, t.dx), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "%s: dx over dy differs", t.shape);
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.dy), free(t.y), free(t.y0), free(t.dx), free(dx0), free(t.y_ref), free(t.dx_ref);
}

#endif
