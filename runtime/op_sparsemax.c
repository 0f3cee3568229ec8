/* Typed entry points of sparsemax (specs/sparsemax.json): the arguments by
 * name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_sparsemax_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *x, void *y) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_sparsemax_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("x", x), T_ARG("y", y), I_ARG("rows", rows), I_ARG("cols", cols)};
  return LAUNCH("sparsemax", "fwd", args);
}

ubg_status ubg_sparsemax_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dy,
                             const void *y, void *dx) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_sparsemax_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dy", dy), T_ARG("y", y), T_ARG("dx", dx), I_ARG("rows", rows), I_ARG("cols", cols)};
  return LAUNCH("sparsemax", "bwd", args);
}
