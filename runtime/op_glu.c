/* Typed entry points of the gated activations of an MLP, SwiGLU and GEGLU
 * (specs/swiglu.json, specs/geglu.json): the arguments by name, then
 * ubg_launch's path. */
#include "internal.h"

ubg_status ubg_swiglu_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *a, const void *b,
                          float gate_multiplier, float down_multiplier, void *c) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_swiglu_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("a", a), T_ARG("b", b), T_ARG("c", c), I_ARG("rows", rows), I_ARG("cols", cols),
                    F_ARG("gate_multiplier", gate_multiplier), F_ARG("down_multiplier", down_multiplier)};
  return LAUNCH("swiglu", "fwd", args);
}

ubg_status ubg_swiglu_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dc, const void *a,
                          const void *b, float gate_multiplier, float down_multiplier, void *da, void *db) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_swiglu_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dc", dc), T_ARG("a", a), T_ARG("b", b), T_ARG("da", da), T_ARG("db", db),
                    I_ARG("rows", rows), I_ARG("cols", cols), F_ARG("gate_multiplier", gate_multiplier),
                    F_ARG("down_multiplier", down_multiplier)};
  return LAUNCH("swiglu", "bwd", args);
}

ubg_status ubg_geglu_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *a, const void *b,
                         void *c) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_geglu_fwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("a", a), T_ARG("b", b), T_ARG("c", c), I_ARG("rows", rows), I_ARG("cols", cols)};
  return LAUNCH("geglu", "fwd", args);
}

ubg_status ubg_geglu_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dc, const void *a,
                         const void *b, void *da, void *db) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_geglu_bwd: ctx is NULL");
  ubg_arg args[] = {T_ARG("dc", dc), T_ARG("a", a), T_ARG("b", b), T_ARG("da", da), T_ARG("db", db),
                    I_ARG("rows", rows), I_ARG("cols", cols)};
  return LAUNCH("geglu", "bwd", args);
}
