/* The kernels a context knows: specs from UBGEN_SPEC_PATH first (a user's
 * kernels, or their versions of shipped ones), then the specs embedded in
 * the AOT registries. Each pass is enumerated once here, per dtype, with the
 * built-in function of every variant that has one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/specset.h"
#include "internal.h"

typedef struct {
  ug_specset *set;
  ug_diag *d;
  int rc;
} embed_ctx;

static void add_embedded(const ubg_aot_table *t, void *ud) {
  embed_ctx *e = ud;
  for (size_t i = 0; i < t->nspecs && e->rc == 0; i++) {
    if (!t->specs[i].text) continue;
    ug_kernel *k = ug_spec_parse(t->specs[i].file, NULL, t->specs[i].text, strlen(t->specs[i].text), e->d);
    if (!k || ug_specset_add(e->set, k, e->d) < 0) e->rc = -1;
  }
}

/* AOT functions serve only a spec embedded in a registry: a spec from
 * UBGEN_SPEC_PATH may come with its own templates, which the built-in code
 * was not compiled from, even when the spec text is the same. */
static ubg_status load_pass(ubg_ctx *ctx, rt_pass *rp, const ug_pass *p, bool from_aot) {
  rp->pass = p;
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    rp->forced[dt] = -1;
    if (!p->dtypes[dt]) continue;
    ug_diag d;
    if (ug_enumerate(p, dt, &rp->variants[dt], &rp->nvariants[dt], &d) < 0) {
      char msg[2200];
      ug_diag_format(&d, msg, sizeof msg);
      return rt_fail(NULL, UBG_EINVAL, "%s", msg);
    }
    rp->aot[dt] = calloc((size_t)rp->nvariants[dt] + 1, sizeof *rp->aot[dt]);
    rp->jit[dt] = calloc((size_t)rp->nvariants[dt] + 1, sizeof *rp->jit[dt]);
    if (!rp->aot[dt] || !rp->jit[dt]) return rt_fail(NULL, UBG_ENOMEM, "out of memory");
    if (!from_aot || ctx->backend == UBG_BACKEND_TCC || ctx->backend == UBG_BACKEND_GCC) continue;
    for (int i = 0; i < rp->nvariants[dt]; i++)
      rp->aot[dt][i] = rt_aot_lookup(rp->variants[dt][i].name, p->kernel->hash);
  }
  return UBG_OK;
}

ubg_status rt_kernels_load(ubg_ctx *ctx) {
  ug_specset set = {0};
  ug_diag d;
  if (ug_specset_add_path(&set, ctx->spec_path, &d) < 0) {
    char msg[2200];
    ug_diag_format(&d, msg, sizeof msg);
    ug_specset_free(&set);
    return rt_fail(NULL, UBG_EINVAL, "%s: %s", ctx->spec_path_source, msg);
  }
  int user = set.n;
  embed_ctx e = {&set, &d, 0};
  rt_aot_each(add_embedded, &e);
  if (e.rc < 0) {
    char msg[2200];
    ug_diag_format(&d, msg, sizeof msg);
    ug_specset_free(&set);
    return rt_fail(NULL, UBG_EINVAL, "built-in spec: %s", msg);
  }
  ctx->kernels = calloc((size_t)set.n + 1, sizeof *ctx->kernels);
  if (!ctx->kernels) {
    ug_specset_free(&set);
    return rt_fail(NULL, UBG_ENOMEM, "out of memory");
  }
  /* the context owns the specs from here on */
  for (int i = 0; i < set.n; i++) {
    rt_kernel *rk = &ctx->kernels[ctx->nkernels++];
    rk->spec = set.k[i];
    rk->from_aot = i >= user;
    set.k[i] = NULL;
    rk->passes = calloc((size_t)rk->spec->npasses, sizeof *rk->passes);
    if (!rk->passes) {
      ug_specset_free(&set);
      return rt_fail(NULL, UBG_ENOMEM, "out of memory");
    }
    for (int p = 0; p < rk->spec->npasses; p++) {
      ubg_status s = load_pass(ctx, &rk->passes[p], &rk->spec->passes[p], rk->from_aot);
      if (s) {
        ug_specset_free(&set);
        return s;
      }
    }
  }
  ug_specset_free(&set);
  return UBG_OK;
}

void rt_kernels_free(ubg_ctx *ctx) {
  for (int i = 0; i < ctx->nkernels; i++) {
    rt_kernel *rk = &ctx->kernels[i];
    if (rk->passes && rk->spec)
      for (int p = 0; p < rk->spec->npasses; p++)
        for (int dt = 0; dt < UG_NDTYPES; dt++) {
          free(rk->passes[p].variants[dt]);
          free(rk->passes[p].aot[dt]);
          free(rk->passes[p].jit[dt]);
        }
    free(rk->passes);
    ug_spec_free(rk->spec);
  }
  free(ctx->kernels);
  ctx->kernels = NULL;
  ctx->nkernels = 0;
}

ubg_status rt_find_pass(const ubg_ctx *ctx, const char *kernel, const char *pass, rt_pass **out) {
  if (!kernel) return rt_fail(ctx, UBG_EINVAL, "kernel is NULL");
  if (!pass) return rt_fail(ctx, UBG_EINVAL, "pass is NULL");
  for (int i = 0; i < ctx->nkernels; i++) {
    rt_kernel *rk = &ctx->kernels[i];
    if (strcmp(rk->spec->name, kernel) != 0) continue;
    for (int p = 0; p < rk->spec->npasses; p++) {
      if (!strcmp(rk->spec->passes[p].name, pass)) {
        *out = &rk->passes[p];
        return UBG_OK;
      }
    }
    char names[256] = "";
    for (int p = 0; p < rk->spec->npasses; p++) {
      strncat(names, rk->spec->passes[p].name, sizeof names - strlen(names) - 3);
      if (p + 1 < rk->spec->npasses) strncat(names, ", ", sizeof names - strlen(names) - 1);
    }
    return rt_fail(ctx, UBG_ENOTFOUND, "kernel \"%.64s\" has no pass \"%.64s\" (passes: %s)", kernel, pass, names);
  }
  char names[512] = "";
  for (int i = 0; i < ctx->nkernels; i++) {
    strncat(names, ctx->kernels[i].spec->name, sizeof names - strlen(names) - 3);
    if (i + 1 < ctx->nkernels) strncat(names, ", ", sizeof names - strlen(names) - 1);
  }
  return rt_fail(ctx, UBG_ENOTFOUND,
                 "no kernel named \"%.64s\" (known: %s; a kernel of your own is found through UBGEN_SPEC_PATH or "
                 "ubg_config.spec_path, the directories of its spec)",
                 kernel, names[0] ? names : "none");
}

const ug_kernel *rt_find_kernel(const ubg_ctx *ctx, const char *name) {
  for (int i = 0; ctx && name && i < ctx->nkernels; i++)
    if (!strcmp(ctx->kernels[i].spec->name, name)) return ctx->kernels[i].spec;
  return NULL;
}
