#include "variant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ubplan.h"

void ug_variant_name(const ug_pass *p, const ug_point *pt, char *out, size_t n) {
  size_t len = (size_t)snprintf(out, n, "%s_%s_%s", p->kernel->name, p->name, ug_dtype_name(pt->dtype));
  for (int i = 0; i < p->naxes && len < n; i++)
    len += (size_t)snprintf(out + len, n - len, "_%s%lld", p->axes[i].tag, (long long)pt->axis[i]);
  if (pt->tiled >= 0 && len < n) snprintf(out + len, n - len, "_%c", pt->tiled ? 't' : 'n');
}

static int variant_ok(const ug_pass *p, const ug_point *pt, int64_t *env, bool *ok, ug_diag *d) {
  ug_point_env(p, pt, env);
  *ok = true;
  for (int c = 0; c < p->nconstraints && *ok; c++) {
    const ug_rule *r = &p->constraints[c];
    if (!r->variant_only) continue;
    int64_t v;
    ug_expr_err err;
    if (ug_expr_eval(r->require, env, &v, &err) < 0)
      return ug_fail(d, p->kernel->path, r->at, "constraint \"%s\": %s", ug_expr_source(r->require), err.msg);
    *ok = v != 0;
  }
  return 0;
}

int ug_enumerate(const ug_pass *p, int dtype, ug_variant **out, int *n, ug_diag *d) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  if (!env) return ug_fail(d, p->kernel->path, p->at, "out of memory");
  int idx[UG_MAX_AXES] = {0};
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    if (!p->dtypes[dt] || (dtype >= 0 && dt != dtype)) continue;
    for (int t = p->has_tiled ? 0 : -1; t <= (p->has_tiled ? 1 : -1); t++) {
      if (t >= 0 && !p->tiled_values[t]) continue;
      memset(idx, 0, sizeof idx);
      for (;;) {
        ug_point pt = {dt, {0}, t};
        for (int i = 0; i < p->naxes; i++) pt.axis[i] = p->axes[i].values[idx[i]];
        bool ok;
        if (variant_ok(p, &pt, env, &ok, d) < 0) goto fail;
        if (ok) {
          if ((size_t)*n == cap) {
            cap = cap ? cap * 2 : 64;
            ug_variant *nv = realloc(*out, cap * sizeof *nv);
            if (!nv) {
              ug_fail(d, p->kernel->path, p->at, "out of memory");
              goto fail;
            }
            *out = nv;
          }
          ug_variant *v = &(*out)[*n];
          memset(v, 0, sizeof *v);
          v->pass = p;
          v->pt = pt;
          ug_variant_name(p, &pt, v->name, sizeof v->name);
          if (ug_plan(p, &pt, v, d) < 0) goto fail;
          (*n)++;
        }
        /* odometer over the axes, last axis fastest */
        int i = p->naxes - 1;
        while (i >= 0 && ++idx[i] == p->axes[i].nvalues) idx[i--] = 0;
        if (i < 0) break;
      }
    }
  }
  free(env);
  return 0;
fail:
  free(env);
  free(*out);
  *out = NULL;
  *n = 0;
  return -1;
}

int ug_find_variant(const ug_pass *p, const char *name, ug_variant *out, ug_diag *d) {
  ug_variant *all;
  int n;
  if (ug_enumerate(p, -1, &all, &n, d) < 0) return -1;
  for (int i = 0; i < n; i++) {
    if (strcmp(all[i].name, name) == 0) {
      *out = all[i];
      free(all);
      return 0;
    }
  }
  char example[200] = "";
  if (n > 0) snprintf(example, sizeof example, ", for example %s", all[0].name);
  free(all);
  return ug_fail(d, NULL, (ug_loc){0, 0}, "%s.%s has no variant named \"%s\" (%d variants%s; `ubgen list --kernel %s` lists them)",
                 p->kernel->name, p->name, name, n, example, p->kernel->name);
}

void ug_sample_mark(const ug_variant *v, int n, int every, bool *keep) {
  int widest = -1, first_tiled = -1;
  for (int i = 0; i < n; i++) {
    if (v[i].pt.tiled == 1 && first_tiled < 0) first_tiled = i;
    if (v[i].pt.tiled != 1 && (widest < 0 || v[i].pt.axis[0] > v[widest].pt.axis[0])) widest = i;
  }
  for (int i = 0; i < n; i++)
    if (i % every == 0 || i == widest || i == first_tiled) keep[i] = true;
}
