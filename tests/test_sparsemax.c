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

#include "row_prob_sweep.h"

static const row_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {2, 70000}, {64, 4096}};
static const row_prob_op sparsemax = {
    .kernel = "sparsemax", .fwd = ubg_sparsemax_fwd, .bwd = ubg_sparsemax_bwd, .x_spread = 1,
    .atol_fwd = {2e-6, 1e-3, 1e-3}, .atol_bwd = {1e-6, 1e-3, 1e-3}, .rtol = {1e-5, 1e-2, 2e-2}};

Test(sparsemax, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) row_prob_sweep(&sparsemax, dt, &cases[c]);
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
  tc_assert_close(y, UBG_F32, want, R * D, sparsemax.atol_fwd[UBG_F32], sparsemax.rtol[UBG_F32], "default f32: y");
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
