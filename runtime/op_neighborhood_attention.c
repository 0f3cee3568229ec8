/* Typed entry points of fused neighborhood attention
 * (specs/neighborhood_attention.json): the arguments by name, then
 * ubg_launch's path. */
#include "internal.h"

ubg_status ubg_neighborhood_attention_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t batch_heads, int64_t seq_len,
                                          int64_t head_dim, int64_t kernel_size, int64_t dilation, float scale,
                                          const void *q, const void *k, const void *v, void *out, float *lse) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_neighborhood_attention_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("q", q),
                    T_ARG("k", k),
                    T_ARG("v", v),
                    T_ARG("out", out),
                    T_ARG("lse", lse),
                    I_ARG("batch_heads", batch_heads),
                    I_ARG("seq_len", seq_len),
                    I_ARG("head_dim", head_dim),
                    I_ARG("kernel_size", kernel_size),
                    I_ARG("dilation", dilation),
                    F_ARG("scale", scale)};
  return LAUNCH("neighborhood_attention", "fwd", args);
}

ubg_status ubg_neighborhood_attention_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t batch_heads, int64_t seq_len,
                                          int64_t head_dim, int64_t kernel_size, int64_t dilation, float scale,
                                          const void *dout, const void *q, const void *k, const void *v,
                                          const void *out, const float *lse, void *dq, void *dk, void *dv) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_neighborhood_attention_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dout", dout),
                    T_ARG("q", q),
                    T_ARG("k", k),
                    T_ARG("v", v),
                    T_ARG("out", out),
                    T_ARG("lse", lse),
                    T_ARG("dq", dq),
                    T_ARG("dk", dk),
                    T_ARG("dv", dv),
                    I_ARG("batch_heads", batch_heads),
                    I_ARG("seq_len", seq_len),
                    I_ARG("head_dim", head_dim),
                    I_ARG("kernel_size", kernel_size),
                    I_ARG("dilation", dilation),
                    F_ARG("scale", scale)};
  return LAUNCH("neighborhood_attention", "bwd", args);
}
