/* GroupNorm against the double-precision reference (specs/group_norm_ref.c):
 * every feasible variant, forced, over x [batch, groups, cols] from one
 * element to rows longer than any whole-row variant holds, channels of
 * one element and of more than a tile, channel ends inside a tile and a
 * channel across tiles, an empty batch; every dtype, forward (y, mean,
 * rstd) and backward (dx, dw, db from the forward's mean and rstd); every
 * variant and 1 or 2 threads give the same bits; dx over dy gives the same
 * bits; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_group_norm.py uses atol = rtol = 1e-4
 * (f32, against torch.nn.GroupNorm). Here f32 1e-4 / 1e-5, as LayerNorm's:
 * rows of up to 131,072 elements sum in f32 lanes, where the reference sums
 * in double (dw and db, up to 16 x 4096 terms each, sum in double); f16
 * 1e-2, bf16 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t batch, channels, groups, cols;
} gn_case;

/* Liger's shapes ({1, 1, 1, 3}, {1, 32, 32, 4}, {16, 32, 1, 32 x 4096}, {2, 63, 21, 3 x 2163}) and the edges above */
static const gn_case cases[] = {{1, 1, 1, 1},     {1, 1, 1, 3},          {1, 32, 32, 4}, {3, 6, 2, 15},
                                {5, 12, 3, 492},  {2, 63, 21, 6489},     {2, 8, 2, 40000},
                                {16, 32, 1, 131072}, {0, 4, 2, 6}};
static const double tol_atol[3] = {1e-4, 1e-2, 2e-2}, tol_rtol[3] = {1e-5, 1e-2, 2e-2};
static const float EPS = 1e-6f;

/* one case: the inputs (x, dy: batch x groups x cols; w, b: channels; the
 * backward's mean_in, rstd_in: the forward's mean and rstd), the outputs
 * (y, dx: as x; mean, rstd: batch x groups, f32; dw, db: channels) and their references */
typedef struct {
  int dt;
  const gn_case *c;
  void *x, *w, *b, *dy, *y, *dx, *dw, *db;
  float *mean, *rstd, *mean_in, *rstd_in;
  double *y_ref, *mean_ref, *rstd_ref, *dx_ref, *dw_ref, *db_ref;
  char shape[80];
} gn_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  gn_state *t = state;
  const gn_case *c = t->c;
  return ubg_group_norm_fwd(ctx, t->dt, c->batch, c->channels, c->groups, c->cols, t->x, t->w, t->b, EPS, t->y,
                            t->mean, t->rstd);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  gn_state *t = state;
  const gn_case *c = t->c;
  return ubg_group_norm_bwd(ctx, t->dt, c->batch, c->channels, c->groups, c->cols, t->dy, t->x, t->w, t->mean_in,
                            t->rstd_in, t->dx, t->dw, t->db);
}
/* y at the dtype's tolerance, mean and rstd (f32) at f32's */
static void check_fwd(void *state, const char *variant) {
  gn_state *t = state;
  const gn_case *c = t->c;
  const int dt = t->dt;
  const int64_t R = c->batch * c->groups;
  tc_assert_close(t->y, dt, t->y_ref, R * c->cols, tol_atol[dt], tol_rtol[dt], "%s %s: y", variant, t->shape);
  tc_assert_close(t->mean, UBG_F32, t->mean_ref, R, tol_atol[UBG_F32], tol_rtol[UBG_F32], "%s %s: mean", variant,
                  t->shape);
  tc_assert_close(t->rstd, UBG_F32, t->rstd_ref, R, tol_atol[UBG_F32], tol_rtol[UBG_F32], "%s %s: rstd", variant,
                  t->shape);
}
static void check_bwd(void *state, const char *variant) {
  gn_state *t = state;
  const gn_case *c = t->c;
  const int dt = t->dt;
  const int64_t n = c->batch * c->groups * c->cols;
  tc_assert_close(t->dx, dt, t->dx_ref, n, tol_atol[dt], tol_rtol[dt], "%s %s: dx", variant, t->shape);
  tc_assert_close(t->dw, dt, t->dw_ref, c->channels, tol_atol[dt], tol_rtol[dt], "%s %s: dw", variant, t->shape);
  tc_assert_close(t->db, dt, t->db_ref, c->channels, tol_atol[dt], tol_rtol[dt], "%s %s: db", variant, t->shape);
}

static void sweep(int dt, const gn_case *c) {
  const int64_t B = c->batch, C = c->channels, G = c->groups, D = c->cols, R = B * G, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, wbytes = (size_t)C * es, rbytes = (size_t)R * 4;
  gn_state t = {.dt = dt, .c = c};
  snprintf(t.shape, sizeof t.shape, "%lldx%lldx%lld (%lld groups) %s", (long long)B, (long long)C, (long long)D,
           (long long)G, ug_dtype_name(dt));
  t.x = tc_tensor(dt, n, 0.5, 2, (uint64_t)(n + 1)), t.w = tc_tensor(dt, C, 1, 0.5, 2), t.b = tc_tensor(dt, C, 0, 1, 3);
  t.dy = tc_tensor(dt, n, 0, 1, 4);
  t.y_ref = malloc((size_t)(n + 1) * sizeof(double)), t.mean_ref = malloc((size_t)(R + 1) * sizeof(double));
  t.rstd_ref = malloc((size_t)(R + 1) * sizeof(double)), t.dx_ref = malloc((size_t)(n + 1) * sizeof(double));
  t.dw_ref = malloc((size_t)C * sizeof(double)), t.db_ref = malloc((size_t)C * sizeof(double));
  ref_slot fa[11] = {{.p = t.x}, {.p = t.w}, {.p = t.b}, {0},      {0},      {0},
                     {.i = B},   {.i = C},   {.i = G},   {.i = D}, {.f = EPS}};
  double *fo[11] = {0};
  fo[3] = t.y_ref, fo[4] = t.mean_ref, fo[5] = t.rstd_ref;
  ref_find("group_norm", "fwd")->fn(fa, dt, fo);
  t.y = malloc(bytes + 1), t.dx = malloc(bytes + 1), t.dw = malloc(wbytes), t.db = malloc(wbytes);
  t.mean = malloc((size_t)(R + 1) * 4), t.rstd = malloc((size_t)(R + 1) * 4);
  t.mean_in = malloc((size_t)(R + 1) * 4), t.rstd_in = malloc((size_t)(R + 1) * 4);
  const tc_out fwd_outs[3] = {{t.y, bytes}, {t.mean, rbytes}, {t.rstd, rbytes}};
  tc_sweep_variants("group_norm", "fwd", dt, D, run_fwd, check_fwd, &t, fwd_outs, 3, t.shape);
  /* the backward takes the kernel's mean and rstd, and its reference them */
  void *y0 = malloc(bytes + 1);
  memcpy(y0, t.y, bytes), memcpy(t.mean_in, t.mean, rbytes), memcpy(t.rstd_in, t.rstd, rbytes);
  ref_slot ba[12] = {{.p = t.dy}, {.p = t.x}, {.p = t.w}, {.p = t.mean_in}, {.p = t.rstd_in}, {0},
                     {0},         {0},        {.i = B},   {.i = C},         {.i = G},         {.i = D}};
  double *bo[12] = {0};
  bo[5] = t.dx_ref, bo[6] = t.dw_ref, bo[7] = t.db_ref;
  ref_find("group_norm", "bwd")->fn(ba, dt, bo);
  const tc_out bwd_outs[3] = {{t.dx, bytes}, {t.dw, wbytes}, {t.db, wbytes}};
  tc_sweep_variants("group_norm", "bwd", dt, D, run_bwd, check_bwd, &t, bwd_outs, 3, t.shape);
  void *dx0 = malloc(bytes + 1);
  memcpy(dx0, t.dx, bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  /* dx over dy, y over x: the same bits as the sweeps' */
  memcpy(t.y, t.x, bytes);
  cr_assert_eq(ubg_group_norm_fwd(ctx, dt, B, C, G, D, t.y, t.w, t.b, EPS, t.y, t.mean, t.rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, y0, bytes), "y over x differs");
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(ubg_group_norm_bwd(ctx, dt, B, C, G, D, t.dx, t.x, t.w, t.mean_in, t.rstd_in, t.dx, t.dw, t.db),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.w), free(t.b), free(t.dy), free(t.y_ref), free(t.mean_ref), free(t.rstd_ref), free(t.dx_ref);
  free(t.dw_ref), free(t.db_ref), free(t.y), free(t.dx), free(t.dw), free(t.db), free(t.mean), free(t.rstd);
  free(t.mean_in), free(t.rstd_in), free(y0), free(dx0);
}

Test(group_norm, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

Test(group_norm, refusals_write_nothing) {
  enum { B = 2, C = 4, G = 2, D = 6 };
  float x[B * G * D], w[C], b[C], y[B * G * D], mean[B * G], rstd[B * G], dx[B * G * D], dw[C], db[C];
  for (int i = 0; i < B * G * D; i++) x[i] = (float)i, y[i] = dx[i] = 7;
  for (int i = 0; i < C; i++) w[i] = 1, b[i] = 0, dw[i] = db[i] = 7;
  for (int i = 0; i < B * G; i++) mean[i] = rstd[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, 3, D, x, w, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "channels=4") && strstr(ubg_ctx_error(ctx), "groups=3"), "%s",
            ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, 5, x, w, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols=5"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, D, x, NULL, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "w is NULL"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, D, x, w, b, 1.0f / 0.0f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, 0, D, x, w, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "groups = 0"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, D, x, w, b, 1e-6f, y, mean, mean), UBG_EINVAL, "rstd over mean");
  cr_assert_eq(ubg_group_norm_bwd(ctx, UBG_F32, B, C, G, D, x, x, w, mean, rstd, dx, dw, w), UBG_EINVAL, "db over w");
  cr_assert_eq(ubg_group_norm_bwd(ctx, UBG_F32, B, 8, G, D, x, x, w, mean, rstd, dx, dw, db), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols=6"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < B * G * D; i++) cr_assert(y[i] == 7 && dx[i] == 7);
  for (int i = 0; i < C; i++) cr_assert(dw[i] == 7 && db[i] == 7 && w[i] == 1);
  cr_assert(mean[0] == 7 && rstd[B * G - 1] == 7);
  ubg_ctx_destroy(ctx);
}
