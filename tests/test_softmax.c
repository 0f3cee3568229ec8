/* Softmax over the last dimension against the double-precision reference
 * (specs/softmax_ref.c): every feasible variant, forced, over rows x cols
 * from 1 x 1 to rows longer than any whole-row variant holds (2 x 70000,
 * Liger's multi-block shape), every dtype, forward (y) and backward (dx
 * from the forward's y); every variant and 1 or 2 threads give the same
 * bits; dx over dy, y over x, the same bits; rows of -Inf, with a NaN,
 * and of one +Inf as torch gives them; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_softmax.py uses 1e-5 / 1e-5 (f32) and
 * 5e-2 (bf16). Here f32 1e-6 / 1e-5 (y is at most 1), f16 1e-3 / 1e-2,
 * bf16 1e-3 / 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "row_prob_sweep.h"

static const row_case cases[] = {{1, 1}, {7, 3}, {5, 123}, {40, 1024}, {2, 4097}, {2, 70000}, {64, 4096}};
static const row_prob_op softmax = {
    .kernel = "softmax", .fwd = ubg_softmax_fwd, .bwd = ubg_softmax_bwd, .x_spread = 3,
    .atol_fwd = {1e-6, 1e-3, 1e-3}, .atol_bwd = {1e-6, 1e-3, 1e-3}, .rtol = {1e-5, 1e-2, 2e-2}};

Test(softmax, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) row_prob_sweep(&softmax, dt, &cases[c]);
}

/* rows of -Inf (all masked: NaN, as torch's), with a NaN (NaN), with a
 * single +Inf among finite values (NaN: exp(Inf - Inf)), and a -Inf among
 * finite ones (0 there) */
Test(softmax, special_rows) {
  enum { D = 5 };
  const float inf = 1.0f / 0.0f, nan = 0.0f / 0.0f;
  float x[4 * D] = {-inf, -inf, -inf, -inf, -inf, 1, nan, 2, 3, 4, 1, inf, 2, 3, 4, 0, -inf, 0, 0, 0}, y[4 * D];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_softmax_fwd(ctx, UBG_F32, 4, D, x, y), UBG_OK, "%s", ubg_ctx_error(ctx));
  for (int d = 0; d < 3 * D; d++) cr_assert(y[d] != y[d], "row %d col %d: %g, not NaN", d / D, d % D, y[d]);
  cr_assert(y[3 * D + 1] == 0.0f && y[3 * D] == 0.25f, "%g %g", y[3 * D + 1], y[3 * D]);
  ubg_ctx_destroy(ctx);
}

Test(softmax, refusals_write_nothing) {
  enum { N = 64 };
  float buf[2 * N], y[N];
  for (int i = 0; i < 2 * N; i++) buf[i] = (float)i;
  for (int i = 0; i < N; i++) y[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_softmax_fwd(ctx, UBG_F32, 1, N, buf, buf + 3), UBG_EINVAL, "y partly over x");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_softmax_fwd(ctx, UBG_F32, 1, 0, buf, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_softmax_bwd(ctx, UBG_F32, 1, N, buf, NULL, y), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "y"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < 2 * N; i++) cr_assert(buf[i] == (float)i);
  for (int i = 0; i < N; i++) cr_assert(y[i] == 7);
  ubg_ctx_destroy(ctx);
}
