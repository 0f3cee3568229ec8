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

static void close_to(const void *got, int dt, const double *want, int64_t n, const char *what, const char *name,
                     const mrms_case *c) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, tol_abs[dt], tol_rel[dt], &err);
  cr_assert(bad < 0, "%s %lldx%lld mod_rows %lld casting %d %s: %s[%lld] = %.9g, reference %.9g", name,
            (long long)c->rows, (long long)c->cols, (long long)c->mod_rows, c->casting, ug_dtype_name(dt), what,
            (long long)bad, ref_load(got, bad, dt), want[bad]);
}

static void close_to_f32(const float *got, const double *want, int64_t n, const char *name, const mrms_case *c) {
  for (int64_t i = 0; i < n; i++)
    cr_assert(fabs(got[i] - want[i]) <= 1e-5 * fabs(want[i]), "%s %lldx%lld: rstd[%lld] = %.9g, reference %.9g",
              name, (long long)c->rows, (long long)c->cols, (long long)i, got[i], want[i]);
}

/* the outputs of one call, forward and backward */
typedef struct {
  void *y, *dx, *dw, *dscale, *dshift;
  float *rstd;
} mrms_out;

static mrms_out out_alloc(size_t bytes, size_t w_bytes, size_t mod_bytes, size_t rstd_bytes) {
  mrms_out o = {malloc(bytes + 1), malloc(bytes + 1), malloc(w_bytes), malloc(mod_bytes), malloc(mod_bytes),
                malloc(rstd_bytes + 1)};
  return o;
}

static void out_free(mrms_out *o) {
  free(o->y), free(o->dx), free(o->dw), free(o->dscale), free(o->dshift), free(o->rstd);
}

static void sweep(int dt, const mrms_case *c) {
  const int64_t R = c->rows, D = c->cols, M = c->mod_rows, n = R * D;
  tc_skip_if_large(n, "rows x cols");
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, w_bytes = (size_t)D * es;
  const size_t mod_bytes = (size_t)(M * D) * es, rstd_bytes = (size_t)R * sizeof(float);
  const float eps = 1e-6f, offset = c->casting == UBG_CAST_GEMMA ? 1.0f : 0.0f;
  void *x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), *dy = tc_tensor(dt, n, 0, 1, 5);
  void *w = c->with_w ? tc_tensor(dt, D, c->casting == UBG_CAST_GEMMA ? 0 : 1, 0.5, 2) : NULL;
  void *scale = tc_tensor(dt, M * D, 0, 0.1, 3), *shift = c->with_shift ? tc_tensor(dt, M * D, 0, 0.1, 4) : NULL;
  double *y_ref = malloc((size_t)n * sizeof(double)), *rstd_ref = malloc((size_t)R * sizeof(double));
  double *dx_ref = malloc((size_t)n * sizeof(double)), *dw_ref = malloc((size_t)D * sizeof(double));
  double *ds_ref = malloc((size_t)(M * D) * sizeof(double)), *dh_ref = malloc((size_t)(M * D) * sizeof(double));
  mrms_out got = out_alloc(bytes, w_bytes, mod_bytes, rstd_bytes);
  mrms_out first = out_alloc(bytes, w_bytes, mod_bytes, rstd_bytes);
  void *dw = c->with_w ? got.dw : NULL, *dshift = c->with_shift ? got.dshift : NULL;
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  ref_slot fa[12] = {{.p = x}, {.p = w}, {.p = scale}, {.p = shift}, {0}, {0},
                     {.i = R}, {.i = D}, {.i = M}, {.f = eps}, {.f = offset}, {.i = c->casting}};
  double *fo[12] = {0};
  fo[4] = y_ref, fo[5] = rstd_ref;
  ref_find("modulated_rms_norm", "fwd")->fn(fa, dt, fo);
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("modulated_rms_norm", pn, dt);
    int ran = 0;
    if (pass) { /* the backward's reference from the forward's rstd */
      ref_slot ba[14] = {{.p = dy}, {.p = x}, {.p = w}, {.p = scale}, {.p = first.rstd}, {0}, {0}, {0}, {0},
                         {.i = R},  {.i = D}, {.i = M}, {.f = offset},  {.i = c->casting}};
      double *bo[14] = {0};
      bo[5] = dx_ref, bo[6] = c->with_w ? dw_ref : NULL, bo[7] = ds_ref, bo[8] = c->with_shift ? dh_ref : NULL;
      ref_find("modulated_rms_norm", "bwd")->fn(ba, dt, bo);
    }
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      const char *name = vs.v[v].name;
      for (int k = 0; k < 2; k++) {
        ubg_ctx *ctx = ctxs[k];
        cr_assert_eq(ubg_set_variant(ctx, "modulated_rms_norm", pn, name), UBG_OK, "%s", ubg_ctx_error(ctx));
        ubg_status s;
        if (!pass) {
          memset(got.y, 0xff, bytes), memset(got.rstd, 0xff, rstd_bytes);
          s = ubg_modulated_rms_norm_fwd(ctx, dt, R, D, M, x, w, scale, shift, eps, offset, c->casting, got.y,
                                         got.rstd);
        } else {
          memset(got.dx, 0xff, bytes), memset(got.dw, 0xff, w_bytes);
          memset(got.dscale, 0xff, mod_bytes), memset(got.dshift, 0xff, mod_bytes);
          s = ubg_modulated_rms_norm_bwd(ctx, dt, R, D, M, dy, x, w, scale, first.rstd, offset, c->casting, got.dx,
                                         dw, got.dscale, dshift);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", name, ubg_ctx_error(ctx));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(got.y, dt, y_ref, n, "y", name, c);
            close_to_f32(got.rstd, rstd_ref, R, name, c);
            memcpy(first.y, got.y, bytes), memcpy(first.rstd, got.rstd, rstd_bytes);
          } else {
            close_to(got.dx, dt, dx_ref, n, "dx", name, c);
            if (dw) close_to(got.dw, dt, dw_ref, D, "dw", name, c);
            close_to(got.dscale, dt, ds_ref, M * D, "dscale", name, c);
            if (dshift) close_to(got.dshift, dt, dh_ref, M * D, "dshift", name, c);
            memcpy(first.dx, got.dx, bytes), memcpy(first.dw, got.dw, w_bytes);
            memcpy(first.dscale, got.dscale, mod_bytes), memcpy(first.dshift, got.dshift, mod_bytes);
          }
        } else if (!pass) {
          cr_assert(!memcmp(got.y, first.y, bytes) && !memcmp(got.rstd, first.rstd, rstd_bytes),
                    "%s (%d threads) %lldx%lld: forward bits differ", name, k + 1, (long long)R, (long long)D);
        } else {
          cr_assert(!memcmp(got.dx, first.dx, bytes) && (!dw || !memcmp(got.dw, first.dw, w_bytes)) &&
                        !memcmp(got.dscale, first.dscale, mod_bytes) &&
                        (!dshift || !memcmp(got.dshift, first.dshift, mod_bytes)),
                    "%s (%d threads) %lldx%lld: backward bits differ", name, k + 1, (long long)R, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to %lldx%lld", pn, (long long)R, (long long)D);
    tc_free_variants(&vs);
  }
  /* y over x, dx over dy: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "modulated_rms_norm", "fwd", NULL), UBG_OK);
  cr_assert_eq(ubg_set_variant(ctxs[1], "modulated_rms_norm", "bwd", NULL), UBG_OK);
  memcpy(got.y, x, bytes);
  cr_assert_eq(ubg_modulated_rms_norm_fwd(ctxs[1], dt, R, D, M, got.y, w, scale, shift, eps, offset, c->casting, got.y,
                                          got.rstd),
               UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(got.y, first.y, bytes), "y over x differs");
  memcpy(got.dx, dy, bytes);
  cr_assert_eq(ubg_modulated_rms_norm_bwd(ctxs[1], dt, R, D, M, got.dx, x, w, scale, first.rstd, offset, c->casting,
                                          got.dx, dw, got.dscale, dshift),
               UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(got.dx, first.dx, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(dy), free(w), free(scale), free(shift);
  free(y_ref), free(rstd_ref), free(dx_ref), free(dw_ref), free(ds_ref), free(dh_ref);
  out_free(&got), out_free(&first);
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
