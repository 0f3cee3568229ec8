/* Typed entry points of Llama 4's rotary position embedding
 * (specs/llama4_rope.json): the arguments by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_llama4_rope_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t seq, int64_t freq_rows,
                               int64_t hq, int64_t hk, int64_t d, const void *q, const void *k, const float *freqs,
                               void *q_out, void *k_out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_llama4_rope_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("q", q), T_ARG("k", k), T_ARG("freqs", freqs), T_ARG("q_out", q_out),
                    T_ARG("k_out", k_out), I_ARG("bt", bt), I_ARG("seq", seq), I_ARG("freq_rows", freq_rows),
                    I_ARG("hq", hq), I_ARG("hk", hk), I_ARG("d", d)};
  return LAUNCH("llama4_rope", "fwd", args);
}

ubg_status ubg_llama4_rope_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t seq, int64_t freq_rows,
                               int64_t hq, int64_t hk, int64_t d, const void *dq_out, const void *dk_out,
                               const float *freqs, void *dq, void *dk) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_llama4_rope_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dq_out", dq_out), T_ARG("dk_out", dk_out), T_ARG("freqs", freqs), T_ARG("dq", dq),
                    T_ARG("dk", dk), I_ARG("bt", bt), I_ARG("seq", seq), I_ARG("freq_rows", freq_rows),
                    I_ARG("hq", hq), I_ARG("hk", hk), I_ARG("d", d)};
  return LAUNCH("llama4_rope", "bwd", args);
}
