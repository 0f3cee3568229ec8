/* ubg_flce with its GEMMs on OpenBLAS (make BLAS=openblas; here op_flce.c is
 * compiled that way and linked ahead of libubgen.a): the same results as the
 * double reference within f32 tolerance (not the generated GEMM's bits:
 * OpenBLAS sums in its own order), chosen by UBGEN_VARIANT's gemm=openblas
 * (the GEMMs alone: the chunk is still the spec's rule), f32 only. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ref/flce_ref.h"
#include "test_util.h"

static ubg_ctx *blas_ctx(void) {
  setenv("UBGEN_VARIANT", "flce.chunk=gemm=openblas", 1);
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  unsetenv("UBGEN_VARIANT");
  return ctx;
}

Test(flce_openblas, f32_matches_the_reference) {
  ubg_ctx *ctx = blas_ctx();
  enum { BT = 37, H = 64, V = 300 };
  float *x = tc_tensor(REF_F32, BT * H, 0, 1, 1), *w = tc_tensor(REF_F32, V * H, 0, 0.125, 2);
  float *bias = tc_tensor(REF_F32, V, 0, 0.5, 3), *cw = tc_tensor(REF_F32, V, 1, 0.2, 4);
  int64_t target[BT];
  uint64_t s = 5;
  for (int i = 0; i < BT; i++) target[i] = i % 7 == 3 ? -100 : (int64_t)(tc_next(&s) % V);
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  o.label_smoothing = 0.1f, o.lse_square_scale = 1e-3f, o.softcap = 3.0f, o.bias = bias, o.ce_weight = cw;
  float loss, z, dx[BT * H], dw[V * H], db[V];
  int64_t am[BT];
  ubg_flce_out out = {&loss, &z, am, dx, dw, db, NULL};
  cr_assert_eq(ubg_flce(ctx, UBG_F32, BT, H, V, x, w, target, &o, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "openblas;flce_ce_f32_"), "%s", ubg_ctx_last_variant(ctx));
  double rl, rz, rdx[BT * H], rdw[V * H], rdb[V], err;
  int64_t ram[BT];
  flce_ref_full(REF_F32, BT, H, V, x, w, target, &o, &rl, &rz, ram, rdx, rdw, rdb);
  cr_assert(ref_compare(&loss, REF_F32, &rl, 1, 1e-5, 5e-4, &err) < 0, "loss %g, reference %g", loss, rl);
  cr_assert(ref_compare(&z, REF_F32, &rz, 1, 1e-5, 5e-4, &err) < 0, "z_loss %g, reference %g", z, rz);
  cr_assert(ref_compare(dx, REF_F32, rdx, BT * H, 1e-5, 5e-4, &err) < 0, "dx off by %g", err);
  cr_assert(ref_compare(dw, REF_F32, rdw, V * H, 1e-5, 5e-4, &err) < 0, "dweight off by %g", err);
  cr_assert(ref_compare(db, REF_F32, rdb, V, 1e-5, 5e-4, &err) < 0, "dbias off by %g", err);
  for (int i = 0; i < BT; i++) cr_assert_eq(am[i], ram[i], "argmax[%d]", i);
  ubg_ctx_destroy(ctx);
  free(x), free(w), free(bias), free(cw);
}

/* OpenBLAS has no f16/bf16 sgemm here: those dtypes keep the generated GEMMs */
Test(flce_openblas, bf16_keeps_the_generated_gemms) {
  ubg_ctx *ctx = blas_ctx();
  enum { BT = 5, H = 16, V = 40 };
  uint16_t *x = tc_tensor(REF_BF16, BT * H, 0, 1, 6), *w = tc_tensor(REF_BF16, V * H, 0, 0.25, 7);
  int64_t target[BT] = {0, 39, 7, 7, 20};
  float loss;
  ubg_flce_out out = {&loss, NULL, NULL, NULL, NULL, NULL, NULL};
  cr_assert_eq(ubg_flce(ctx, UBG_BF16, BT, H, V, x, w, target, NULL, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "flce_logits_bf16_"), "%s", ubg_ctx_last_variant(ctx));
  double rl;
  flce_ref_full(REF_BF16, BT, H, V, x, w, target, NULL, &rl, NULL, NULL, NULL, NULL, NULL);
  cr_assert_float_eq(loss, rl, 1e-5 + 5e-4 * fabs(rl));
  ubg_ctx_destroy(ctx);
  free(x), free(w);
}
