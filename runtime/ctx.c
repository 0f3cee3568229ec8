/* Contexts: creation (configuration, kernels), destruction, forced variants. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static atomic_uint_fast64_t next_id = 2; /* 1 is ubg_ctx_create's own message slot */

ubg_status ubg_ctx_create(const ubg_config *cfg, ubg_ctx **out) {
  if (!out) return rt_fail(NULL, UBG_EINVAL, "ubg_ctx_create: out is NULL");
  *out = NULL;
  ubg_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rt_fail(NULL, UBG_ENOMEM, "out of memory");
  ctx->id = atomic_fetch_add(&next_id, 1);
  if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
    free(ctx);
    return rt_fail(NULL, UBG_ENOMEM, "cannot create a mutex");
  }
  if (pthread_mutex_init(&ctx->jit_lock, NULL) != 0) {
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return rt_fail(NULL, UBG_ENOMEM, "cannot create a mutex");
  }
  ubg_status s = rt_config_resolve(ctx, cfg);
  if (!s) s = rt_kernels_load(ctx);
  if (!s) rt_tunedb_load(ctx);
  if (s) {
    ubg_ctx_destroy(ctx);
    return s;
  }
  rt_log("context %llu: ub_bytes %lld, margin %g, %d threads, %d kernels%s", (unsigned long long)ctx->id,
         (long long)ctx->ub_bytes, ctx->budget.margin, ctx->threads, ctx->nkernels, ctx->guard ? ", UB guard pages" : "");
  *out = ctx;
  return UBG_OK;
}

void ubg_ctx_destroy(ubg_ctx *ctx) {
  if (!ctx) return;
  rt_jit_free(ctx);
  rt_kernels_free(ctx);
  rt_pools_free(ctx);
  free(ctx->tuning_db);
  ug_tunedb_free(&ctx->tunedb);
  free(ctx->cache_dir);
  pthread_mutex_destroy(&ctx->lock);
  pthread_mutex_destroy(&ctx->jit_lock);
  free(ctx);
}

ubg_status ubg_set_variant(ubg_ctx *ctx, const char *kernel, const char *pass, const char *variant) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_set_variant: ctx is NULL");
  rt_pass *rp;
  ubg_status s = rt_find_pass(ctx, kernel, pass, &rp);
  if (s) return s;
  if (!variant) {
    pthread_mutex_lock(&ctx->lock);
    for (int dt = 0; dt < UG_NDTYPES; dt++) rp->forced[dt] = -1;
    pthread_mutex_unlock(&ctx->lock);
    return UBG_OK;
  }
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    for (int i = 0; i < rp->nvariants[dt]; i++) {
      const ug_variant *v = &rp->variants[dt][i];
      if (strcmp(v->name, variant) != 0) continue;
      int64_t usable = ug_budget_usable(&ctx->budget, rp->pass->kernel);
      if (v->footprint > usable)
        return rt_fail(ctx, UBG_EUB, "variant %s needs %lld bytes of UB; the budget allows %lld (%lld bytes x %.2f)",
                       v->name, (long long)v->footprint, (long long)usable, (long long)ctx->ub_bytes,
                       ug_budget_margin(&ctx->budget, rp->pass->kernel));
      pthread_mutex_lock(&ctx->lock);
      rp->forced[dt] = i;
      pthread_mutex_unlock(&ctx->lock);
      return UBG_OK;
    }
  }
  const char *example = "";
  for (int dt = 0; dt < UG_NDTYPES && !*example; dt++)
    if (rp->nvariants[dt]) example = rp->variants[dt][0].name;
  return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no variant \"%.160s\" (names look like %s; `ubgen list` lists them)",
                 kernel, pass, variant, example);
}

ubg_status ubg_prepare(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const char *variant) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_prepare: ctx is NULL");
  if ((int)dtype < 0 || (int)dtype >= UG_NDTYPES) return rt_fail(ctx, UBG_EINVAL, "ubg_prepare: dtype %d is not a ubg_dtype", (int)dtype);
  rt_pass *rp;
  ubg_status s = rt_find_pass(ctx, kernel, pass, &rp);
  if (s) return s;
  if (!rp->pass->dtypes[dtype])
    return rt_fail(ctx, UBG_EINVAL, "%s.%s has no %s variants", kernel, pass, ug_dtype_name((int)dtype));
  int64_t usable = ug_budget_usable(&ctx->budget, rp->pass->kernel);
  int found = 0;
  for (int i = 0; i < rp->nvariants[dtype]; i++) {
    const ug_variant *v = &rp->variants[dtype][i];
    if (variant ? strcmp(v->name, variant) != 0 : v->footprint > usable) continue;
    found = 1;
    ubg_kernel_fn fn;
    int ran;
    if ((s = rt_kernel_fn(ctx, rp, (int)dtype, i, &fn, &ran)) != UBG_OK) return s;
    char last[200];
    snprintf(last, sizeof last, "%s@%s", v->name, rt_backend_name(ran));
    rt_set_last_variant(ctx, last);
  }
  if (!found && variant)
    return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no %s variant \"%.160s\" (`ubgen list --kernel %s` lists them)", kernel,
                   pass, ug_dtype_name((int)dtype), variant, kernel);
  return UBG_OK;
}
