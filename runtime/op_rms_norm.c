/* Typed entry points of RMSNorm: the arguments by name, then ubg_launch's
 * path (the spec validates them). Only what a C signature adds is checked
 * here: the enums. */
#include "internal.h"

static ubg_status check_casting(const ubg_ctx *ctx, const char *fn, ubg_casting casting) {
  if ((unsigned)casting > UBG_CAST_NONE)
    return rt_fail(ctx, UBG_EINVAL, "%s: casting %d is not one of UBG_CAST_LLAMA, UBG_CAST_GEMMA, UBG_CAST_NONE", fn,
                   (int)casting);
  return UBG_OK;
}

ubg_status ubg_rms_norm_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *x, const void *w,
                            float eps, float offset, ubg_casting casting, void *y, float *rstd) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_rms_norm_fwd: ctx is NULL");
  ubg_status s = check_casting(ctx, "ubg_rms_norm_fwd", casting);
  if (s) return s;
  ubg_arg args[] = {
      {"x", UBG_ARG_PTR, {.p = (void *)x}},  {"w", UBG_ARG_PTR, {.p = (void *)w}},
      {"y", UBG_ARG_PTR, {.p = y}},          {"rstd", UBG_ARG_PTR, {.p = rstd}},
      {"rows", UBG_ARG_I64, {.i = rows}},    {"cols", UBG_ARG_I64, {.i = cols}},
      {"eps", UBG_ARG_F64, {.f = eps}},      {"offset", UBG_ARG_F64, {.f = offset}},
      {"casting", UBG_ARG_I64, {.i = casting}},
  };
  return rt_launch(ctx, "rms_norm", "fwd", dtype, args, sizeof args / sizeof args[0]);
}

ubg_status ubg_rms_norm_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t rows, int64_t cols, const void *dy, const void *x,
                            const void *w, const float *rstd, float offset, ubg_casting casting, void *dx, void *dw) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_rms_norm_bwd: ctx is NULL");
  ubg_status s = check_casting(ctx, "ubg_rms_norm_bwd", casting);
  if (s) return s;
  ubg_arg args[] = {
      {"dy", UBG_ARG_PTR, {.p = (void *)dy}},     {"x", UBG_ARG_PTR, {.p = (void *)x}},
      {"w", UBG_ARG_PTR, {.p = (void *)w}},       {"rstd", UBG_ARG_PTR, {.p = (void *)rstd}},
      {"dx", UBG_ARG_PTR, {.p = dx}},             {"dw", UBG_ARG_PTR, {.p = dw}},
      {"rows", UBG_ARG_I64, {.i = rows}},         {"cols", UBG_ARG_I64, {.i = cols}},
      {"offset", UBG_ARG_F64, {.f = offset}},     {"casting", UBG_ARG_I64, {.i = casting}},
  };
  return rt_launch(ctx, "rms_norm", "bwd", dtype, args, sizeof args / sizeof args[0]);
}
