/* Typed entry points of KL divergence (specs/kl_div.json): the arguments
 * by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_kl_div_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, int reduction, int log_target,
                          float eps, const void *y_pred, const void *y_true, float *loss) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_kl_div_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("y_pred", y_pred),         T_ARG("y_true", y_true),         T_ARG("loss", loss),
                    I_ARG("rows", rows),             I_ARG("cols", cols),             I_ARG("reduction", reduction),
                    I_ARG("log_target", log_target), F_ARG("eps", eps)};
  return LAUNCH("kl_div", "fwd", args);
}

ubg_status ubg_kl_div_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, int reduction, int log_target,
                          const void *y_true, const float *grad_output, void *dy_pred) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_kl_div_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("y_true", y_true),         T_ARG("grad_output", grad_output), T_ARG("dy_pred", dy_pred),
                    I_ARG("rows", rows),             I_ARG("cols", cols),               I_ARG("reduction", reduction),
                    I_ARG("log_target", log_target)};
  return LAUNCH("kl_div", "bwd", args);
}
