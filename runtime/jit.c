/* Which code runs a variant (DESIGN.md "Backends"):
 *   AOT   the function built into the library, if the variant is there
 *   TCC   compiled in memory now (about 0.3 ms), cached per context
 *   AUTO  AOT, else what this context compiled before, else tcc now
 * A compile renders the same source `ubgen emit` writes. Compiles are
 * serialized per context, so threads that need the same variant at once
 * compile it once; the function pointer is published atomically, so later
 * calls take no lock. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/source.h"
#include "internal.h"

const char *rt_backend_name(int backend) {
  switch (backend) {
  case RT_RAN_AOT: return "aot";
  case RT_RAN_TCC: return "tcc";
  case RT_RAN_GCC: return "gcc";
  }
  return "?";
}

static ubg_status render(ubg_ctx *ctx, const ug_variant *v, char **src) {
  char shipped[4200];
  snprintf(shipped, sizeof shipped, "%s/templates", rt_data_dir());
  ug_kernel_path kp;
  ug_kernel_path_init(&kp, v->pass->kernel, shipped);
  ug_diag d;
  *src = ug_variant_source(v, &kp.path, &d);
  if (*src) return UBG_OK;
  char msg[2200];
  ug_diag_format(&d, msg, sizeof msg);
  return rt_fail(ctx, UBG_ECOMPILE, "cannot render %s: %s", v->name, msg);
}

static ubg_status remember_state(ubg_ctx *ctx, void *state) {
  if (ctx->njit_states == ctx->cap_jit_states) {
    int cap = ctx->cap_jit_states ? ctx->cap_jit_states * 2 : 16;
    void **n = realloc(ctx->jit_states, (size_t)cap * sizeof *n);
    if (!n) return rt_fail(ctx, UBG_ENOMEM, "out of memory");
    ctx->jit_states = n;
    ctx->cap_jit_states = cap;
  }
  ctx->jit_states[ctx->njit_states++] = state;
  return UBG_OK;
}

ubg_status rt_kernel_fn(ubg_ctx *ctx, rt_pass *rp, int dtype, int index, ubg_kernel_fn *fn, int *ran) {
  const ug_variant *v = &rp->variants[dtype][index];
  if (ctx->backend == UBG_BACKEND_AUTO || ctx->backend == UBG_BACKEND_AOT) {
    if (rp->aot[dtype][index]) {
      *fn = rp->aot[dtype][index];
      *ran = RT_RAN_AOT;
      return UBG_OK;
    }
    if (ctx->backend == UBG_BACKEND_AOT)
      return rt_fail(ctx, UBG_ENOTFOUND, "%s is not built into this library (backend aot)", v->name);
  }
  rt_jit_slot *slot = &rp->jit[dtype][index];
  *fn = atomic_load_explicit(&slot->fn, memory_order_acquire);
  if (*fn) {
    *ran = atomic_load_explicit(&slot->ran, memory_order_relaxed);
    return UBG_OK;
  }
  if (ctx->backend == UBG_BACKEND_GCC)
    return rt_fail(ctx, UBG_ENOTFOUND, "%s: the gcc backend is not in this build yet", v->name);
  pthread_mutex_lock(&ctx->jit_lock);
  ubg_status s = UBG_OK;
  *fn = atomic_load_explicit(&slot->fn, memory_order_acquire);
  if (!*fn) {
    char *src = NULL;
    void *state = NULL;
    ubg_kernel_fn f = NULL;
    s = render(ctx, v, &src);
    if (!s) s = rt_tcc_compile(ctx, v->name, src, &f, &state);
    if (!s) s = remember_state(ctx, state);
    if (s && state) rt_tcc_free(state);
    free(src);
    if (!s) {
      atomic_store_explicit(&slot->ran, RT_RAN_TCC, memory_order_relaxed);
      atomic_store_explicit(&slot->fn, f, memory_order_release);
      atomic_fetch_add(&ctx->jit_compiles, 1);
      rt_log("%s compiled by tcc", v->name);
      *fn = f;
    }
  }
  pthread_mutex_unlock(&ctx->jit_lock);
  if (!s) *ran = atomic_load_explicit(&slot->ran, memory_order_relaxed);
  return s;
}

void rt_jit_free(ubg_ctx *ctx) {
  for (int i = 0; i < ctx->njit_states; i++) rt_tcc_free(ctx->jit_states[i]);
  free(ctx->jit_states);
  ctx->jit_states = NULL;
  ctx->njit_states = ctx->cap_jit_states = 0;
}
