/* ubgen list: every variant of every pass, its UB footprint and whether it
 * fits the budget; then each composite op's axes, whose values name its
 * variants. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* a composite op's axes: printed, or into arr as JSON */
static void list_composite(const ug_kernel *k, const ug_composite *c, json_t *arr) {
  if (!arr) printf("%s.%s  (composite op: variants name axis=value pairs, as %s=...)\n", k->name, c->name, c->axes[0].name);
  json_t *axes = arr ? json_array() : NULL;
  for (int a = 0; a < c->naxes; a++) {
    const ug_comp_axis *x = &c->axes[a];
    if (arr) {
      json_t *e = json_pack("{s:s}", "name", x->name);
      if (x->values) {
        json_t *vals = json_array();
        for (int i = 0; i < x->nvalues; i++) json_array_append_new(vals, json_string(x->values[i]));
        json_object_set_new(e, "values", vals);
        json_t *prefer = json_array();
        for (int p = 0; p < x->nprefer; p++) json_array_append_new(prefer, json_string(x->values[x->prefer[p]]));
        json_object_set_new(e, "prefer", prefer);
      } else {
        json_object_set_new(e, "default", json_string(x->dflt_src));
        json_object_set_new(e, "min", json_integer((json_int_t)x->min));
        json_object_set_new(e, "max", json_integer((json_int_t)x->max));
      }
      json_array_append_new(axes, e);
    } else if (x->values) {
      printf("  %-8s %s (default)", x->name, x->values[0]);
      for (int i = 1; i < x->nvalues; i++) printf(", %s", x->values[i]);
      for (int p = 0; p < x->nprefer; p++)
        printf("%s%s", p ? ", " : "; before the default where it runs: ", x->values[x->prefer[p]]);
      printf("\n");
    } else {
      printf("  %-8s an integer in [%lld, %lld], by default %s\n", x->name, (long long)x->min, (long long)x->max,
             x->dflt_src);
    }
  }
  if (arr)
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:o}", "kernel", k->name, "name", c->name, "about",
                                         c->about ? c->about : "", "axes", axes));
}

static bool kernel_selected(const cli_opts *o, const char *name) {
  if (o->nkernels == 0) return true;
  for (int i = 0; i < o->nkernels; i++)
    if (!strcmp(o->kernels[i], name)) return true;
  return false;
}

int cli_cmd_list(int argc, char **argv) {
  cli_opts o;
  const int parsed = cli_parse(argc, argv, "list", "specs ub margin kernel dtype json", false, &o);
  if (parsed) return parsed < 0 ? EXIT_USAGE : EXIT_OK;
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) return EXIT_USAGE;
  json_t *arr = o.json ? json_array() : NULL, *comps = o.json ? json_array() : NULL;
  int total = 0, fitting = 0, rc = EXIT_OK;
  for (int ki = 0; ki < set.n; ki++) {
    const ug_kernel *k = set.k[ki];
    if (!kernel_selected(&o, k->name)) continue;
    int64_t usable = ug_budget_usable(&o.budget, k);
    for (int pi = 0; pi < k->npasses; pi++) {
      const ug_pass *p = &k->passes[pi];
      ug_variant *vs;
      int nv;
      ug_diag d;
      if (ug_enumerate(p, -1, &vs, &nv, &d) < 0) {
        cli_diag(&d);
        rc = EXIT_USAGE;
        goto out;
      }
      if (!o.json)
        printf("%s.%s  (UB %lld bytes x %.2f = %lld usable)\n  %-44s %10s  %s\n", k->name, p->name,
               (long long)o.budget.ub_bytes, ug_budget_margin(&o.budget, k), (long long)usable, "variant", "footprint",
               "fits");
      for (int i = 0; i < nv; i++) {
        const ug_variant *v = &vs[i];
        if (o.dtype_set && !o.dtypes[v->pt.dtype]) continue;
        bool fits = v->footprint <= usable;
        total++;
        fitting += fits;
        if (o.json) {
          json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:b}", "kernel", k->name, "pass", p->name, "variant",
                                v->name, "dtype", ug_dtype_name(v->pt.dtype), "footprint", (json_int_t)v->footprint,
                                "usable", (json_int_t)usable, "fits", fits);
          json_t *axes = json_object();
          for (int a = 0; a < p->naxes; a++) json_object_set_new(axes, p->axes[a].name, json_integer(v->pt.axis[a]));
          if (p->has_tiled) json_object_set_new(axes, "tiled", json_boolean(v->pt.tiled > 0));
          json_object_set_new(e, "axes", axes);
          json_array_append_new(arr, e);
        } else {
          printf("  %-44s %10lld  %s\n", v->name, (long long)v->footprint, fits ? "yes" : "no (over budget)");
        }
      }
      free(vs);
    }
    for (int ci = 0; ci < k->ncomposites; ci++) list_composite(k, &k->composites[ci], comps);
  }
  if (o.json) {
    json_t *root = json_pack("{s:I, s:o, s:o}", "ub_bytes", (json_int_t)o.budget.ub_bytes, "variants", arr,
                             "composites", comps);
    arr = comps = NULL;
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) puts(s);
    free(s);
    json_decref(root);
  } else {
    printf("%d %s, %d fit the budget\n", total, total == 1 ? "variant" : "variants", fitting);
  }
out:
  json_decref(arr);
  json_decref(comps);
  ug_specset_free(&set);
  return rc;
}
