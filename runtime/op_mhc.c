/* Typed entry points of mHC (specs/mhc.json): the arguments by name, then
 * ubg_launch's path. */
#include "internal.h"

ubg_status ubg_mhc_coeffs_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t hc, int64_t c, const void *x,
                              const float *phi, const float *b, const float *alpha, int64_t tmax, float rms_eps,
                              float pre_eps, float sinkhorn_eps, float post_mult, float *h_pre, float *h_post,
                              float *h_res, float *mix, float *invr) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_mhc_coeffs_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x),           T_ARG("phi", phi),
                    T_ARG("b", b),           T_ARG("alpha", alpha),
                    T_ARG("h_pre", h_pre),   T_ARG("h_post", h_post),
                    T_ARG("h_res", h_res),   T_ARG("mix", mix),
                    T_ARG("invr", invr),     I_ARG("rows", rows),
                    I_ARG("hc", hc),         I_ARG("c", c),
                    I_ARG("tmax", tmax),     F_ARG("rms_eps", rms_eps),
                    F_ARG("pre_eps", pre_eps), F_ARG("sinkhorn_eps", sinkhorn_eps),
                    F_ARG("post_mult", post_mult)};
  return LAUNCH("mhc", "coeffs_fwd", args);
}

ubg_status ubg_mhc_coeffs_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t hc, int64_t c,
                              const float *dh_pre, const float *dh_post, const float *dh_res, const void *x,
                              const float *phi, const float *b, const float *alpha, const float *mix,
                              const float *invr, int64_t tmax, float sinkhorn_eps, float post_mult, void *dx,
                              float *dphi, float *db, float *dalpha) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_mhc_coeffs_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dh_pre", dh_pre), T_ARG("dh_post", dh_post),
                    T_ARG("dh_res", dh_res), T_ARG("x", x),
                    T_ARG("phi", phi),       T_ARG("b", b),
                    T_ARG("alpha", alpha),   T_ARG("mix", mix),
                    T_ARG("invr", invr),     T_ARG("dx", dx),
                    T_ARG("dphi", dphi),     T_ARG("db", db),
                    T_ARG("dalpha", dalpha), I_ARG("rows", rows),
                    I_ARG("hc", hc),         I_ARG("c", c),
                    I_ARG("tmax", tmax),     F_ARG("sinkhorn_eps", sinkhorn_eps),
                    F_ARG("post_mult", post_mult)};
  return LAUNCH("mhc", "coeffs_bwd", args);
}

ubg_status ubg_mhc_pre_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t hc, int64_t c, const void *x,
                           const float *h_pre, void *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_mhc_pre_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x), T_ARG("h_pre", h_pre), T_ARG("out", out),
                    I_ARG("rows", rows), I_ARG("hc", hc), I_ARG("c", c)};
  return LAUNCH("mhc", "pre_fwd", args);
}

ubg_status ubg_mhc_pre_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t hc, int64_t c, const void *dout,
                           const void *x, const float *h_pre, void *dx, float *dh_pre) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_mhc_pre_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dout", dout), T_ARG("x", x),       T_ARG("h_pre", h_pre), T_ARG("dx", dx),
                    T_ARG("dh_pre", dh_pre), I_ARG("rows", rows), I_ARG("hc", hc),     I_ARG("c", c)};
  return LAUNCH("mhc", "pre_bwd", args);
}

ubg_status ubg_mhc_post_res_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t hc, int64_t c, const void *x,
                                const void *f_out, const float *h_post, const float *h_res, void *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_mhc_post_res_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x),     T_ARG("f_out", f_out), T_ARG("h_post", h_post), T_ARG("h_res", h_res),
                    T_ARG("out", out), I_ARG("rows", rows),   I_ARG("hc", hc),         I_ARG("c", c)};
  return LAUNCH("mhc", "post_res_fwd", args);
}

ubg_status ubg_mhc_post_res_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t hc, int64_t c,
                                const void *dout, const void *x, const void *f_out, const float *h_post,
                                const float *h_res, void *dx, void *df_out, float *dh_post, float *dh_res) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_mhc_post_res_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dout", dout),       T_ARG("x", x),           T_ARG("f_out", f_out),
                    T_ARG("h_post", h_post),   T_ARG("h_res", h_res),   T_ARG("dx", dx),
                    T_ARG("df_out", df_out),   T_ARG("dh_post", dh_post), T_ARG("dh_res", dh_res),
                    I_ARG("rows", rows),       I_ARG("hc", hc),         I_ARG("c", c)};
  return LAUNCH("mhc", "post_res_bwd", args);
}
