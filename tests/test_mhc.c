/* mHC against the double-precision reference (specs/mhc_ref.c): every
 * feasible variant of the six passes, forced, over tokens x streams x
 * channels from 1 x 1 x 1 to rows longer than the largest tile (2 x 4 x
 * 1100), hc up to 16, tmax 1 to 20, no rows; every dtype; the coefficients'
 * backward with each of dh_pre, dh_post, dh_res left out in turn, from the
 * forward's mix and invr. Every variant and 1 or 2 threads give the same
 * bits; refusals name the argument and write nothing.
 *
 * Tolerances: the float32 outputs (coefficients, their gradients, dh_pre,
 * dh_post, dh_res) are computed from exact inputs in f32, at 1e-4 / 1e-4
 * (Liger's coefficient tests allow 5e-4 to 2e-3 in f32); the outputs in
 * the dtype at their rounding: f32 1e-5 / 1e-5, f16 1e-2, bf16 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, hc, c, tmax;
} mhc_case;

static const mhc_case cases[] = {{1, 1, 1, 1},  {5, 3, 37, 3},  {7, 4, 64, 20},  {3, 16, 100, 5},
                                 {33, 4, 300, 8}, {2, 4, 1100, 20}, {0, 2, 8, 2}};
static const double atol_dt[3] = {1e-5, 1e-2, 2e-2}, rtol_dt[3] = {1e-5, 1e-2, 2e-2};
static const float alpha[3] = {1.0f, 0.8f, 1.2f};
static const double rms_eps = 1e-6, pre_eps = 1e-4, sk_eps = 1e-6, post_mult = 2.0;

enum { COEFFS_FWD, COEFFS_BWD, PRE_FWD, PRE_BWD, POST_FWD, POST_BWD, NPASS, MAXOUT = 5 };
static const char *pass_names[NPASS] = {"coeffs_fwd", "coeffs_bwd", "pre_fwd", "pre_bwd", "post_res_fwd",
                                        "post_res_bwd"};

/* one case's inputs: x, f_out, dout_in [rows, c], dout [rows, hc, c] in the dtype; the rest f32 */
typedef struct {
  int64_t R, hc, c, K, M, tmax;
  void *x, *f_out, *dout_in, *dout;
  float *phi, *b, *dh_pre, *dh_post, *dh_res, *h_pre, *h_post, *h_res, *mix, *invr;
  int omit; /* coeffs_bwd: 0 none, 1 dh_pre, 2 dh_post, 3 dh_res left out */
} inputs;

/* a pass's outputs: name, dtype, elements */
typedef struct {
  int n;
  const char *name[MAXOUT];
  int dt[MAXOUT];
  int64_t count[MAXOUT];
  int slot[MAXOUT]; /* the reference's argument slot */
} outs_of;

static outs_of outputs(int pass, const inputs *in, int dt) {
  const int64_t R = in->R, hc = in->hc, c = in->c, K = in->K, M = in->M;
  switch (pass) {
  case COEFFS_FWD:
    return (outs_of){5, {"h_pre", "h_post", "h_res", "mix", "invr"}, {0, 0, 0, 0, 0},
                     {R * hc, R * hc, R * hc * hc, R * M, R}, {4, 5, 6, 7, 8}};
  case COEFFS_BWD:
    return (outs_of){4, {"dx", "dphi", "db", "dalpha"}, {dt, 0, 0, 0}, {R * K, K * M, M, 3}, {9, 10, 11, 12}};
  case PRE_FWD: return (outs_of){1, {"out"}, {dt}, {R * c}, {2}};
  case PRE_BWD: return (outs_of){2, {"dx", "dh_pre"}, {dt, 0}, {R * K, R * hc}, {3, 4}};
  case POST_FWD: return (outs_of){1, {"out"}, {dt}, {R * K}, {4}};
  default:
    return (outs_of){4, {"dx", "df_out", "dh_post", "dh_res"}, {dt, dt, 0, 0}, {R * K, R * c, R * hc, R * hc * hc},
                     {5, 6, 7, 8}};
  }
}

static ubg_status call(int pass, ubg_ctx *ctx, int dt, const inputs *in, void *const *o) {
  const int64_t R = in->R, hc = in->hc, c = in->c;
  switch (pass) {
  case COEFFS_FWD:
    return ubg_mhc_coeffs_fwd(ctx, dt, R, hc, c, in->x, in->phi, in->b, alpha, in->tmax, (float)rms_eps,
                              (float)pre_eps, (float)sk_eps, (float)post_mult, o[0], o[1], o[2], o[3], o[4]);
  case COEFFS_BWD:
    return ubg_mhc_coeffs_bwd(ctx, dt, R, hc, c, in->omit == 1 ? NULL : in->dh_pre, in->omit == 2 ? NULL : in->dh_post,
                              in->omit == 3 ? NULL : in->dh_res, in->x, in->phi, in->b, alpha, in->mix, in->invr,
                              in->tmax, (float)sk_eps, (float)post_mult, o[0], o[1], o[2], o[3]);
  case PRE_FWD: return ubg_mhc_pre_fwd(ctx, dt, R, hc, c, in->x, in->h_pre, o[0]);
  case PRE_BWD: return ubg_mhc_pre_bwd(ctx, dt, R, hc, c, in->dout_in, in->x, in->h_pre, o[0], o[1]);
  case POST_FWD: return ubg_mhc_post_res_fwd(ctx, dt, R, hc, c, in->x, in->f_out, in->h_post, in->h_res, o[0]);
  default:
    return ubg_mhc_post_res_bwd(ctx, dt, R, hc, c, in->dout, in->x, in->f_out, in->h_post, in->h_res, o[0], o[1],
                                o[2], o[3]);
  }
}

/* the reference's argument slots of a pass, in the spec's order (outputs left empty) */
static int ref_args(int pass, const inputs *in, ref_slot *a) {
  const ref_slot R = {.i = in->R}, hc = {.i = in->hc}, c = {.i = in->c}, tmax = {.i = in->tmax};
  switch (pass) {
  case COEFFS_FWD: {
    const ref_slot s[17] = {{.p = in->x}, {.p = in->phi}, {.p = in->b}, {.p = (void *)alpha}, {0}, {0}, {0}, {0}, {0}, R, hc,
                            c, tmax, {.f = (float)rms_eps}, {.f = (float)pre_eps}, {.f = (float)sk_eps},
                            {.f = (float)post_mult}};
    memcpy(a, s, sizeof s);
    return 17;
  }
  case COEFFS_BWD: {
    const ref_slot s[19] = {{.p = in->omit == 1 ? NULL : in->dh_pre}, {.p = in->omit == 2 ? NULL : in->dh_post},
                            {.p = in->omit == 3 ? NULL : in->dh_res}, {.p = in->x}, {.p = in->phi}, {.p = in->b},
                            {.p = (void *)alpha}, {.p = in->mix}, {.p = in->invr}, {0}, {0}, {0}, {0}, R, hc, c, tmax,
                            {.f = (float)sk_eps}, {.f = (float)post_mult}};
    memcpy(a, s, sizeof s);
    return 19;
  }
  case PRE_FWD: {
    const ref_slot s[6] = {{.p = in->x}, {.p = in->h_pre}, {0}, R, hc, c};
    memcpy(a, s, sizeof s);
    return 6;
  }
  case PRE_BWD: {
    const ref_slot s[8] = {{.p = in->dout_in}, {.p = in->x}, {.p = in->h_pre}, {0}, {0}, R, hc, c};
    memcpy(a, s, sizeof s);
    return 8;
  }
  case POST_FWD: {
    const ref_slot s[8] = {{.p = in->x}, {.p = in->f_out}, {.p = in->h_post}, {.p = in->h_res}, {0}, R, hc, c};
    memcpy(a, s, sizeof s);
    return 8;
  }
  default: {
    const ref_slot s[12] = {{.p = in->dout}, {.p = in->x}, {.p = in->f_out}, {.p = in->h_post}, {.p = in->h_res},
                            {0}, {0}, {0}, {0}, R, hc, c};
    memcpy(a, s, sizeof s);
    return 12;
  }
  }
}

static float *f32_tensor(int64_t n, double mean, double sd, uint64_t seed) {
  return tc_tensor(REF_F32, n, mean, sd, seed);
}

/* every variant of one pass against the reference (the first run) and the first run's bits */
static void sweep_pass(int pass, int dt, const inputs *in, ubg_ctx *const *ctxs) {
  const outs_of os = outputs(pass, in, dt);
  void *got[MAXOUT], *first[MAXOUT];
  double *want[MAXOUT];
  size_t bytes[MAXOUT];
  ref_slot a[19];
  double *ro[19] = {0};
  ref_args(pass, in, a);
  for (int i = 0; i < os.n; i++) {
    bytes[i] = (size_t)os.count[i] * ref_dtype_bytes(os.dt[i]);
    got[i] = malloc(bytes[i] + 1), first[i] = malloc(bytes[i] + 1);
    want[i] = malloc((size_t)(os.count[i] + 1) * sizeof(double));
    ro[os.slot[i]] = want[i];
  }
  ref_find("mhc", pass_names[pass])->fn(a, dt, ro);
  tc_variants vs = tc_kernel_variants("mhc", pass_names[pass], dt);
  cr_assert_gt(vs.n, 0, "no mhc.%s variant", pass_names[pass]);
  for (int v = 0; v < vs.n; v++)
    for (int k = 0; k < 2; k++) {
      const char *name = vs.v[v].name;
      cr_assert_eq(ubg_set_variant(ctxs[k], "mhc", pass_names[pass], name), UBG_OK, "%s", ubg_ctx_error(ctxs[k]));
      for (int i = 0; i < os.n; i++) memset(got[i], 0xff, bytes[i]);
      cr_assert_eq(call(pass, ctxs[k], dt, in, got), UBG_OK, "%s: %s", name, ubg_ctx_error(ctxs[k]));
      for (int i = 0; i < os.n; i++) {
        if (v == 0 && k == 0) {
          const int odt = os.dt[i];
          const double atol = odt == dt ? atol_dt[dt] : 1e-4, rtol = odt == dt ? rtol_dt[dt] : 1e-4;
          double err;
          int64_t bad = ref_compare(got[i], odt, want[i], os.count[i], atol, rtol, &err);
          cr_assert(bad < 0, "%s %lldx%lldx%lld tmax %lld omit %d: %s[%lld] = %.9g, reference %.9g", name,
                    (long long)in->R, (long long)in->hc, (long long)in->c, (long long)in->tmax, in->omit,
                    os.name[i], (long long)bad, ref_load(got[i], bad, odt), want[i][bad]);
          memcpy(first[i], got[i], bytes[i]);
        } else {
          cr_assert(!memcmp(got[i], first[i], bytes[i]), "%s (%d threads) %lldx%lldx%lld: %s's bits differ", name,
                    k + 1, (long long)in->R, (long long)in->hc, (long long)in->c, os.name[i]);
        }
      }
    }
  tc_free_variants(&vs);
  if (pass == COEFFS_FWD) { /* the backward starts from the forward's saved mix and invr */
    memcpy(in->mix, first[3], bytes[3]);
    memcpy(in->invr, first[4], bytes[4]);
  }
  for (int i = 0; i < os.n; i++) free(got[i]), free(first[i]), free(want[i]);
}

static void sweep(int dt, const mhc_case *cs, int omit) {
  const int64_t R = cs->rows, hc = cs->hc, c = cs->c, K = hc * c, M = hc * hc + 2 * hc;
  inputs in = {.R = R, .hc = hc, .c = c, .K = K, .M = M, .tmax = cs->tmax, .omit = omit};
  in.x = tc_tensor(dt, R * K, 0, 1, (uint64_t)(R * K + 1));
  in.f_out = tc_tensor(dt, R * c, 0, 1, 2), in.dout_in = tc_tensor(dt, R * c, 0, 1, 3);
  in.dout = tc_tensor(dt, R * K, 0, 1, 4);
  in.phi = f32_tensor(K * M, 0, 0.05, 5), in.b = f32_tensor(M, 0, 0.3, 6);
  in.dh_pre = f32_tensor(R * hc, 0, 1, 7), in.dh_post = f32_tensor(R * hc, 0, 1, 8);
  in.dh_res = f32_tensor(R * hc * hc, 0, 1, 9);
  in.h_pre = f32_tensor(R * hc, 0.5, 0.3, 10), in.h_post = f32_tensor(R * hc, 1, 0.5, 11);
  in.h_res = f32_tensor(R * hc * hc, 0.5, 0.3, 12);
  in.mix = malloc((size_t)(R * M + 1) * 4), in.invr = malloc((size_t)(R + 1) * 4);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < NPASS; pass++) sweep_pass(pass, dt, &in, ctxs);
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(in.x), free(in.f_out), free(in.dout_in), free(in.dout), free(in.phi), free(in.b), free(in.dh_pre);
  free(in.dh_post), free(in.dh_res), free(in.h_pre), free(in.h_post), free(in.h_res), free(in.mix), free(in.invr);
}

Test(mhc, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c], (int)(c % 4));
}

Test(mhc, refusals_write_nothing) {
  enum { R = 2, HC = 2, C = 8, K = HC * C, M = HC * HC + 2 * HC };
  float x[R * K], phi[K * M], b[M], hp[R * HC], hq[R * HC], hr[R * HC * HC], mix[R * M], invr[R], out[R * C];
  for (int i = 0; i < R * K; i++) x[i] = (float)i / 8;
  for (int i = 0; i < K * M; i++) phi[i] = 0.01f;
  for (int i = 0; i < M; i++) b[i] = 0;
  for (int i = 0; i < R * HC; i++) hp[i] = hq[i] = 7;
  for (int i = 0; i < R * HC * HC; i++) hr[i] = 7;
  for (int i = 0; i < R * M; i++) mix[i] = 7;
  for (int i = 0; i < R; i++) invr[i] = 7;
  for (int i = 0; i < R * C; i++) out[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_mhc_coeffs_fwd(ctx, UBG_F32, R, HC, C, x, NULL, b, alpha, 4, 1e-6f, 0, 1e-6f, 2, hp, hq, hr, mix,
                                  invr), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "phi"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_mhc_coeffs_fwd(ctx, UBG_F32, R, HC, C, x, phi, b, alpha, 0, 1e-6f, 0, 1e-6f, 2, hp, hq, hr, mix,
                                  invr), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "tmax"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_mhc_coeffs_fwd(ctx, UBG_F32, R, HC, C, x, phi, b, alpha, 4, 1e-6f, 0, 1e-6f, 2, hp, hp, hr, mix,
                                  invr), UBG_EINVAL, "h_post over h_pre");
  cr_assert_eq(ubg_mhc_pre_fwd(ctx, UBG_F32, 1, 17, 1, x, hp, out), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "hc"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_mhc_pre_fwd(ctx, UBG_F32, R, HC, 0, x, hp, out), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "c"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_mhc_post_res_fwd(ctx, UBG_F32, R, HC, C, x, NULL, hq, hr, x), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "f_out"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_mhc_post_res_fwd(ctx, UBG_F32, R, HC, C, x, out, hq, hr, x), UBG_EINVAL, "out over x");
  for (int i = 0; i < R * HC; i++) cr_assert(hp[i] == 7 && hq[i] == 7);
  for (int i = 0; i < R * HC * HC; i++) cr_assert(hr[i] == 7);
  for (int i = 0; i < R * M; i++) cr_assert(mix[i] == 7);
  for (int i = 0; i < R * C; i++) cr_assert(out[i] == 7);
  for (int i = 0; i < R * K; i++) cr_assert(x[i] == (float)i / 8);
  ubg_ctx_destroy(ctx);
}
