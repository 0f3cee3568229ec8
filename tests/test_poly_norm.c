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

static void close_to(const void *got, int dt, const double *want, int64_t n, double atol, const char *what,
                     const char *name, const poly_case *c) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, atol, rtol[dt], &err);
  cr_assert(bad < 0, "%s %lldx%lld %s: %s[%lld] = %.9g, reference %.9g", name, (long long)c->rows, (long long)c->cols,
            ug_dtype_name(dt), what, (long long)bad, ref_load(got, bad, dt), want[bad]);
}

typedef struct {
  void *y, *dx, *dw, *db;
  float *rstd;
} poly_out;

static void sweep(int dt, const poly_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  tc_skip_if_large(n, "rows x cols");
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, rstd_bytes = (size_t)R * 3 * sizeof(float);
  const float eps = 1e-6f;
  void *x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), *w = tc_tensor(dt, 3, 0.3, 0.2, 2);
  void *b = tc_tensor(dt, 1, 0.1, 0.5, 3), *dy = tc_tensor(dt, n, 0, 1, 5);
  double *y_ref = malloc((size_t)n * sizeof(double)), *dx_ref = malloc((size_t)n * sizeof(double));
  double *rstd_ref = malloc((size_t)R * 3 * sizeof(double)), dw_ref[3], db_ref;
  float *rstd_in = malloc(rstd_bytes); /* the backward's rstd: the reference's, as floats */
  ref_slot fa[8] = {{.p = x}, {.p = w}, {.p = b}, {0}, {0}, {.i = R}, {.i = D}, {.f = eps}};
  double *fo[8] = {0};
  fo[3] = y_ref, fo[4] = rstd_ref;
  ref_find("poly_norm", "fwd")->fn(fa, dt, fo);
  for (int64_t i = 0; i < 3 * R; i++) rstd_in[i] = (float)rstd_ref[i];
  ref_slot ba[9] = {{.p = dy}, {.p = x}, {.p = w}, {.p = rstd_in}, {0}, {0}, {0}, {.i = R}, {.i = D}};
  double *bo[9] = {0};
  bo[4] = dx_ref, bo[5] = dw_ref, bo[6] = &db_ref;
  ref_find("poly_norm", "bwd")->fn(ba, dt, bo);
  poly_out got = {malloc(bytes), malloc(bytes), malloc(3 * es), malloc(es), malloc(rstd_bytes)};
  poly_out first = {malloc(bytes), malloc(bytes), malloc(3 * es), malloc(es), malloc(rstd_bytes)};
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("poly_norm", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      const char *name = vs.v[v].name;
      for (int k = 0; k < 2; k++) {
        ubg_ctx *ctx = ctxs[k];
        cr_assert_eq(ubg_set_variant(ctx, "poly_norm", pn, name), UBG_OK, "%s", ubg_ctx_error(ctx));
        ubg_status s;
        if (!pass) {
          memset(got.y, 0xff, bytes), memset(got.rstd, 0xff, rstd_bytes);
          s = ubg_poly_norm_fwd(ctx, dt, R, D, x, w, b, eps, got.y, got.rstd);
        } else {
          memset(got.dx, 0xff, bytes), memset(got.dw, 0xff, 3 * es), memset(got.db, 0xff, es);
          s = ubg_poly_norm_bwd(ctx, dt, R, D, dy, x, w, rstd_in, got.dx, got.dw, got.db);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", name, ubg_ctx_error(ctx));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(got.y, dt, y_ref, n, atol_fwd[dt], "y", name, c);
            close_to(got.rstd, UBG_F32, rstd_ref, 3 * R, 0, "rstd", name, c);
            memcpy(first.y, got.y, bytes), memcpy(first.rstd, got.rstd, rstd_bytes);
          } else {
            close_to(got.dx, dt, dx_ref, n, atol_bwd[dt], "dx", name, c);
            close_to(got.dw, dt, dw_ref, 3, atol_bwd[dt], "dw", name, c);
            close_to(got.db, dt, &db_ref, 1, atol_bwd[dt], "db", name, c);
            memcpy(first.dx, got.dx, bytes), memcpy(first.dw, got.dw, 3 * es), memcpy(first.db, got.db, es);
          }
        } else if (!pass) {
          cr_assert(!memcmp(got.y, first.y, bytes) && !memcmp(got.rstd, first.rstd, rstd_bytes),
                    "%s (%d threads) %lldx%lld: forward bits differ", name, k + 1, (long long)R, (long long)D);
        } else {
          cr_assert(!memcmp(got.dx, first.dx, bytes) && !memcmp(got.dw, first.dw, 3 * es) &&
                        !memcmp(got.db, first.db, es),
                    "%s (%d threads) %lldx%lld: backward bits differ", name, k + 1, (long long)R, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to %lldx%lld", pn, (long long)R, (long long)D);
    tc_free_variants(&vs);
  }
  /* y over x, dx over dy: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "poly_norm", "fwd", NULL), UBG_OK);
  cr_assert_eq(ubg_set_variant(ctxs[1], "poly_norm", "bwd", NULL), UBG_OK);
  memcpy(got.y, x, bytes);
  cr_assert_eq(ubg_poly_norm_fwd(ctxs[1], dt, R, D, got.y, w, b, eps, got.y, got.rstd), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(got.y, first.y, bytes), "y over x differs");
  memcpy(got.dx, dy, bytes);
  cr_assert_eq(ubg_poly_norm_bwd(ctxs[1], dt, R, D, got.dx, x, w, rstd_in, got.dx, got.dw, got.db), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(got.dx, first.dx, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(w), free(b), free(dy), free(y_ref), free(dx_ref), free(rstd_ref), free(rstd_in);
  free(got.y), free(got.dx), free(got.dw), free(got.db), free(got.rstd);
  free(first.y), free(first.dx), free(first.dw), free(first.db), free(first.rstd);
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
