/* Typed entry points of the GRPO loss's vocabulary sweeps
 * (specs/grpo_loss.json): the arguments by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_grpo_loss_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t batch, int64_t seq, int64_t vocab,
                             float temperature, const void *logits, const int64_t *ids, float *logp, float *lse) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_grpo_loss_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("logits", logits), T_ARG("ids", ids),     T_ARG("logp", logp),
                    T_ARG("lse", lse),       I_ARG("batch", batch), I_ARG("seq", seq),
                    I_ARG("vocab", vocab),   F_ARG("temperature", temperature)};
  return LAUNCH("grpo_loss", "fwd", args);
}

ubg_status ubg_grpo_loss_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t batch, int64_t seq, int64_t vocab,
                             float temperature, const void *logits, const int64_t *ids, const float *lse,
                             const float *dlogp, void *dlogits) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_grpo_loss_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("logits", logits),   T_ARG("ids", ids),     T_ARG("lse", lse),
                    T_ARG("dlogp", dlogp),     T_ARG("dlogits", dlogits), I_ARG("batch", batch),
                    I_ARG("seq", seq),         I_ARG("vocab", vocab), F_ARG("temperature", temperature)};
  return LAUNCH("grpo_loss", "bwd", args);
}
