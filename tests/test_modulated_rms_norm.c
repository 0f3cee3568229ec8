/* Modulated RMSNorm against the double-precision reference
 * (specs/modulated_rms_norm_ref.c): every feasible variant, forced, every
 * dtype and casting mode, with and without w and shift, over shapes from
 * 1 x 1 to rows longer than any whole-row variant holds (4 x 20000), with
 * scale and shift shared by every row (mod_rows 1), by blocks of rows (a
 * batch's) and per row, including blocks cut by the backward's row groups;
 * forward (y, rstd) and backward (dx, dw, dscale, dshift). Every variant and
 * 1 or 2 threads give the same bits; dx over dy and y over x give the same
 * bits; refusals name the argument and write nothing.
 *
 * Tolerances: Liger-Kernel's test_modulated_rms_norm.py uses atol 1e-4,
 * rtol 1e-6 in f32 and 1e-1, 2e-2 in bf16; here f32 1e-4 / 1e-5 (dscale
 * of a shared row sums up to 615 rows in f32), f16 1e-2 / 1e-2 and bf16
 * 1e-1 / 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols, mod_rows;
  int casting;
  bool with_w, with_shift;
} mrms_case;

static const mrms_case cases[] = {
    {1, 1, 1, UBG_CAST_LLAMA, true, true},        {7, 3, 7, UBG_CAST_GEMMA, true, true},
    {6, 123, 2, UBG_CAST_NONE, true, false},       {5, 123, 1, UBG_CAST_LLAMA, false, false},
    {70, 256, 7, UBG_CAST_GEMMA, true, true},      {200, 64, 2, UBG_CAST_LLAMA, true, true},
    {615, 123, 5, UBG_CAST_NONE, false, true},     {256, 512, 2, UBG_CAST_LLAMA, true, true},
    {2, 4097, 1, UBG_CAST_LLAMA, true, true},      {4, 20000, 2, UBG_CAST_GEMMA, true, false},
};
static const double tol_abs[3] = {1e-4, 1e-2, 1e-1}, tol_rel[3] = {1e-5, 1e-2, 2e-2};

/* one case: the inputs (x, dy: rows x cols; w: cols or NULL; scale, shift:
 * mod_rows x cols, shift NULL for none; the backward's rstd_in: the
 * forward's rstd), the outputs (y, dx: rows x cols; rstd: rows, f32; dw:
 * cols; dscale, dshift: mod_rows x cols; dw and dshift NULL where w and
 * shift are) and their references */
typedef struct {
  int dt;
  const mrms_case *c;
  float eps, offset;
  void *x, *dy, *w, *scale, *shift;
  void *y, *dx, *dw, *dscale, *dshift;
  float *rstd, *rstd_in;
  double *y_ref, *rstd_ref, *dx_ref, *dw_ref, *ds_ref, *dh_ref;
  char shape[80];
} mrms_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  mrms_state *t = state;
  const mrms_case *c = t->c;
  return ubg_modulated_rms_norm_fwd(ctx, t->dt, c->rows, c->cols, c->mod_rows, t->x, t->w, t->scale, t->shift, t->eps,
                                    t->offset, c->casting, t->y, t->rstd);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  mrms_state *t = state;
  const mrms_case *c = t->c;
  return ubg_modulated_rms_norm_bwd(ctx, t->dt, c->rows, c->cols, c->mod_rows, t->dy, t->x, t->w, t->scale,
                                    t->rstd_in, t->offset, c->casting, t->dx, t->dw, t->dscale, t->dshift);
}
/* y at the dtype's tolerance, rstd within 1e-5 relative */
static void check_fwd(void *state, const char *variant) {
  mrms_state *t = state;
  const int dt = t->dt;
  tc_assert_close(t->y, dt, t->y_ref, t->c->rows * t->c->cols, tol_abs[dt], tol_rel[dt], "%s %s: y", variant,
                  t->shape);
  tc_assert_close(t->rstd, UBG_F32, t->rstd_ref, t->c->rows, 0, 1e-5, "%s %s: rstd", variant, t->shape);
}
static void check_bwd(void *state, const char *variant) {
  mrms_state *t = state;
  const int dt = t->dt;
  const int64_t D = t->c->cols, MD = t->c->mod_rows * D;
  tc_assert_close(t->dx, dt, t->dx_ref, t->c->rows * D, tol_abs[dt], tol_rel[dt], "%s %s: dx", variant, t->shape);
  if (t->dw) tc_assert_close(t->dw, dt, t->dw_ref, D, tol_abs[dt], tol_rel[dt], "%s %s: dw", variant, t->shape);
  tc_assert_close(t->dscale, dt, t->ds_ref, MD, tol_abs[dt], tol_rel[dt], "%s %s: dscale", variant, t->shape);
  if (t->dshift)
    tc_assert_close(t->dshift, dt, t->dh_ref, MD, tol_abs[dt], tol_rel[dt], "%s %s: dshift", variant, t->shape);
}

static void sweep(int dt, const mrms_case *c) {
  const int64_t R = c->rows, D = c->cols, M = c->mod_rows, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, w_bytes = (size_t)D * es;
  const size_t mod_bytes = (size_t)(M * D) * es, rstd_bytes = (size_t)R * sizeof(float);
  mrms_state t = {.dt = dt, .c = c, .eps = 1e-6f, .offset = c->casting == UBG_CAST_GEMMA ? 1.0f : 0.0f};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld mod_rows %lld casting %d %s", (long long)R, (long long)D,
           (long long)M, c->casting, ug_dtype_name(dt));
  t.x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), t.dy = tc_tensor(dt, n, 0, 1, 5);
  t.w = c->with_w ? tc_tensor(dt, D, c->casting == UBG_CAST_GEMMA ? 0 : 1, 0.5, 2) : NULL;
  t.scale = tc_tensor(dt, M * D, 0, 0.1, 3), t.shift = c->with_shift ? tc_tensor(dt, M * D, 0, 0.1, 4) : NULL;
  t.y_ref = malloc((size_t)n * sizeof(double)), t.rstd_ref = malloc((size_t)R * sizeof(double));
  t.dx_ref = malloc((size_t)n * sizeof(double)), t.dw_ref = malloc((size_t)D * sizeof(double));
  t.ds_ref = malloc((size_t)(M * D) * sizeof(double)), t.dh_ref = malloc((size_t)(M * D) * sizeof(double));
  t.y = malloc(bytes + 1), t.dx = malloc(bytes + 1), t.dscale = malloc(mod_bytes);
  t.dw = c->with_w ? malloc(w_bytes) : NULL, t.dshift = c->with_shift ? malloc(mod_bytes) : NULL;
  t.rstd = malloc(rstd_bytes + 1), t.rstd_in = malloc(rstd_bytes + 1);
  ref_slot fa[12] = {{.p = t.x}, {.p = t.w}, {.p = t.scale}, {.p = t.shift}, {0},          {0},
                     {.i = R},   {.i = D},   {.i = M},       {.f = t.eps},   {.f = t.offset}, {.i = c->casting}};
  double *fo[12] = {0};
  fo[4] = t.y_ref, fo[5] = t.rstd_ref;
  ref_find("modulated_rms_norm", "fwd")->fn(fa, dt, fo);
  const tc_out fwd_outs[2] = {{t.y, bytes}, {t.rstd, rstd_bytes}};
  tc_sweep_variants("modulated_rms_norm", "fwd", dt, D, run_fwd, check_fwd, &t, fwd_outs, 2, t.shape);
  /* the backward takes the forward's rstd, and its reference that rstd */
  void *y0 = malloc(bytes + 1);
  memcpy(y0, t.y, bytes), memcpy(t.rstd_in, t.rstd, rstd_bytes);
  ref_slot ba[14] = {{.p = t.dy}, {.p = t.x}, {.p = t.w}, {.p = t.scale},  {.p = t.rstd_in}, {0}, {0}, {0}, {0},
                     {.i = R},    {.i = D},   {.i = M},   {.f = t.offset}, {.i = c->casting}};
  double *bo[14] = {0};
  bo[5] = t.dx_ref, bo[6] = c->with_w ? t.dw_ref : NULL, bo[7] = t.ds_ref, bo[8] = c->with_shift ? t.dh_ref : NULL;
  ref_find("modulated_rms_norm", "bwd")->fn(ba, dt, bo);
  /* dx, dscale, then dw and dshift where the case has them */
  tc_out bwd_outs[4] = {{t.dx, bytes}, {t.dscale, mod_bytes}};
  int nout = 2;
  if (t.dw) bwd_outs[nout++] = (tc_out){t.dw, w_bytes};
  if (t.dshift) bwd_outs[nout++] = (tc_out){t.dshift, mod_bytes};
  tc_sweep_variants("modulated_rms_norm", "bwd", dt, D, run_bwd, check_bwd, &t, bwd_outs, nout, t.shape);
  void *dx0 = malloc(bytes + 1);
  memcpy(dx0, t.dx, bytes);
  /* y over x, dx over dy: the same bits as the sweeps' */
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.y, t.x, bytes);
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctx, dt, R, D, M, t.y, t.w, t.scale, t.shift, t.eps, t.offset, c->casting,
                                          t.y, t.rstd),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, y0, bytes), "y over x differs");
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(ubg_modulated_rms_norm_bwd(ctx, dt, R, D, M, t.dx, t.x, t.w, t.scale, t.rstd_in, t.offset, c->casting,
                                          t.dx, t.dw, t.dscale, t.dshift),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.dy), free(t.w), free(t.scale), free(t.shift), free(t.y_ref), free(t.rstd_ref), free(t.dx_ref);
  free(t.dw_ref), free(t.ds_ref), free(t.dh_ref), free(t.y), free(t.dx), free(t.dw), free(t.dscale), free(t.dshift);
  free(t.rstd), free(t.rstd_in), free(y0), free(dx0);
}

Test(modulated_rms_norm, f32_every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(UBG_F32, &cases[c]);
}

Test(modulated_rms_norm, f16_every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(UBG_F16, &cases[c]);
}

Test(modulated_rms_norm, bf16_every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(UBG_BF16, &cases[c]);
}

/* no rows: y untouched, dw, dscale and dshift 0 */
Test(modulated_rms_norm, no_rows) {
  enum { D = 8, M = 2 };
  float x[D], w[D], s[M * D], rstd[1], dw[D], ds[M * D], dh[M * D];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  for (int i = 0; i < D; i++) x[i] = 7, w[i] = 1, dw[i] = 7;
  for (int i = 0; i < M * D; i++) s[i] = 0.5f, ds[i] = dh[i] = 7;
  rstd[0] = 7;
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctx, UBG_F32, 0, D, M, x, w, s, s, 1e-6f, 0, UBG_CAST_LLAMA, x, rstd),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(x[0] == 7 && rstd[0] == 7, "no rows, but y or rstd written");
  cr_assert_eq(ubg_modulated_rms_norm_bwd(ctx, UBG_F32, 0, D, M, x, x, w, s, rstd, 0, UBG_CAST_LLAMA, x, dw, ds, dh),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < D; i++) cr_assert(dw[i] == 0, "dw[%d] = %g", i, dw[i]);
  for (int i = 0; i < M * D; i++) cr_assert(ds[i] == 0 && dh[i] == 0, "dscale[%d] = %g, dshift %g", i, ds[i], dh[i]);
  ubg_ctx_destroy(ctx);
}

Test(modulated_rms_norm, refusals_write_nothing) {
  enum { R = 6, D = 8, M = 2 };
  float x[R * D], w[D], s[M * D], y[R * D], rstd[R], dx[R * D], dw[D], ds[M * D];
  for (int i = 0; i < R * D; i++) x[i] = (float)i, y[i] = dx[i] = 7;
  for (int i = 0; i < D; i++) w[i] = 1, dw[i] = 7;
  for (int i = 0; i < M * D; i++) s[i] = 0.5f, ds[i] = 7;
  for (int i = 0; i < R; i++) rstd[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  /* 4 modulation rows do not divide 6 rows */
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctx, UBG_F32, R, D, 4, x, w, s, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "mod_rows") && strstr(ubg_ctx_error(ctx), "rows"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctx, UBG_F32, R, D, 0, x, w, s, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "mod_rows"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctx, UBG_F32, R, D, M, x, w, NULL, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "scale"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctx, UBG_F32, R, D, M, x, w, s, NULL, 1e-6f, 0, (ubg_casting)3, y, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "casting"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_modulated_rms_norm_bwd(ctx, UBG_F32, R, D, M, x, x, w, s, rstd, 0, UBG_CAST_LLAMA, dx, NULL, ds,
                                          NULL),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "dw"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_modulated_rms_norm_bwd(ctx, UBG_F32, R, D, M, x, x, w, s, rstd, 0, UBG_CAST_LLAMA, dx, dw, NULL,
                                          NULL),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "dscale"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_modulated_rms_norm_bwd(ctx, UBG_F32, R, D, M, x, x, w, s, rstd, 0, UBG_CAST_LLAMA, dx, dw, s, NULL),
               UBG_EINVAL, "dscale over scale");
  for (int i = 0; i < R * D; i++) cr_assert(y[i] == 7 && dx[i] == 7);
  for (int i = 0; i < R; i++) cr_assert(rstd[i] == 7);
  for (int i = 0; i < M * D; i++) cr_assert(ds[i] == 7 && s[i] == 0.5f);
  cr_assert(dw[0] == 7 && w[0] == 1);
  ubg_ctx_destroy(ctx);
}
