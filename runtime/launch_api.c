/* The public entry of the generic call: ubg_launch and ubg_launch_sized run
 * a kernel's pass (launch.c) or a composite op of the kernel
 * (composite_run.c), whichever the spec names; ubg_arg_info describes
 * either's arguments. */
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

ubg_status ubg_arg_info(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, int index,
                        const char **name, ubg_arg_kind *kind, const char **elem, int *written) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_arg_info: ctx is NULL");
  if (!kernel || !pass) return rt_fail(ctx, UBG_EINVAL, "ubg_arg_info: kernel or pass is NULL");
  if ((unsigned)dtype >= UG_NDTYPES)
    return rt_fail(ctx, UBG_EINVAL, "ubg_arg_info: dtype %d is not one of UBG_F32, UBG_F16, UBG_BF16", (int)dtype);
  const ug_pass *p = NULL;
  if (rt_composite_exists(ctx, kernel, pass)) {
    const rt_composite c = {kernel, pass};
    const ug_composite *comp = rt_composite_spec(ctx, &c, NULL, 0);
    p = comp ? comp->call : NULL;
  } else {
    rt_pass *rp;
    ubg_status s = rt_find_pass(ctx, kernel, pass, &rp);
    if (s) return s;
    p = rp->pass;
  }
  if (!p || index < 0 || index >= p->nargs)
    return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no argument number %d", kernel, pass, index);
  const ug_arg *a = &p->args[index];
  bool tensor = a->kind == UG_ARG_TENSOR;
  if (name) *name = a->name;
  if (kind) *kind = tensor ? UBG_ARG_PTR : a->kind == UG_ARG_INT ? UBG_ARG_I64 : UBG_ARG_F64;
  if (elem) *elem = tensor ? ug_elem_name(ug_elem_of(a->elem, (int)dtype)) : NULL;
  if (written) *written = tensor && a->role != UG_ROLE_IN;
  return UBG_OK;
}
