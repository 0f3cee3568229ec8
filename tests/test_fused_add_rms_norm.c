/* Residual add then RMSNorm against the double-precision reference
 * (specs/fused_add_rms_norm_ref.c): every feasible variant, forced, over
 * rows x cols from 1 x 1 to rows longer than any whole-row variant holds
 * (3 x 40000), every dtype and casting, with and without ds, forward (y, s,
 * rstd) and backward (dx, dw from the forward's s and rstd); every variant
 * and 1 or 2 threads give the same bits; y over x, s over residual, dx over
 * dy and over ds give the same bits; y and rstd are ubg_rms_norm_fwd's of
 * s, bit for bit; f32-subnormal sums give tcc's bits; refusals write
 * nothing.
 *
 * Tolerances: Liger-Kernel's test_fused_add_rms_norm.py uses 1e-4 / 1e-6
 * (f32) and 2e-1 / 2e-2 (bf16), as its RMSNorm test; f16 gets tighter
 * bounds than bf16 (tests/rms_norm_cases.h). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "rms_norm_cases.h"

typedef struct {
  int64_t rows, cols;
} fadd_case;

static const fadd_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {3, 40000}, {64, 4096}};

/* one case: the inputs (x, residual, dy, ds: rows x cols, ds NULL for
 * none; w: cols; the backward's s_in and rstd_in: the forward's s and rstd),
 * the outputs (y, s, dx: rows x cols; rstd: rows, f32; dw: cols) and their
 * references */
typedef struct {
  int dt;
  ubg_casting casting;
  int64_t R, D;
  float eps, offset;
  void *x, *res, *w, *dy, *ds, *s_in;
  void *y, *s, *dx, *dw;
  float *rstd, *rstd_in;
  double *y_ref, *s_ref, *rstd_ref, *dx_ref, *dw_ref;
  char shape[64];
} fadd_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  fadd_state *t = state;
  return ubg_fused_add_rms_norm_fwd(ctx, t->dt, t->R, t->D, t->x, t->res, t->w, t->eps, t->offset, t->casting, t->y,
                                    t->s, t->rstd);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  fadd_state *t = state;
  return ubg_fused_add_rms_norm_bwd(ctx, t->dt, t->R, t->D, t->dy, t->ds, t->s_in, t->w, t->rstd_in, t->offset,
                                    t->casting, t->dx, t->dw);
}
static void check_fwd(void *state, const char *variant) {
  fadd_state *t = state;
  const int dt = t->dt;
  const int64_t n = t->R * t->D;
  tc_assert_close(t->s, dt, t->s_ref, n, tol_atol[dt], tol_rtol[dt], "%s %s: s", variant, t->shape);
  tc_assert_close(t->rstd, UBG_F32, t->rstd_ref, t->R, 1e-5, tol_rtol[UBG_F32], "%s %s: rstd", variant, t->shape);
  tc_assert_close(t->y, dt, t->y_ref, n, tol_atol[dt], tol_rtol[dt], "%s %s: y", variant, t->shape);
}
static void check_bwd(void *state, const char *variant) {
  fadd_state *t = state;
  const int dt = t->dt;
  tc_assert_close(t->dx, dt, t->dx_ref, t->R * t->D, tol_atol[dt], tol_rtol[dt], "%s %s: dx", variant, t->shape);
  tc_assert_close(t->dw, dt, t->dw_ref, t->D, tol_atol[dt], tol_rtol[dt], "%s %s: dw", variant, t->shape);
}

static void sweep(int dt, const fadd_case *c, ubg_casting casting, bool with_ds) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, wbytes = (size_t)D * es;
  const size_t rbytes = (size_t)(R + 1) * sizeof(float);
  fadd_state t = {.dt = dt, .casting = casting, .R = R, .D = D, .eps = 1e-6f};
  t.offset = casting == UBG_CAST_GEMMA ? 1.0f : 0.0f;
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s casting %d", (long long)R, (long long)D, ug_dtype_name(dt),
           casting);
  t.x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), t.res = tc_tensor(dt, n, 0, 1, 2);
  t.w = tc_tensor(dt, D, 1, 0.5, 3), t.dy = tc_tensor(dt, n, 0, 1, 4);
  t.ds = with_ds ? tc_tensor(dt, n, 0, 1, 5) : NULL;
  t.y_ref = malloc((size_t)n * sizeof(double)), t.s_ref = malloc((size_t)n * sizeof(double));
  t.rstd_ref = malloc((size_t)(R + 1) * sizeof(double)), t.dx_ref = malloc((size_t)n * sizeof(double));
  t.dw_ref = malloc((size_t)D * sizeof(double));
  ref_slot fa[11] = {{.p = t.x}, {.p = t.res}, {.p = t.w}, {0},           {0},           {0},
                     {.i = R},   {.i = D},     {.f = t.eps}, {.f = t.offset}, {.i = casting}};
  double *fo[11] = {0};
  fo[3] = t.y_ref, fo[4] = t.s_ref, fo[5] = t.rstd_ref;
  ref_find("fused_add_rms_norm", "fwd")->fn(fa, dt, fo);
  t.y = malloc(bytes + 1), t.s = malloc(bytes + 1), t.dx = malloc(bytes + 1), t.dw = malloc(wbytes);
  t.rstd = malloc(rbytes), t.s_in = malloc(bytes + 1), t.rstd_in = malloc(rbytes);
  const tc_out fwd_outs[3] = {{t.y, bytes}, {t.s, bytes}, {t.rstd, (size_t)R * 4}};
  tc_sweep_variants("fused_add_rms_norm", "fwd", dt, D, run_fwd, check_fwd, &t, fwd_outs, 3, t.shape);
  /* the backward takes the forward's s and rstd, and its reference them */
  void *y0 = malloc(bytes + 1);
  memcpy(y0, t.y, bytes), memcpy(t.s_in, t.s, bytes), memcpy(t.rstd_in, t.rstd, (size_t)R * 4);
  ref_slot ba[11] = {{.p = t.dy}, {.p = t.ds}, {.p = t.s_in},   {.p = t.w},     {.p = t.rstd_in}, {0},
                     {0},         {.i = R},    {.i = D},        {.f = t.offset}, {.i = casting}};
  double *bo[11] = {0};
  bo[5] = t.dx_ref, bo[6] = t.dw_ref;
  ref_find("fused_add_rms_norm", "bwd")->fn(ba, dt, bo);
  const tc_out bwd_outs[2] = {{t.dx, bytes}, {t.dw, wbytes}};
  tc_sweep_variants("fused_add_rms_norm", "bwd", dt, D, run_bwd, check_bwd, &t, bwd_outs, 2, t.shape);
  void *dx0 = malloc(bytes + 1);
  memcpy(dx0, t.dx, bytes);
  /* y over x and s over residual, dx over dy and over ds: the same bits as the sweeps' */
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  const float eps = t.eps, offset = t.offset;
  memcpy(t.y, t.x, bytes), memcpy(t.s, t.res, bytes);
  cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctx, dt, R, D, t.y, t.s, t.w, eps, offset, casting, t.y, t.s, t.rstd),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, y0, bytes) && !memcmp(t.s, t.s_in, bytes), "y over x, s over residual differ");
  /* y and rstd are RMSNorm's of the returned s, bit for bit */
  cr_assert_eq(ubg_rms_norm_fwd(ctx, dt, R, D, t.s_in, t.w, eps, offset, casting, t.y, t.rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.y, y0, bytes) && !memcmp(t.rstd, t.rstd_in, (size_t)R * 4),
            "y or rstd differs from ubg_rms_norm_fwd's of s");
  memcpy(t.dx, t.dy, bytes);
  cr_assert_eq(ubg_fused_add_rms_norm_bwd(ctx, dt, R, D, t.dx, t.ds, t.s_in, t.w, t.rstd_in, offset, casting, t.dx,
                                          t.dw),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dx over dy differs");
  if (t.ds) {
    memcpy(t.dx, t.ds, bytes);
    cr_assert_eq(ubg_fused_add_rms_norm_bwd(ctx, dt, R, D, t.dy, t.dx, t.s_in, t.w, t.rstd_in, offset, casting,
                                            t.dx, t.dw),
                 UBG_OK, "%s", ubg_ctx_error(ctx));
    cr_assert(!memcmp(t.dx, dx0, bytes), "dx over ds differs");
  }
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.res), free(t.w), free(t.dy), free(t.ds), free(t.y_ref), free(t.s_ref), free(t.rstd_ref);
  free(t.dx_ref), free(t.dw_ref), free(t.y), free(t.s), free(t.dx), free(t.dw), free(t.rstd), free(t.s_in);
  free(t.rstd_in), free(y0), free(dx0);
}

Test(fused_add_rms_norm, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c], (ubg_casting)(c % 3), c % 2 == 0);
}

/* every casting at the shapes the first test gives another one, f32 and bf16 */
Test(fused_add_rms_norm, every_casting_every_shape, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt += 2)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (int casting = 1; casting < 3; casting++) sweep(dt, &cases[c], (ubg_casting)((c + casting) % 3), c % 2 != 0);
}

/* sums that are f32 subnormals (bf16 has f32's exponents; s[0] is 2e-39):
 * the built-in kernels' 16-lane chunks leave such a chunk to their scalar
 * loop, and give tcc's bits; f16 the same inputs */
Test(fused_add_rms_norm, subnormal_sums_give_tcc_bits) {
  enum { R = 3, D = 100, N = R * D };
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_TCC, 1)};
  for (int dt = UBG_F16; dt <= UBG_BF16; dt++) {
    uint16_t x[N], res[N], w[D], y[2][N], s[2][N];
    float rstd[2][R];
    for (int i = 0; i < N; i++) {
      ref_store(x, i, dt, i % 7 == 0 ? 3e-39 : ldexp(1.0, -(i % 20)));
      ref_store(res, i, dt, i % 5 == 0 ? -1e-39 : 0.5);
    }
    for (int i = 0; i < D; i++) ref_store(w, i, dt, 1.0 + i / 64.0);
    for (int k = 0; k < 2; k++)
      cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctxs[k], dt, R, D, x, res, w, 1e-6f, 0, UBG_CAST_LLAMA, y[k], s[k],
                                              rstd[k]),
                   UBG_OK, "%s", ubg_ctx_error(ctxs[k]));
    cr_assert(!memcmp(y[0], y[1], sizeof y[0]) && !memcmp(s[0], s[1], sizeof s[0]) &&
                  !memcmp(rstd[0], rstd[1], sizeof rstd[0]),
              "%s: built-in and tcc bits differ", ug_dtype_name(dt));
  }
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
}

Test(fused_add_rms_norm, refusals_write_nothing) {
  enum { R = 2, D = 8, N = R * D };
  float x[N], res[N], w[D], y[N], s[N], rstd[R], dx[N], dw[D];
  for (int i = 0; i < N; i++) x[i] = res[i] = (float)i, y[i] = s[i] = dx[i] = 7;
  for (int i = 0; i < D; i++) w[i] = 1, dw[i] = 7;
  rstd[0] = rstd[1] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctx, UBG_F32, R, D, x, res, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, s, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "w"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctx, UBG_F32, R, 0, x, res, w, 1e-6f, 0, UBG_CAST_LLAMA, y, s, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctx, UBG_F32, R, D, x, res, w, 1e-6f, 0, (ubg_casting)3, y, s, rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "casting"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctx, UBG_F32, R, D, x, res, w, 1e-6f, 0, UBG_CAST_LLAMA, y, x, rstd),
               UBG_EINVAL, "s over x");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_add_rms_norm_bwd(ctx, UBG_F32, R, D, x, res, s, w, rstd, 0, UBG_CAST_LLAMA, dx, NULL),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "dw"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_add_rms_norm_bwd(ctx, UBG_F32, R, D, x, res, s, w, rstd, 0, UBG_CAST_LLAMA, s + 1, dw),
               UBG_EINVAL, "dx partly over s");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < N; i++) cr_assert(y[i] == 7 && s[i] == 7 && dx[i] == 7 && x[i] == (float)i);
  cr_assert(dw[0] == 7 && rstd[0] == 7 && rstd[1] == 7);
  ubg_ctx_destroy(ctx);
}
