/* Linked with a libubgen built by `make UBGEN_AOT=0`: no kernel is built
 * in, the specs are (in the registry), and every op runs through the JIT
 * (tcc here) with the same results as the reference. */
#include <criterion/criterion.h>
#include <string.h>

#include "../rms_norm_cases.h"

Test(noaot, every_call_is_compiled_and_right) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  const int64_t rows = 9, cols = 300, n = rows * cols;
  uint16_t *x = tc_tensor(REF_BF16, n, 0, 1, 1), *w = tc_tensor(REF_BF16, cols, 1, 0.5, 2), y[9 * 300];
  float rstd[9];
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_BF16, rows, cols, x, w, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert_str_eq(ubg_ctx_last_variant(ctx), "rms_norm_fwd_bf16_d512_m4_n@tcc");
  double ref[9 * 300], ref_r[9];
  ref_slot a[9] = {{.p = x}, {.p = w}, {.p = NULL}, {.p = NULL}, {.i = rows}, {.i = cols}, {.f = 1e-6f}, {.f = 0},
                   {.i = 0}};
  double *outs[9] = {0};
  outs[2] = ref, outs[3] = ref_r;
  ref_find("rms_norm", "fwd")->fn(a, REF_BF16, outs);
  double err;
  cr_assert(ref_compare(y, REF_BF16, ref, n, tol_atol[2], tol_rtol[2], &err) < 0, "off the reference by %g", err);
  /* the variant set is the spec's: forcing one that was never built works */
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", "rms_norm_fwd_bf16_d64_m1_t"), UBG_OK);
  uint16_t y2[9 * 300];
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_BF16, rows, cols, x, w, 1e-6f, 0, UBG_CAST_LLAMA, y2, rstd), UBG_OK);
  cr_assert(!memcmp(y, y2, sizeof y), "two variants, the same bits");
  ubg_ctx_destroy(ctx);
  free(x), free(w);
}
