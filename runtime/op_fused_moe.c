/* ubg_fused_moe_forward, ubg_fused_moe_backward: a mixture of experts'
 * expert layers with SwiGLU (Liger's LigerFusedMoEFunction), the typed
 * entries of the fused_moe spec's composites "forward" and "backward",
 * which declare their arguments (top_k_index's range among them), their
 * scratch and the passes they run (composite_run.c runs them):
 *
 *   x [tokens, hidden], gate_up_proj [experts, 2 inter, hidden], down_proj [experts, hidden, inter]
 *   top_k_index, top_k_weights [tokens, top_k]; per chunk of tokens:
 *   forward:  route (pairs sorted by expert) -> h = x W_gu[e]^T -> act = silu(h_g) h_u
 *             -> y = act W_d[e]^T -> out = sum over k of w y
 *   backward: route -> da = dout W_d[e] -> dw = da . act, dh -> dW_d[e] += dout^T w act,
 *             dW_gu[e] += dh^T x -> dx = sum over k of dh W_gu[e]
 *
 * Here the C arguments become the spec's named ones. */
#include "internal.h"

static const rt_composite fused_moe_forward = {"fused_moe", "forward"}, fused_moe_backward = {"fused_moe", "backward"};

ubg_status ubg_fused_moe_forward(ubg_ctx *ctx, ubg_dtype dtype, int64_t tokens, int64_t hidden, int64_t inter,
                                 int64_t experts, int64_t top_k, const void *x, const void *gate_up_proj,
                                 const void *down_proj, const int32_t *top_k_index, const void *top_k_weights,
                                 void *out, float *pre_act) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_moe_forward: ctx is NULL");
  const ubg_arg a[] = {
      T_ARG("x", x),
      T_ARG("gate_up_proj", gate_up_proj),
      T_ARG("down_proj", down_proj),
      T_ARG("top_k_index", top_k_index),
      T_ARG("top_k_weights", top_k_weights),
      T_ARG("out", out),
      T_ARG("pre_act", pre_act),
      I_ARG("tokens", tokens),
      I_ARG("hidden", hidden),
      I_ARG("inter", inter),
      I_ARG("experts", experts),
      I_ARG("top_k", top_k),
  };
  return rt_composite_run(ctx, &fused_moe_forward, "ubg_fused_moe_forward", dtype, a, sizeof a / sizeof a[0], NULL);
}

ubg_status ubg_fused_moe_backward(ubg_ctx *ctx, ubg_dtype dtype, int64_t tokens, int64_t hidden, int64_t inter,
                                  int64_t experts, int64_t top_k, const void *x, const void *gate_up_proj,
                                  const void *down_proj, const int32_t *top_k_index, const void *top_k_weights,
                                  const float *pre_act, const void *dout, void *dx, void *dgate_up_proj,
                                  void *ddown_proj, void *dtop_k_weights) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_moe_backward: ctx is NULL");
  const ubg_arg a[] = {
      T_ARG("x", x),
      T_ARG("gate_up_proj", gate_up_proj),
      T_ARG("down_proj", down_proj),
      T_ARG("top_k_index", top_k_index),
      T_ARG("top_k_weights", top_k_weights),
      T_ARG("pre_act", pre_act),
      T_ARG("dout", dout),
      T_ARG("dx", dx),
      T_ARG("dgate_up_proj", dgate_up_proj),
      T_ARG("ddown_proj", ddown_proj),
      T_ARG("dtop_k_weights", dtop_k_weights),
      I_ARG("tokens", tokens),
      I_ARG("hidden", hidden),
      I_ARG("inter", inter),
      I_ARG("experts", experts),
      I_ARG("top_k", top_k),
  };
  return rt_composite_run(ctx, &fused_moe_backward, "ubg_fused_moe_backward", dtype, a, sizeof a / sizeof a[0], NULL);
}
