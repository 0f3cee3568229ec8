/* Which code runs a variant (docs/design.md "Backends"):
 *   AOT   the function built into the library, if the variant is there
 *   TCC   compiled in memory now (about 0.3 ms), cached per context
 *   GCC   from the disk cache, compiled into it first when missing
 *   AUTO  AOT, else what this context compiled before, else a gcc cache
 *         hit, else tcc now (and, with UBGEN_JIT_ASYNC=1, gcc in the
 *         background, its code swapped in when ready)
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

static ubg_status remember(ubg_ctx *ctx, int kind, void *state) {
  if (ctx->njit_states == ctx->cap_jit_states) {
    int cap = ctx->cap_jit_states ? ctx->cap_jit_states * 2 : 16;
    rt_jit_state *n = realloc(ctx->jit_states, (size_t)cap * sizeof *n);
    if (!n) return rt_fail(ctx, UBG_ENOMEM, "out of memory");
    ctx->jit_states = n;
    ctx->cap_jit_states = cap;
  }
  ctx->jit_states[ctx->njit_states].kind = kind;
  ctx->jit_states[ctx->njit_states++].p = state;
  return UBG_OK;
}

static void publish(ubg_ctx *ctx, rt_jit_slot *slot, ubg_kernel_fn f, int ran, const char *name) {
  atomic_store_explicit(&slot->ran, ran, memory_order_relaxed);
  atomic_store_explicit(&slot->fn, f, memory_order_release);
  atomic_fetch_add(&ctx->jit_compiles, 1);
  rt_log("%s runs on %s code", name, rt_backend_name(ran));
}

/* The background half of AUTO with UBGEN_JIT_ASYNC=1: gcc builds the variant
 * tcc just compiled, and the better code replaces tcc's in the slot. Calls
 * already running finish on tcc's code, which stays until the context goes. */
typedef struct {
  ubg_ctx *ctx;
  rt_jit_slot *slot;
  char *name;
  char *src;
} async_job;

static void *async_gcc(void *arg) {
  async_job *j = arg;
  ubg_kernel_fn f;
  void *handle;
  bool usable;
  if (rt_gcc_get(j->ctx, j->name, j->src, 1, &f, &handle, &usable) == UBG_OK) {
    pthread_mutex_lock(&j->ctx->jit_lock);
    if (remember(j->ctx, RT_RAN_GCC, handle) == UBG_OK) publish(j->ctx, j->slot, f, RT_RAN_GCC, j->name);
    else rt_gcc_free(handle);
    pthread_mutex_unlock(&j->ctx->jit_lock);
  }
  free(j->name);
  free(j->src);
  free(j);
  return NULL;
}

/* under ctx->jit_lock */
static void start_async(ubg_ctx *ctx, rt_jit_slot *slot, const char *name, const char *src) {
  if (ctx->nasync == RT_MAX_ASYNC) return;
  async_job *j = calloc(1, sizeof *j);
  if (!j || !(j->name = strdup(name)) || !(j->src = strdup(src))) {
    if (j) free(j->name);
    free(j);
    return;
  }
  j->ctx = ctx;
  j->slot = slot;
  if (pthread_create(&ctx->async[ctx->nasync], NULL, async_gcc, j) == 0) ctx->nasync++;
  else free(j->name), free(j->src), free(j);
}

/* compiles v now, under ctx->jit_lock */
static ubg_status compile(ubg_ctx *ctx, const ug_variant *v, rt_jit_slot *slot) {
  char *src = NULL;
  ubg_status s = render(ctx, v, &src);
  if (s) return s;
  ubg_kernel_fn f = NULL;
  void *state = NULL;
  bool gcc_usable = false;
  int ran = 0;
  if (ctx->backend == UBG_BACKEND_GCC || ctx->backend == UBG_BACKEND_AUTO) {
    /* gcc: build if asked for it, else only take what the cache has */
    s = rt_gcc_get(ctx, v->name, src, ctx->backend == UBG_BACKEND_GCC || !rt_have_tcc, &f, &state, &gcc_usable);
    if (!s) ran = RT_RAN_GCC;
    else if (s != UBG_ENOTFOUND) goto out; /* a compile error, or the cache failed */
    if (!s || (ctx->backend == UBG_BACKEND_GCC && gcc_usable)) goto out;
  }
  /* tcc: asked for, AUTO without a cached object, or gcc refused its cache dir */
  s = rt_tcc_compile(ctx, v->name, src, &f, &state);
  if (!s) {
    ran = RT_RAN_TCC;
    if (ctx->backend == UBG_BACKEND_AUTO && ctx->jit_async && gcc_usable) start_async(ctx, slot, v->name, src);
  }
out:
  if (!s) s = remember(ctx, ran, state);
  if (!s) publish(ctx, slot, f, ran, v->name);
  else if (state) ran == RT_RAN_GCC ? rt_gcc_free(state) : rt_tcc_free(state);
  free(src);
  return s;
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
  if (!*fn) {
    pthread_mutex_lock(&ctx->jit_lock);
    ubg_status s = UBG_OK;
    if (!atomic_load_explicit(&slot->fn, memory_order_acquire)) s = compile(ctx, v, slot);
    pthread_mutex_unlock(&ctx->jit_lock);
    if (s) return s;
    *fn = atomic_load_explicit(&slot->fn, memory_order_acquire);
  }
  *ran = atomic_load_explicit(&slot->ran, memory_order_relaxed);
  return UBG_OK;
}

void rt_jit_free(ubg_ctx *ctx) {
  for (int i = 0; i < ctx->nasync; i++) pthread_join(ctx->async[i], NULL);
  ctx->nasync = 0;
  for (int i = 0; i < ctx->njit_states; i++) {
    if (ctx->jit_states[i].kind == RT_RAN_GCC) rt_gcc_free(ctx->jit_states[i].p);
    else rt_tcc_free(ctx->jit_states[i].p);
  }
  free(ctx->jit_states);
  ctx->jit_states = NULL;
  ctx->njit_states = ctx->cap_jit_states = 0;
}
