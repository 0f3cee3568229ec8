/* Typed entry points of DyT (specs/dyt.json): the arguments by name, then
 * ubg_launch's path. */
#include "internal.h"

ubg_status ubg_dyt_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *x, const void *alpha,
                       const void *gamma, const void *beta, void *y) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_dyt_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x), T_ARG("alpha", alpha), T_ARG("gamma", gamma),  T_ARG("beta", beta),
                    T_ARG("y", y), I_ARG("rows", rows),   I_ARG("cols", cols)};
  return LAUNCH("dyt", "fwd", args);
}

ubg_status ubg_dyt_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dy, const void *x,
                       const void *alpha, const void *gamma, void *dx, void *dalpha, void *dgamma, void *dbeta) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_dyt_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dy", dy),         T_ARG("x", x),           T_ARG("alpha", alpha), T_ARG("gamma", gamma),
                    T_ARG("dx", dx),         T_ARG("dalpha", dalpha), T_ARG("dgamma", dgamma), T_ARG("dbeta", dbeta),
                    I_ARG("rows", rows),     I_ARG("cols", cols)};
  return LAUNCH("dyt", "bwd", args);
}
