/* Typed entry point of the generalized JSD (specs/jsd.json): the arguments
 * by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_jsd_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *log_q,
                       const void *log_p, const int64_t *shift_labels, float beta, int64_t ignore_index, float *loss,
                       void *dlog_q) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_jsd_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("log_q", log_q), T_ARG("log_p", log_p), T_ARG("shift_labels", shift_labels),
                    T_ARG("loss", loss), T_ARG("dlog_q", dlog_q), I_ARG("rows", rows), I_ARG("cols", cols),
                    F_ARG("beta", beta), I_ARG("ignore_index", ignore_index)};
  return LAUNCH("jsd", "fwd", args);
}
