/* Typed entry points of the attention-residual kernel: the arguments by
 * name, then ubg_launch's path (the spec validates them). */
#include "internal.h"

ubg_status ubg_attn_res_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t nblocks, int64_t tokens, int64_t dim, const void *v,
                            const void *w_query, const void *w_norm, float eps, void *out, float *alpha, float *rstd) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_attn_res_fwd: ctx is NULL");
  ubg_arg args[] = {
      {"v", UBG_ARG_PTR, {.p = (void *)v}},           {"w_query", UBG_ARG_PTR, {.p = (void *)w_query}},
      {"w_norm", UBG_ARG_PTR, {.p = (void *)w_norm}}, {"out", UBG_ARG_PTR, {.p = out}},
      {"alpha", UBG_ARG_PTR, {.p = alpha}},           {"rstd", UBG_ARG_PTR, {.p = rstd}},
      {"nblocks", UBG_ARG_I64, {.i = nblocks}},       {"tokens", UBG_ARG_I64, {.i = tokens}},
      {"dim", UBG_ARG_I64, {.i = dim}},               {"eps", UBG_ARG_F64, {.f = eps}},
  };
  return rt_launch(ctx, "attn_res", "fwd", dtype, args, sizeof args / sizeof args[0]);
}

ubg_status ubg_attn_res_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t nblocks, int64_t tokens, int64_t dim,
                            const void *dout, const void *v, const void *w_query, const void *w_norm,
                            const float *alpha, const float *rstd, void *dv, void *dw_query, void *dw_norm) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_attn_res_bwd: ctx is NULL");
  ubg_arg args[] = {
      {"dout", UBG_ARG_PTR, {.p = (void *)dout}},     {"v", UBG_ARG_PTR, {.p = (void *)v}},
      {"w_query", UBG_ARG_PTR, {.p = (void *)w_query}}, {"w_norm", UBG_ARG_PTR, {.p = (void *)w_norm}},
      {"alpha", UBG_ARG_PTR, {.p = (void *)alpha}},   {"rstd", UBG_ARG_PTR, {.p = (void *)rstd}},
      {"dv", UBG_ARG_PTR, {.p = dv}},                 {"dw_query", UBG_ARG_PTR, {.p = dw_query}},
      {"dw_norm", UBG_ARG_PTR, {.p = dw_norm}},       {"nblocks", UBG_ARG_I64, {.i = nblocks}},
      {"tokens", UBG_ARG_I64, {.i = tokens}},         {"dim", UBG_ARG_I64, {.i = dim}},
  };
  return rt_launch(ctx, "attn_res", "bwd", dtype, args, sizeof args / sizeof args[0]);
}
