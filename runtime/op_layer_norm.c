/* Typed entry points of LayerNorm (specs/layer_norm.json): the arguments
 * by name, then ubg_launch's path. */
#include "internal.h"

ubg_status ubg_layer_norm_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *x, const void *w,
                              const void *b, float eps, void *y, float *mean, float *rstd) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_layer_norm_fwd: ctx is NULL");
  ubg_arg args[] = {
      {"x", UBG_ARG_PTR, {.p = (void *)x}},   {"w", UBG_ARG_PTR, {.p = (void *)w}},
      {"b", UBG_ARG_PTR, {.p = (void *)b}},   {"y", UBG_ARG_PTR, {.p = y}},
      {"mean", UBG_ARG_PTR, {.p = mean}},     {"rstd", UBG_ARG_PTR, {.p = rstd}},
      {"rows", UBG_ARG_I64, {.i = rows}},     {"cols", UBG_ARG_I64, {.i = cols}},
      {"eps", UBG_ARG_F64, {.f = eps}},
  };
  return rt_launch(ctx, "layer_norm", "fwd", dtype, args, sizeof args / sizeof args[0]);
}

ubg_status ubg_layer_norm_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dy, const void *x,
                              const void *w, const float *mean, const float *rstd, void *dx, void *dw, void *db) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_layer_norm_bwd: ctx is NULL");
  ubg_arg args[] = {
      {"dy", UBG_ARG_PTR, {.p = (void *)dy}},     {"x", UBG_ARG_PTR, {.p = (void *)x}},
      {"w", UBG_ARG_PTR, {.p = (void *)w}},       {"mean", UBG_ARG_PTR, {.p = (void *)mean}},
      {"rstd", UBG_ARG_PTR, {.p = (void *)rstd}}, {"dx", UBG_ARG_PTR, {.p = dx}},
      {"dw", UBG_ARG_PTR, {.p = dw}},             {"db", UBG_ARG_PTR, {.p = db}},
      {"rows", UBG_ARG_I64, {.i = rows}},         {"cols", UBG_ARG_I64, {.i = cols}},
  };
  return rt_launch(ctx, "layer_norm", "bwd", dtype, args, sizeof args / sizeof args[0]);
}
