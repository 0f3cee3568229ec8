/* Typed entry points of modulated RMSNorm (specs/modulated_rms_norm.json):
 * the arguments by name, then ubg_launch's path (the spec validates them,
 * casting among them). */
#include "internal.h"

ubg_status ubg_modulated_rms_norm_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, int64_t mod_rows,
                                      const void *x, const void *w, const void *scale, const void *shift, float eps,
                                      float offset, ubg_casting casting, void *y, float *rstd) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_modulated_rms_norm_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x),           T_ARG("w", w),           T_ARG("scale", scale),
                    T_ARG("shift", shift),   T_ARG("y", y),           T_ARG("rstd", rstd),
                    I_ARG("rows", rows),     I_ARG("cols", cols),     I_ARG("mod_rows", mod_rows),
                    F_ARG("eps", eps),       F_ARG("offset", offset), I_ARG("casting", casting)};
  return LAUNCH("modulated_rms_norm", "fwd", args);
}

ubg_status ubg_modulated_rms_norm_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, int64_t mod_rows,
                                      const void *dy, const void *x, const void *w, const void *scale,
                                      const float *rstd, float offset, ubg_casting casting, void *dx, void *dw,
                                      void *dscale, void *dshift) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_modulated_rms_norm_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dy", dy),           T_ARG("x", x),           T_ARG("w", w),
                    T_ARG("scale", scale),     T_ARG("rstd", rstd),     T_ARG("dx", dx),
                    T_ARG("dw", dw),           T_ARG("dscale", dscale), T_ARG("dshift", dshift),
                    I_ARG("rows", rows),       I_ARG("cols", cols),     I_ARG("mod_rows", mod_rows),
                    F_ARG("offset", offset),   I_ARG("casting", casting)};
  return LAUNCH("modulated_rms_norm", "bwd", args);
}
