/* Typed entry points of the total variation distance (specs/tvd.json): the
 * arguments by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_tvd_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *p, const void *q,
                       const int64_t *shift_labels, int64_t ignore_index, ubg_reduction reduction, float *loss) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_tvd_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("p", p),       T_ARG("q", q),       T_ARG("shift_labels", shift_labels),
                    T_ARG("loss", loss), I_ARG("rows", rows), I_ARG("cols", cols),
                    I_ARG("ignore_index", ignore_index),      I_ARG("reduction", reduction)};
  return LAUNCH("tvd", "fwd", args);
}

ubg_status ubg_tvd_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const float *dloss, const void *p,
                       const void *q, const int64_t *shift_labels, int64_t ignore_index, ubg_reduction reduction,
                       void *dp) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_tvd_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dloss", dloss), T_ARG("p", p),          T_ARG("q", q),
                    T_ARG("shift_labels", shift_labels),          T_ARG("dp", dp),
                    I_ARG("rows", rows),   I_ARG("cols", cols),    I_ARG("ignore_index", ignore_index),
                    I_ARG("reduction", reduction)};
  return LAUNCH("tvd", "bwd", args);
}
