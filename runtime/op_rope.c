/* Typed entry points of the rotary position embedding (specs/rope.json):
 * the arguments by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_rope_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t seq, int64_t cos_rows, int64_t hq,
                        int64_t hk, int64_t d, const void *q, const void *k, const void *cos, const void *sin,
                        void *q_out, void *k_out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_rope_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("q", q), T_ARG("k", k), T_ARG("cos", cos), T_ARG("sin", sin), T_ARG("q_out", q_out),
                    T_ARG("k_out", k_out), I_ARG("bt", bt), I_ARG("seq", seq), I_ARG("cos_rows", cos_rows),
                    I_ARG("hq", hq), I_ARG("hk", hk), I_ARG("d", d)};
  return LAUNCH("rope", "fwd", args);
}

ubg_status ubg_rope_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t seq, int64_t cos_rows, int64_t hq,
                        int64_t hk, int64_t d, const void *dq_out, const void *dk_out, const void *cos,
                        const void *sin, void *dq, void *dk) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_rope_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dq_out", dq_out), T_ARG("dk_out", dk_out), T_ARG("cos", cos), T_ARG("sin", sin),
                    T_ARG("dq", dq), T_ARG("dk", dk), I_ARG("bt", bt), I_ARG("seq", seq),
                    I_ARG("cos_rows", cos_rows), I_ARG("hq", hq), I_ARG("hk", hk), I_ARG("d", d)};
  return LAUNCH("rope", "bwd", args);
}
