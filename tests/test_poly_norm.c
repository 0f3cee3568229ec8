/* PolyNorm against the double-precision reference (specs/poly_norm_ref.c):
 * every feasible variant, forced, over rows x cols from 1 x 1 to rows
 * longer than any whole-row variant holds (2 x 70000), every dtype,
 * forward (y, rstd) and backward (dx, dw, db, from the reference's rstd);
 * every variant and 1 or 2 threads give the same bits; y over x and dx
 * over dy give the same bits; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_poly_norm.py uses atol 1e-4 to 3e-4 and
 * rtol 1e-6 in f32 against torch's f32. Here, against double: the forward
 * f32 at 1e-5 / 1e-5, the backward at 1e-4 / 1e-5 (dw and db sum up to
 * 262,144 terms, in double, but their terms are f32 products); f16 1e-2,
 * bf16 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} poly_case;

static const poly_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {1, 4097}, {3, 20000}, {2, 70000}, {64, 4096}};
static const double atol_fwd[3] = {1e-5, 1e-2, 2e-2}, atol_bwd[3] = {1e-4, 1e-2, 2e-2};
static const double rtol[3] = {1e-5, 1e-2, 2e-2};

/* one dtype and shape: the inputs (x, dy: rows x cols; w: 3; b: 1; the
 * backward's rstd_in: rows x 3, the reference's as floats), the outputs
 * (y, dx: rows x cols; rstd: rows x 3; dw: 3; db: 1) and their references */
typedef struct {
  int dt;
  int64_t R, D;
  float eps;
  void *x, *w, *b, *dy, *y, *dx, *dw, *db;
  float *rstd_in, *rstd;
  double *y_ref, *dx_ref, *rstd_ref, dw_ref[3], db_ref;
  char shape[48];
} poly_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  poly_state *t = state;
  return ubg_poly_norm_fwd(ctx, t->dt, t->R, t->D, t->x, t->w, t->b, t->eps, t->y, t->rstd);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  poly_state *t = state;
  return ubg_poly_norm_bwd(ctx, t->dt, t->R, t->D, t->dy, t->x, t->w, t->rstd_in, t->dx, t->dw, t->db);
}
static void check_fwd(void *state, const char *variant) {
  poly_state *t = state;
  const int dt = t->dt;
  tc_assert_close(t->y, dt, t->y_ref, t->R * t->D, atol_fwd[dt], rtol[dt], "%s %s: y", variant, t->shape);
  tc_assert_close(t->rstd, UBG_F32, t->rstd_ref, 3 * t->R, 0, rtol[UBG_F32], "%s %s: rstd", variant, t->shape);
}
static void check_bwd(void *state, const char *variant) {
  poly_state *t = state;
  const int dt = t->dt;
  tc_assert_close(t->dx, dt, t->dx_ref, t->R * t->D, atol_bwd[dt], rtol[dt], "%s %s: dx", variant, t->shape);
  tc_assert_close(t->dw, dt, t->dw_ref, 3, atol_bwd[dt], rtol[dt], "%s %s: dw", variant, t->shape);
  tc_assert_close(t->db, dt, &t->db_ref, 1, atol_bwd[dt], rtol[dt], "%s %s: db", variant, t->shape);
}

static void sweep(int dt, const poly_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, rstd_bytes = (size_t)R * 3 * sizeof(float);
  poly_state t = {.dt = dt, .R = R, .D = D, .eps = 1e-6f};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s", (long long)R, (long long)D, ug_dtype_name(dt));
  t.x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), t.w = tc_tensor(dt, 3, 0.3, 0.2, 2);
  t.b = tc_tensor(dt, 1, 0.1, 0.5, 3), t.dy = tc_tensor(dt, n, 0, 1, 5);
  t.y_ref = malloc((size_t)n * sizeof(double)), t.dx_ref = malloc((size_t)n * sizeof(double));
  t.rstd_ref = malloc((size_t)R * 3 * sizeof(double));
  t.rstd_in = malloc(rstd_bytes);
  ref_slot fa[8] = {{.p = t.x}, {.p = t.w}, {.p = t.b}, {0}, {0}, {.i = R}, {.i = D}, {.f = t.eps}};
  double *fo[8] = {0};
  fo[3] = t.y_ref, fo[4] = t.rstd_ref;
  ref_find("poly_norm", "fwd")->fn(fa, dt, fo);
  for (int64_t i = 0; i < 3 * R; i++) t.rstd_in[i] = (float)t.rstd_ref[i];
  ref_slot ba[9] = {{.p = t.dy}, {.p = t.x}, {.p = t.w}, {.p = t.rstd_in}, {0}, {0}, {0}, {.i = R}, {.i = D}};
  double *bo[9] = {0};
  bo[4] = t.dx_ref, bo[5] = t.dw_ref, bo[6] = &t.db_ref;
  ref_find("poly_norm", "bwd")->fn(ba, dt, bo);
  t.y = malloc(bytes), t.dx = malloc(bytes), t.dw = malloc(3 * es), t.db = malloc(es), t.rstd = malloc(rstd_bytes);
  const tc_out fwd_outs[2] = {{t.y, bytes}, {t.rstd, rstd_bytes}};
  tc_sweep_variants("poly_norm", "fwd", dt, D, run_fwd, check_fwd, &t, fwd_outs, 2, t.shape);
  const tc_out bwd_outs[3] = {{t.dx, bytes}, {t.dw, 3 * es}, {t.db, es}};
  tc_sweep_variants("poly_norm", "bwd", dt, D, run_bwd, check_bwd, &t, bwd_outs, 3, t.shape);
  /* y over x, dx over dy: the same bits as the sweeps' */
  void *y0 = malloc(bytes), *dx0 = malloc(bytes);
  memcpy(y0, t.y, bytes), memcpy(dx0, t.dx, bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.y, t.x, bytes);
  cr_assert_eq(ubg_poly_norm_fwd(ctx, dt, R, D, t.y, t.w, t.b, t.eps, t.y, t.rstd), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, y0, bytes), "y over x differs");
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(ubg_poly_norm_bwd(ctx, dt, R, D, t.dx, t.x, t.w, t.rstd_in, t.dx, t.dw, t.db), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.w), free(t.b), free(t.dy), free(t.y_ref), free(t.dx_ref), free(t.rstd_ref), free(t.rstd_in);
  free(t.y), free(t.dx), free(t.dw), free(t.db), free(t.rstd), free(y0), free(dx0);
}

Test(poly_norm, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

/* a row of zeros: rstd_p = 1 / sqrt(eps), y = b, dx = w2 rstd_1 dy (norm(x)'s
 * slope at 0), dw = 0; nothing is NaN */
Test(poly_norm, zero_row) {
  enum { D = 5 };
  float x[D] = {0}, w[3] = {0.3f, 0.4f, 0.3f}, b[1] = {0.1f}, y[D], rstd[3], dy[D], dx[D], dw[3], db[1];
  for (int i = 0; i < D; i++) dy[i] = (float)i - 2.0f;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_poly_norm_fwd(ctx, UBG_F32, 1, D, x, w, b, 1e-6f, y, rstd), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_poly_norm_bwd(ctx, UBG_F32, 1, D, dy, x, w, rstd, dx, dw, db), UBG_OK, "%s", ubg_ctx_error(ctx));
  for (int p = 0; p < 3; p++) cr_assert(fabsf(rstd[p] - 1000.0f) < 1e-3f, "rstd[%d] = %.9g", p, rstd[p]);
  for (int i = 0; i < D; i++)
    cr_assert(y[i] == b[0] && dx[i] == dy[i] * (w[2] * rstd[2]), "y[%d] = %g, dx[%d] = %g", i, y[i], i, dx[i]);
  cr_assert(dw[0] == 0 && dw[1] == 0 && dw[2] == 0 && db[0] == 0, "%g %g %g %g", dw[0], dw[1], dw[2], db[0]);
  ubg_ctx_destroy(ctx);
}

Test(poly_norm, refusals_write_nothing) {
  enum { R = 2, D = 8 };
  float x[R * D], w[3] = {0.3f, 0.4f, 0.3f}, b[1] = {0.1f}, y[R * D], rstd[3 * R], dx[R * D], dw[3] = {7, 7, 7};
  float db[1] = {7};
  for (int i = 0; i < R * D; i++) x[i] = (float)i, y[i] = dx[i] = 7;
  for (int i = 0; i < 3 * R; i++) rstd[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_poly_norm_fwd(ctx, UBG_F32, R, D, x, NULL, b, 1e-6f, y, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "w"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_poly_norm_fwd(ctx, UBG_F32, R, D, x, w, b, 1e-6f, y, NULL), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "rstd"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_poly_norm_fwd(ctx, UBG_F32, R, 0, x, w, b, 1e-6f, y, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_poly_norm_fwd(ctx, UBG_F32, R, D, x, w, b, 0.0f / 0.0f, y, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_poly_norm_bwd(ctx, UBG_F32, R, D, x, x, w, rstd, dx, dw, NULL), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "db"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_poly_norm_bwd(ctx, UBG_F32, R, D, x, x, w, rstd, dx, w, db), UBG_EINVAL, "dw over w");
  cr_assert_eq(ubg_poly_norm_bwd(ctx, UBG_F32, R, D, x, x, w, rstd, x, dw, db), UBG_EINVAL, "dx over x");
  for (int i = 0; i < R * D; i++) cr_assert(y[i] == 7 && dx[i] == 7 && x[i] == (float)i);
  for (int i = 0; i < 3 * R; i++) cr_assert(rstd[i] == 7);
  cr_assert(dw[0] == 7 && db[0] == 7 && w[0] == 0.3f);
  ubg_ctx_destroy(ctx);
}
