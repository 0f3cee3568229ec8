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
  ctx->dnnl = rt_dnnl_cache_new();
  ubg_status s = rt_config_resolve(ctx, cfg);
  if (!s) s = rt_kernels_load(ctx);
  if (!s) rt_tunedb_load(ctx);
  if (!s) s = rt_env_variants(ctx);
  if (s) {
    ubg_ctx_destroy(ctx);
    return s;
  }
  rt_log("context %llu: ub_bytes %lld, margin %g, %d threads, %d kernels%s", (unsigned long long)ctx->id,
         (long long)ctx->budget.ub_bytes, ctx->budget.margin, ctx->threads, ctx->nkernels, ctx->guard ? ", UB guard pages" : "");
  *out = ctx;
  return UBG_OK;
}

void ubg_ctx_destroy(ubg_ctx *ctx) {
  if (!ctx) return;
  rt_jit_free(ctx);
  rt_kernels_free(ctx);
  rt_pools_free(ctx);
  rt_dnnl_cache_free(ctx->dnnl);
  free(ctx->tuning_db);
  ug_tunedb_free(&ctx->tunedb);
  free(ctx->cache_dir);
  free(ctx->spec_path);
  pthread_mutex_destroy(&ctx->lock);
  pthread_mutex_destroy(&ctx->jit_lock);
  free(ctx);
}

const ug_tunedb *rt_ctx_tunedb(const ubg_ctx *ctx) { return &ctx->tunedb; }
int64_t rt_ctx_ub_bytes(const ubg_ctx *ctx) { return ctx->budget.ub_bytes; }
int rt_ctx_jit_compiles(const ubg_ctx *ctx) { return atomic_load(&ctx->jit_compiles); }

/* variant `name` of rp in dtype (-1: any dtype): its dtype and index, or -1 */
static int find_variant(const rt_pass *rp, int dtype, const char *name, int *dt_out) {
  for (int dt = dtype < 0 ? 0 : dtype; dt < (dtype < 0 ? UG_NDTYPES : dtype + 1); dt++)
    for (int i = 0; i < rp->nvariants[dt]; i++)
      if (!strcmp(rp->variants[dt][i].name, name)) {
        *dt_out = dt;
        return i;
      }
  return -1;
}

ubg_status ubg_set_variant(ubg_ctx *ctx, const char *kernel, const char *pass, const char *variant) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_set_variant: ctx is NULL");
  if (rt_composite_exists(ctx, kernel, pass)) return rt_composite_set(ctx, &(rt_composite){kernel, pass}, variant, false);
  rt_pass *rp;
  ubg_status s = rt_find_pass(ctx, kernel, pass, &rp);
  if (s) return s;
  if (!variant) {
    pthread_mutex_lock(&ctx->lock);
    for (int dt = 0; dt < UG_NDTYPES; dt++) rp->forced[dt] = -1;
    pthread_mutex_unlock(&ctx->lock);
    return UBG_OK;
  }
  int dt, i = find_variant(rp, -1, variant, &dt);
  if (i >= 0) {
    const ug_variant *v = &rp->variants[dt][i];
    int64_t usable = ug_budget_usable(&ctx->budget, rp->pass->kernel);
    if (v->footprint > usable)
      return rt_fail(ctx, UBG_EUB, "variant %s needs %lld bytes of UB; the budget allows %lld (%lld bytes x %.2f)",
                     v->name, (long long)v->footprint, (long long)usable, (long long)ctx->budget.ub_bytes,
                     ug_budget_margin(&ctx->budget, rp->pass->kernel));
    pthread_mutex_lock(&ctx->lock);
    rp->forced[dt] = i;
    pthread_mutex_unlock(&ctx->lock);
    return UBG_OK;
  }
  const char *example = "";
  for (dt = 0; dt < UG_NDTYPES && !*example; dt++)
    if (rp->nvariants[dt]) example = rp->variants[dt][0].name;
  return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no variant \"%.160s\" (names look like %s; `ubgen list` lists them)",
                 kernel, pass, variant, example);
}

/* UBGEN_VARIANT="kernel.pass=variant;...": each entry forced on a new
 * context as ubg_set_variant forces it; a bad one fails the creation,
 * named (a later ubg_set_variant replaces an entry's choice) */
ubg_status rt_env_variants(ubg_ctx *ctx) {
  const char *env = getenv("UBGEN_VARIANT");
  if (!env || !*env) return UBG_OK;
  char *copy = strdup(env);
  if (!copy) return rt_fail(NULL, UBG_ENOMEM, "out of memory");
  ubg_status s = UBG_OK;
  char *save = NULL;
  for (char *e = strtok_r(copy, ";", &save); e && !s; e = strtok_r(NULL, ";", &save)) {
    while (*e == ' ') e++;
    for (size_t n = strlen(e); n > 0 && e[n - 1] == ' '; n--) e[n - 1] = '\0';
    if (!*e) continue;
    char *eq = strchr(e, '='), *dot = strchr(e, '.');
    if (!eq || !dot || dot > eq || dot == e || dot + 1 == eq || !eq[1]) {
      s = rt_fail(NULL, UBG_EINVAL, "UBGEN_VARIANT entry \"%.200s\" is not kernel.pass=variant", e);
      break;
    }
    *dot = *eq = '\0';
    const char *kernel = e, *pass = dot + 1, *variant = eq + 1;
    s = rt_composite_exists(ctx, kernel, pass) ? rt_composite_set(ctx, &(rt_composite){kernel, pass}, variant, true)
                                               : ubg_set_variant(ctx, kernel, pass, variant);
    if (s) {
      char why[600];
      snprintf(why, sizeof why, "%s", ubg_ctx_error(ctx));
      s = rt_fail(NULL, s, "UBGEN_VARIANT entry %s.%s=%s: %s", kernel, pass, variant, why);
    }
  }
  free(copy);
  return s;
}

ubg_status ubg_prepare(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const char *variant) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_prepare: ctx is NULL");
  if ((int)dtype < 0 || (int)dtype >= UG_NDTYPES) return rt_fail(ctx, UBG_EINVAL, "ubg_prepare: dtype %d is not a ubg_dtype", (int)dtype);
  rt_pass *rp;
  ubg_status s = rt_find_pass(ctx, kernel, pass, &rp);
  if (s) return s;
  if (!rp->pass->dtypes[dtype])
    return rt_fail(ctx, UBG_EINVAL, "%s.%s has no %s variants", kernel, pass, ug_dtype_name((int)dtype));
  /* one variant, or every one that fits */
  int first = 0, last = rp->nvariants[dtype], dt;
  if (variant) {
    first = find_variant(rp, (int)dtype, variant, &dt);
    if (first < 0)
      return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no %s variant \"%.160s\" (`ubgen list --kernel %s` lists them)",
                     kernel, pass, ug_dtype_name((int)dtype), variant, kernel);
    last = first + 1;
  }
  int64_t usable = ug_budget_usable(&ctx->budget, rp->pass->kernel);
  for (int i = first; i < last; i++) {
    const ug_variant *v = &rp->variants[dtype][i];
    if (!variant && v->footprint > usable) continue;
    ubg_kernel_fn fn;
    int ran;
    if ((s = rt_kernel_fn(ctx, rp, (int)dtype, i, &fn, &ran)) != UBG_OK) return s;
    char last_name[200];
    snprintf(last_name, sizeof last_name, "%s@%s", v->name, rt_backend_name(ran));
    rt_set_last_variant(ctx, last_name);
  }
  return UBG_OK;
}
