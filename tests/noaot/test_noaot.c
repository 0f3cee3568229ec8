/* Linked with a libubgen built by `make UBGEN_AOT=0 ONEDNN=`: no kernel is
 * built in, the specs are (in the registry), and every op runs through the
 * JIT (tcc here) with the same results as the reference; and no oneDNN. */
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

/* the later kernels through their typed entry points, compiled on first use */
Test(noaot, embedding_and_attn_res_are_compiled_and_right) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  float *table = tc_tensor(REF_F32, 50 * 20, 0, 1, 3), out[7 * 20];
  int64_t idx[7] = {3, 49, 0, 3, 17, 17, 8};
  cr_assert_eq(ubg_embedding_fwd(ctx, UBG_F32, 50, 20, table, 7, idx, out), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "embedding_fwd_f32_d32_") && strstr(ubg_ctx_last_variant(ctx), "@tcc"),
            "%s", ubg_ctx_last_variant(ctx));
  for (int i = 0; i < 7; i++) cr_assert(!memcmp(out + i * 20, table + idx[i] * 20, 80), "row %d", i);

  const int64_t nb = 3, t = 5, d = 40;
  float *v = tc_tensor(REF_F32, nb * t * d, 0, 1, 4), *wq = tc_tensor(REF_F32, d, 0, 0.1, 5);
  float *wn = tc_tensor(REF_F32, d, 1, 0.1, 6), h[5 * 40], alpha[15], rstd[15];
  cr_assert_eq(ubg_attn_res_fwd(ctx, UBG_F32, nb, t, d, v, wq, wn, 1e-6f, h, alpha, rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "@tcc"), "%s", ubg_ctx_last_variant(ctx));
  double ref_h[5 * 40], ref_a[15], ref_r[15];
  ref_slot a[10] = {{.p = v}, {.p = wq}, {.p = wn}, {.p = NULL}, {.p = NULL}, {.p = NULL}, {.i = nb}, {.i = t},
                    {.i = d}, {.f = 1e-6}};
  double *outs[10] = {0};
  outs[3] = ref_h, outs[4] = ref_a, outs[5] = ref_r;
  ref_find("attn_res", "fwd")->fn(a, REF_F32, outs);
  double err;
  cr_assert(ref_compare(h, REF_F32, ref_h, t * d, 1e-4, 1e-5, &err) < 0, "out off the reference by %g", err);
  cr_assert(ref_compare(alpha, REF_F32, ref_a, nb * t, 1e-4, 1e-5, &err) < 0, "alpha off the reference by %g", err);
  ubg_ctx_destroy(ctx);
  free(table), free(v), free(wq), free(wn);
}

/* FLCE: its four passes (three GEMMs and the cross entropy) compiled on
 * first use, the whole call against the double reference; the GEMMs are the
 * generated ones by default, as oneDNN is not there */
#include "../ref/flce_ref.h"
Test(noaot, flce_is_compiled_and_right) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  enum { BT = 9, H = 24, V = 70 };
  float *x = tc_tensor(REF_F32, BT * H, 0, 1, 7), *w = tc_tensor(REF_F32, V * H, 0, 0.2, 8);
  int64_t target[BT] = {3, 69, 0, -100, 12, 12, 40, 5, 66};
  float loss, dx[BT * H], dw[V * H];
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  o.label_smoothing = 0.1f;
  ubg_flce_out out = {&loss, NULL, NULL, dx, dw, NULL, NULL};
  cr_assert_eq(ubg_flce(ctx, UBG_F32, BT, H, V, x, w, target, &o, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
  const char *lv = ubg_ctx_last_variant(ctx);
  cr_assert(strstr(lv, "flce_logits_f32_") && strstr(lv, "flce_ce_f32_") && strstr(lv, "flce_dx_f32_") &&
                strstr(lv, "flce_dw_f32_") && !strstr(lv, "@aot"),
            "%s", lv);
  double rloss, rdx[BT * H], rdw[V * H], err;
  flce_ref_full(REF_F32, BT, H, V, x, w, target, &o, &rloss, NULL, NULL, rdx, rdw, NULL);
  cr_assert(ref_compare(&loss, REF_F32, &rloss, 1, 1e-5, 5e-4, &err) < 0, "loss %g, reference %g", loss, rloss);
  cr_assert(ref_compare(dx, REF_F32, rdx, BT * H, 1e-5, 5e-4, &err) < 0, "dx off the reference by %g", err);
  cr_assert(ref_compare(dw, REF_F32, rdw, V * H, 1e-5, 5e-4, &err) < 0, "dweight off the reference by %g", err);
  ubg_ctx_destroy(ctx);
  free(x), free(w);
}

/* without oneDNN, asking ubg_flce for it is refused by name: from
 * UBGEN_VARIANT when the context is made, and by ubg_set_variant */
Test(noaot, flce_refuses_onednn_in_a_build_without_it) {
  setenv("UBGEN_VARIANT", "flce.chunk=gemm=onednn", 1);
  ubg_ctx *ctx = NULL;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_ENOTFOUND);
  unsetenv("UBGEN_VARIANT");
  cr_assert(strstr(ubg_ctx_error(NULL), "gemm=onednn, but this library was built without oneDNN"), "%s",
            ubg_ctx_error(NULL));
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  /* nor can it be forced by name */
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", "chunk=8,gemm=onednn"), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "built without oneDNN"), "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
}
