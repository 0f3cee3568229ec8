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

static void close_to(const void *got, int dt, const double *want, int64_t n, double atol, const char *what,
                     const char *name, const fadd_case *c, int casting) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, atol, tol_rtol[dt], &err);
  cr_assert(bad < 0, "%s %lldx%lld %s casting %d: %s[%lld] = %.9g, reference %.9g", name, (long long)c->rows,
            (long long)c->cols, ug_dtype_name(dt), casting, what, (long long)bad,
            ref_load(got, bad, what[0] == 'r' ? UBG_F32 : dt), want[bad]);
}

typedef struct {
  void *y, *s, *dx, *dw;
  float *rstd;
} fadd_out;

static void sweep(int dt, const fadd_case *c, ubg_casting casting, bool with_ds) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  tc_skip_if_large(n, "rows x cols");
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, wbytes = (size_t)D * es;
  const float eps = 1e-6f, offset = casting == UBG_CAST_GEMMA ? 1.0f : 0.0f;
  void *x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), *res = tc_tensor(dt, n, 0, 1, 2);
  void *w = tc_tensor(dt, D, 1, 0.5, 3), *dy = tc_tensor(dt, n, 0, 1, 4);
  void *ds = with_ds ? tc_tensor(dt, n, 0, 1, 5) : NULL;
  double *y_ref = malloc((size_t)n * sizeof(double)), *s_ref = malloc((size_t)n * sizeof(double));
  double *rstd_ref = malloc((size_t)(R + 1) * sizeof(double)), *dx_ref = malloc((size_t)n * sizeof(double));
  double *dw_ref = malloc((size_t)D * sizeof(double));
  ref_slot fa[11] = {{.p = x}, {.p = res}, {.p = w}, {0}, {0}, {0}, {.i = R}, {.i = D}, {.f = eps}, {.f = offset},
                     {.i = casting}};
  double *fo[11] = {0};
  fo[3] = y_ref, fo[4] = s_ref, fo[5] = rstd_ref;
  ref_find("fused_add_rms_norm", "fwd")->fn(fa, dt, fo);
  fadd_out got = {malloc(bytes + 1), malloc(bytes + 1), malloc(bytes + 1), malloc(wbytes),
                  malloc((size_t)(R + 1) * sizeof(float))};
  fadd_out first = {malloc(bytes + 1), malloc(bytes + 1), malloc(bytes + 1), malloc(wbytes),
                    malloc((size_t)(R + 1) * sizeof(float))};
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("fused_add_rms_norm", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      const char *name = vs.v[v].name;
      for (int k = 0; k < 2; k++) {
        ubg_ctx *ctx = ctxs[k];
        cr_assert_eq(ubg_set_variant(ctx, "fused_add_rms_norm", pn, name), UBG_OK, "%s", ubg_ctx_error(ctx));
        ubg_status st;
        if (!pass) {
          memset(got.y, 0xff, bytes), memset(got.s, 0xff, bytes), memset(got.rstd, 0xff, (size_t)R * 4);
          st = ubg_fused_add_rms_norm_fwd(ctx, dt, R, D, x, res, w, eps, offset, casting, got.y, got.s, got.rstd);
        } else {
          memset(got.dx, 0xff, bytes), memset(got.dw, 0xff, wbytes);
          st = ubg_fused_add_rms_norm_bwd(ctx, dt, R, D, dy, ds, first.s, w, first.rstd, offset, casting, got.dx,
                                          got.dw);
        }
        cr_assert_eq(st, UBG_OK, "%s: %s", name, ubg_ctx_error(ctx));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(got.s, dt, s_ref, n, tol_atol[dt], "s", name, c, casting);
            close_to(got.rstd, UBG_F32, rstd_ref, R, 1e-5, "rstd", name, c, casting);
            close_to(got.y, dt, y_ref, n, tol_atol[dt], "y", name, c, casting);
            memcpy(first.y, got.y, bytes), memcpy(first.s, got.s, bytes), memcpy(first.rstd, got.rstd, (size_t)R * 4);
            ref_slot ba[11] = {{.p = dy}, {.p = ds}, {.p = first.s}, {.p = w}, {.p = first.rstd}, {0}, {0},
                               {.i = R}, {.i = D}, {.f = offset}, {.i = casting}};
            double *bo[11] = {0};
            bo[5] = dx_ref, bo[6] = dw_ref;
            ref_find("fused_add_rms_norm", "bwd")->fn(ba, dt, bo);
          } else {
            close_to(got.dx, dt, dx_ref, n, tol_atol[dt], "dx", name, c, casting);
            close_to(got.dw, dt, dw_ref, D, tol_atol[dt], "dw", name, c, casting);
            memcpy(first.dx, got.dx, bytes), memcpy(first.dw, got.dw, wbytes);
          }
        } else if (!pass) {
          cr_assert(!memcmp(got.y, first.y, bytes) && !memcmp(got.s, first.s, bytes) &&
                        !memcmp(got.rstd, first.rstd, (size_t)R * 4),
                    "%s (%d threads) %lldx%lld: forward bits differ", name, k + 1, (long long)R, (long long)D);
        } else {
          cr_assert(!memcmp(got.dx, first.dx, bytes) && !memcmp(got.dw, first.dw, wbytes),
                    "%s (%d threads) %lldx%lld: backward bits differ", name, k + 1, (long long)R, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to %lldx%lld", pn, (long long)R, (long long)D);
    tc_free_variants(&vs);
  }
  /* y over x and s over residual, dx over dy and over ds: the same bits */
  ubg_ctx *ctx = ctxs[1];
  cr_assert_eq(ubg_set_variant(ctx, "fused_add_rms_norm", "fwd", NULL), UBG_OK);
  cr_assert_eq(ubg_set_variant(ctx, "fused_add_rms_norm", "bwd", NULL), UBG_OK);
  memcpy(got.y, x, bytes), memcpy(got.s, res, bytes);
  cr_assert_eq(ubg_fused_add_rms_norm_fwd(ctx, dt, R, D, got.y, got.s, w, eps, offset, casting, got.y, got.s, got.rstd),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(got.y, first.y, bytes) && !memcmp(got.s, first.s, bytes), "y over x, s over residual differ");
  /* y and rstd are RMSNorm's of the returned s, bit for bit */
  cr_assert_eq(ubg_rms_norm_fwd(ctx, dt, R, D, first.s, w, eps, offset, casting, got.y, got.rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(got.y, first.y, bytes) && !memcmp(got.rstd, first.rstd, (size_t)R * 4),
            "y or rstd differs from ubg_rms_norm_fwd's of s");
  memcpy(got.dx, dy, bytes);
  cr_assert_eq(ubg_fused_add_rms_norm_bwd(ctx, dt, R, D, got.dx, ds, first.s, w, first.rstd, offset, casting, got.dx,
                                          got.dw),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(got.dx, first.dx, bytes), "dx over dy differs");
  if (ds) {
    memcpy(got.dx, ds, bytes);
    cr_assert_eq(ubg_fused_add_rms_norm_bwd(ctx, dt, R, D, dy, got.dx, first.s, w, first.rstd, offset, casting,
                                            got.dx, got.dw),
                 UBG_OK, "%s", ubg_ctx_error(ctx));
    cr_assert(!memcmp(got.dx, first.dx, bytes), "dx over ds differs");
  }
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(res), free(w), free(dy), free(ds), free(y_ref), free(s_ref), free(rstd_ref), free(dx_ref), free(dw_ref);
  free(got.y), free(got.s), free(got.dx), free(got.dw), free(got.rstd);
  free(first.y), free(first.s), free(first.dx), free(first.dw), free(first.rstd);
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
