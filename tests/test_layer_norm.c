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

/* one case: the inputs (x, dy: rows x cols; w, b: cols; the
 * backward's mean_in, rstd_in: the forward's mean and rstd), the outputs
 * (y, dx: as x; mean, rstd: rows, f32; dw, db: cols) and their references */
typedef struct {
  int dt;
  const ln_case *c;
  void *x, *w, *b, *dy, *y, *dx, *dw, *db;
  float *mean, *rstd, *mean_in, *rstd_in;
  double *y_ref, *mean_ref, *rstd_ref, *dx_ref, *dw_ref, *db_ref;
  char shape[80];
} ln_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  ln_state *t = state;
  const ln_case *c = t->c;
  return ubg_layer_norm_fwd(ctx, t->dt, c->rows, c->cols, t->x, t->w, t->b, EPS, t->y, t->mean, t->rstd);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  ln_state *t = state;
  const ln_case *c = t->c;
  return ubg_layer_norm_bwd(ctx, t->dt, c->rows, c->cols, t->dy, t->x, t->w, t->mean_in, t->rstd_in, t->dx, t->dw,
                            t->db);
}
/* y at the dtype's tolerance, mean and rstd (f32) at f32's */
static void check_fwd(void *state, const char *variant) {
  ln_state *t = state;
  const ln_case *c = t->c;
  const int dt = t->dt;
  const int64_t R = c->rows;
  tc_assert_close(t->y, dt, t->y_ref, R * c->cols, tol_atol[dt], tol_rtol[dt], "%s %s: y", variant, t->shape);
  tc_assert_close(t->mean, UBG_F32, t->mean_ref, R, tol_atol[UBG_F32], tol_rtol[UBG_F32], "%s %s: mean", variant,
                  t->shape);
  tc_assert_close(t->rstd, UBG_F32, t->rstd_ref, R, tol_atol[UBG_F32], tol_rtol[UBG_F32], "%s %s: rstd", variant,
                  t->shape);
}
static void check_bwd(void *state, const char *variant) {
  ln_state *t = state;
  const ln_case *c = t->c;
  const int dt = t->dt;
  const int64_t n = c->rows * c->cols;
  tc_assert_close(t->dx, dt, t->dx_ref, n, tol_atol[dt], tol_rtol[dt], "%s %s: dx", variant, t->shape);
  tc_assert_close(t->dw, dt, t->dw_ref, c->cols, tol_atol[dt], tol_rtol[dt], "%s %s: dw", variant, t->shape);
  tc_assert_close(t->db, dt, t->db_ref, c->cols, tol_atol[dt], tol_rtol[dt], "%s %s: db", variant, t->shape);
}

static void sweep(int dt, const ln_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, wbytes = (size_t)D * es, rbytes = (size_t)R * 4;
  ln_state t = {.dt = dt, .c = c};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s", (long long)R, (long long)D, ug_dtype_name(dt));
  t.x = tc_tensor(dt, n, 0.5, 2, (uint64_t)(n + 1)), t.w = tc_tensor(dt, D, 1, 0.5, 2), t.b = tc_tensor(dt, D, 0, 1, 3);
  t.dy = tc_tensor(dt, n, 0, 1, 4);
  t.y_ref = malloc((size_t)(n + 1) * sizeof(double)), t.mean_ref = malloc((size_t)(R + 1) * sizeof(double));
  t.rstd_ref = malloc((size_t)(R + 1) * sizeof(double)), t.dx_ref = malloc((size_t)(n + 1) * sizeof(double));
  t.dw_ref = malloc((size_t)D * sizeof(double)), t.db_ref = malloc((size_t)D * sizeof(double));
  ref_slot fa[9] = {{.p = t.x}, {.p = t.w}, {.p = t.b}, {0}, {0}, {0}, {.i = R}, {.i = D}, {.f = EPS}};
  double *fo[9] = {0};
  fo[3] = t.y_ref, fo[4] = t.mean_ref, fo[5] = t.rstd_ref;
  ref_find("layer_norm", "fwd")->fn(fa, dt, fo);
  t.y = malloc(bytes + 1), t.dx = malloc(bytes + 1), t.dw = malloc(wbytes), t.db = malloc(wbytes);
  t.mean = malloc((size_t)(R + 1) * 4), t.rstd = malloc((size_t)(R + 1) * 4);
  t.mean_in = malloc((size_t)(R + 1) * 4), t.rstd_in = malloc((size_t)(R + 1) * 4);
  const tc_out fwd_outs[3] = {{t.y, bytes}, {t.mean, rbytes}, {t.rstd, rbytes}};
  tc_sweep_variants("layer_norm", "fwd", dt, D, run_fwd, check_fwd, &t, fwd_outs, 3, t.shape);
  /* the backward takes the kernel's mean and rstd, and its reference them */
  memcpy(t.mean_in, t.mean, rbytes), memcpy(t.rstd_in, t.rstd, rbytes);
  ref_slot ba[10] = {{.p = t.dy}, {.p = t.x}, {.p = t.w}, {.p = t.mean_in}, {.p = t.rstd_in},
                     {0},         {0},        {0},        {.i = R},         {.i = D}};
  double *bo[10] = {0};
  bo[5] = t.dx_ref, bo[6] = t.dw_ref, bo[7] = t.db_ref;
  ref_find("layer_norm", "bwd")->fn(ba, dt, bo);
  const tc_out bwd_outs[3] = {{t.dx, bytes}, {t.dw, wbytes}, {t.db, wbytes}};
  tc_sweep_variants("layer_norm", "bwd", dt, D, run_bwd, check_bwd, &t, bwd_outs, 3, t.shape);
  void *dx0 = malloc(bytes + 1);
  memcpy(dx0, t.dx, bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  /* dx over dy: the same bits as the sweep's */
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(ubg_layer_norm_bwd(ctx, dt, R, D, t.dx, t.x, t.w, t.mean_in, t.rstd_in, t.dx, t.dw, t.db), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.w), free(t.b), free(t.dy), free(t.y_ref), free(t.mean_ref), free(t.rstd_ref), free(t.dx_ref);
  free(t.dw_ref), free(t.db_ref), free(t.y), free(t.dx), free(t.dw), free(t.db), free(t.mean), free(t.rstd);
  free(t.mean_in), free(t.rstd_in), free(dx0);
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
