/* Sparsemax over the last dimension against the double-precision
 * reference (specs/sparsemax_ref.c, tau by a sort): every feasible
 * variant, forced, over rows x cols from 1 x 1 to rows longer than any
 * whole-row variant holds (2 x 70000), every dtype, forward (y) and
 * backward (dx from the forward's y); every variant and 1 or 2 threads give
 * the same bits; dx over dy, y over x, the same bits; rows that take
 * Newton's steps the longest way (ties, a ramp, halvings); rows of -Inf,
 * with a NaN or a +Inf as torch's reference gives them; refusals write
 * nothing.
 *
 * Tolerances: Liger-Kernel's test_sparsemax.py uses 1e-5 / 1e-5 (f32
 * only). Here f32 2e-6 / 1e-5 forward (y = x - tau loses x's bits below
 * its ulp, 4.8e-7 at |x| = 4) and 1e-6 / 1e-5 backward, f16 1e-3 / 1e-2,
 * bf16 1e-3 / 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
} sm_case;

static const sm_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {2, 70000}, {64, 4096}};
static const double tol_atol[2][3] = {{2e-6, 1e-3, 1e-3}, {1e-6, 1e-3, 1e-3}}, tol_rtol[3] = {1e-5, 1e-2, 2e-2};

static void close_to(const void *got, int dt, const double *want, int64_t n, int pass, const char *what,
                     const char *name) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, tol_atol[pass][dt], tol_rtol[dt], &err);
  cr_assert(bad < 0, "%s %s: %s[%lld] = %.9g, reference %.9g", name, ug_dtype_name(dt), what, (long long)bad,
            ref_load(got, bad, dt), want[bad]);
}

static void sweep(int dt, const sm_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  tc_skip_if_large(n, "rows x cols");
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  void *x = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 1)), *dy = tc_tensor(dt, n, 0, 1, 2);
  void *y = malloc(bytes), *y0 = malloc(bytes), *dx = malloc(bytes), *dx0 = malloc(bytes);
  double *y_ref = malloc((size_t)n * sizeof(double)), *dx_ref = malloc((size_t)n * sizeof(double));
  ref_slot fa[4] = {{.p = x}, {0}, {.i = R}, {.i = D}};
  double *fo[4] = {NULL, y_ref};
  ref_find("sparsemax", "fwd")->fn(fa, dt, fo);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("sparsemax", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      for (int k = 0; k < 2; k++) {
        void *out = pass ? dx : y;
        cr_assert_eq(ubg_set_variant(ctxs[k], "sparsemax", pn, vs.v[v].name), UBG_OK, "%s", ubg_ctx_error(ctxs[k]));
        memset(out, 0xff, bytes);
        const ubg_status s =
            pass ? ubg_sparsemax_bwd(ctxs[k], dt, R, D, dy, y0, dx) : ubg_sparsemax_fwd(ctxs[k], dt, R, D, x, y);
        cr_assert_eq(s, UBG_OK, "%s: %s", vs.v[v].name, ubg_ctx_error(ctxs[k]));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(y, dt, y_ref, n, pass, "y", vs.v[v].name);
            memcpy(y0, y, bytes);
            ref_slot ba[5] = {{.p = dy}, {.p = y0}, {0}, {.i = R}, {.i = D}};
            double *bo[5] = {NULL, NULL, dx_ref};
            ref_find("sparsemax", "bwd")->fn(ba, dt, bo);
          } else {
            close_to(dx, dt, dx_ref, n, pass, "dx", vs.v[v].name);
            memcpy(dx0, dx, bytes);
          }
        } else {
          cr_assert(!memcmp(out, pass ? dx0 : y0, bytes), "%s (%d threads) %lldx%lld: bits differ", vs.v[v].name,
                    k + 1, (long long)R, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to %lldx%lld", pn, (long long)R, (long long)D);
    tc_free_variants(&vs);
  }
  /* outputs over their inputs: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "sparsemax", "fwd", NULL), UBG_OK);
  cr_assert_eq(ubg_set_variant(ctxs[1], "sparsemax", "bwd", NULL), UBG_OK);
  memcpy(y, x, bytes);
  cr_assert_eq(ubg_sparsemax_fwd(ctxs[1], dt, R, D, y, y), UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(y, y0, bytes), "y over x differs");
  memcpy(dx, dy, bytes);
  cr_assert_eq(ubg_sparsemax_bwd(ctxs[1], dt, R, D, dx, y0, dx), UBG_OK, "%s", ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(dy), free(y), free(y0), free(dx), free(dx0), free(y_ref), free(dx_ref);
}

Test(sparsemax, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

/* rows far from randn's: all equal (the support is the whole row, 1/D
 * each), a ramp of 1e-3 steps (8 sweeps, the support halving from 1000 to
 * 45), halvings 2^-(d % 40) (ties 75 deep), and values near 1e4 (x - max
 * keeps their bits where sums of x would not) */
Test(sparsemax, hard_rows_against_the_reference) {
  enum { R = 4, D = 3000 };
  static float x[R * D], y[R * D];
  static double want[R * D];
  for (int d = 0; d < D; d++) {
    x[d] = 0.5f;
    x[D + d] = -1e-3f * (float)d;
    x[2 * D + d] = ldexpf(1.0f, -(d % 40));
    x[3 * D + d] = 1e4f + (float)(d % 7) * 0.125f;
  }
  ref_slot fa[4] = {{.p = x}, {0}, {.i = R}, {.i = D}};
  double *fo[4] = {NULL, want};
  ref_find("sparsemax", "fwd")->fn(fa, UBG_F32, fo);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_sparsemax_fwd(ctx, UBG_F32, R, D, x, y), UBG_OK, "%s", ubg_ctx_error(ctx));
  close_to(y, UBG_F32, want, R * D, 0, "y", "default");
  for (int r = 0; r < R; r++) {
    double s = 0;
    for (int d = 0; d < D; d++) s += y[r * D + d];
    cr_assert(fabs(s - 1) < 1e-5, "row %d sums to %.9g", r, s);
  }
  ubg_ctx_destroy(ctx);
}

/* rows of -Inf (all masked), with a NaN, with a +Inf: NaN throughout, as
 * the sort of Liger's test gives them; a -Inf among finite values: 0
 * there; and 1, 0.5, 0 (tau 0.25) exactly */
Test(sparsemax, special_rows) {
  enum { D = 4 };
  const float inf = 1.0f / 0.0f, nan = 0.0f / 0.0f;
  float x[4 * D] = {-inf, -inf, -inf, -inf, 1, nan, 2, 3, 1, inf, 2, 3, 1, 0, -inf, 0.5f}, y[4 * D];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_sparsemax_fwd(ctx, UBG_F32, 4, D, x, y), UBG_OK, "%s", ubg_ctx_error(ctx));
  for (int d = 0; d < 3 * D; d++) cr_assert(y[d] != y[d], "row %d col %d: %g, not NaN", d / D, d % D, y[d]);
  cr_assert(y[3 * D] == 0.75f && y[3 * D + 1] == 0 && y[3 * D + 2] == 0 && y[3 * D + 3] == 0.25f, "%g %g %g %g",
            y[3 * D], y[3 * D + 1], y[3 * D + 2], y[3 * D + 3]);
  ubg_ctx_destroy(ctx);
}

Test(sparsemax, refusals_write_nothing) {
  enum { N = 64 };
  float buf[2 * N], y[N];
  for (int i = 0; i < 2 * N; i++) buf[i] = (float)i;
  for (int i = 0; i < N; i++) y[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_sparsemax_fwd(ctx, UBG_F32, 1, N, buf, buf + 3), UBG_EINVAL, "y partly over x");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_sparsemax_fwd(ctx, UBG_F32, 1, 0, buf, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_sparsemax_fwd(ctx, UBG_F32, -1, N, buf, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "rows"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_sparsemax_bwd(ctx, UBG_F32, 1, N, buf, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "y"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_sparsemax_bwd(ctx, UBG_F32, 1, N, buf, buf + 1, buf + N - 1), UBG_EINVAL, "dx partly over y");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < 2 * N; i++) cr_assert(buf[i] == (float)i);
  for (int i = 0; i < N; i++) cr_assert(y[i] == 7);
  ubg_ctx_destroy(ctx);
}
