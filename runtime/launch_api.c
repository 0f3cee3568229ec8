/* The public entry of the generic call: ubg_launch and ubg_launch_sized run
 * a kernel's pass (launch.c) or a composite op of the kernel
 * (composite_run.c), whichever the spec names. */
#include <stdio.h>

#include "internal.h"

/* a pass, or a composite op of the kernel (composite_run.c) */
static ubg_status launch_any(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const ubg_arg *args,
                             size_t nargs, const int64_t *nbytes) {
  if (rt_composite_exists(ctx, kernel, pass)) {
    const rt_composite c = {kernel, pass};
    char what[2 * UG_MAX_VARIANT_NAME];
    snprintf(what, sizeof what, "%s.%s", kernel, pass);
    return rt_composite_run(ctx, &c, what, dtype, args, nargs, nbytes);
  }
  return rt_launch_sized(ctx, kernel, pass, dtype, args, nargs, nbytes);
}

ubg_status ubg_launch(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const ubg_arg *args,
                      size_t nargs) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_launch: ctx is NULL");
  return launch_any(ctx, kernel, pass, dtype, args, nargs, NULL);
}

ubg_status ubg_launch_sized(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const ubg_arg *args,
                            size_t nargs, const int64_t *nbytes) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_launch_sized: ctx is NULL");
  return launch_any(ctx, kernel, pass, dtype, args, nargs, nbytes);
}
