/* Typed entry points of the residual add then RMSNorm
 * (specs/fused_add_rms_norm.json): the arguments by name, then ubg_launch's
 * path (the spec validates them, the casting among them). */
#include "internal.h"

ubg_status ubg_fused_add_rms_norm_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *x,
                                      const void *residual, const void *w, float eps, float offset,
                                      ubg_casting casting, void *y, void *s, float *rstd) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_add_rms_norm_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x),          T_ARG("residual", residual), T_ARG("w", w),
                    T_ARG("y", y),          T_ARG("s", s),               T_ARG("rstd", rstd),
                    I_ARG("rows", rows),    I_ARG("cols", cols),         F_ARG("eps", eps),
                    F_ARG("offset", offset), I_ARG("casting", casting)};
  return LAUNCH("fused_add_rms_norm", "fwd", args);
}

ubg_status ubg_fused_add_rms_norm_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dy,
                                      const void *ds, const void *s, const void *w, const float *rstd, float offset,
                                      ubg_casting casting, void *dx, void *dw) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_add_rms_norm_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dy", dy),        T_ARG("ds", ds),     T_ARG("s", s),
                    T_ARG("w", w),          T_ARG("rstd", rstd), T_ARG("dx", dx),
                    T_ARG("dw", dw),        I_ARG("rows", rows), I_ARG("cols", cols),
                    F_ARG("offset", offset), I_ARG("casting", casting)};
  return LAUNCH("fused_add_rms_norm", "bwd", args);
}
