/* Typed entry points of GroupNorm (specs/group_norm.json): the arguments
 * by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_group_norm_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t batch, int64_t channels, int64_t groups,
                              int64_t cols, const void *x, const void *w, const void *b, float eps, void *y,
                              float *mean, float *rstd) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_group_norm_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x),         T_ARG("w", w),
                    T_ARG("b", b),         T_ARG("y", y),
                    T_ARG("mean", mean),   T_ARG("rstd", rstd),
                    I_ARG("batch", batch), I_ARG("channels", channels),
                    I_ARG("groups", groups), I_ARG("cols", cols),
                    F_ARG("eps", eps)};
  return LAUNCH("group_norm", "fwd", args);
}

ubg_status ubg_group_norm_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t batch, int64_t channels, int64_t groups,
                              int64_t cols, const void *dy, const void *x, const void *w, const float *mean,
                              const float *rstd, void *dx, void *dw, void *db) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_group_norm_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dy", dy),       T_ARG("x", x),
                    T_ARG("w", w),         T_ARG("mean", mean),
                    T_ARG("rstd", rstd),   T_ARG("dx", dx),
                    T_ARG("dw", dw),       T_ARG("db", db),
                    I_ARG("batch", batch), I_ARG("channels", channels),
                    I_ARG("groups", groups), I_ARG("cols", cols)};
  return LAUNCH("group_norm", "bwd", args);
}
