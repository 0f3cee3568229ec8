/* Typed entry points of kernels whose specs have not landed yet (their
 * issues are open): declared in ubgen.h so the API is whole, answering
 * UBG_ENOTFOUND until the kernel exists. When a kernel lands, its entry
 * point moves to its own op_<kernel>.c. */
#include "internal.h"

static ubg_status pending(const ubg_ctx *ctx, const char *fn, const char *kernel) {
  return rt_fail(ctx, UBG_ENOTFOUND, "%s: the %s kernel is not in this build yet", fn, kernel);
}

void ubg_flce_opts_init(ubg_flce_opts *o) {
  if (!o) return;
  o->ignore_index = -100;
  o->label_smoothing = 0.0f;
  o->lse_square_scale = 0.0f;
  o->softcap = 0.0f;
  o->reduction = UBG_REDUCE_MEAN;
  o->ce_weight = NULL;
  o->bias = NULL;
}

ubg_status ubg_flce(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, const void *x,
                    const void *weight, const int64_t *target, const ubg_flce_opts *opts, const ubg_flce_out *out) {
  (void)dtype, (void)bt, (void)hidden, (void)vocab, (void)x, (void)weight, (void)target, (void)opts, (void)out;
  return pending(ctx, "ubg_flce", "flce");
}
