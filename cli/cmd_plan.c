/* ubgen plan KERNEL.PASS --dtype D --shape ...: what the runtime would run
 * for this shape and why, the UB layout of that variant, and every other
 * variant with its footprint and why it is or is not a candidate. A
 * composite op (flce.chunk) is planned by plan_composite.c. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../gen/bind.h"
#include "cli.h"
#include "shape_arg.h"
#include "../gen/strategy.h"
#include "../gen/tuned.h"

static const ug_kernel *set_kernel(const char *name, const void *set) { return ug_specset_find(set, name); }

static json_t *layout_json(const ug_variant *v) {
  json_t *arr = json_array();
  const ug_pass *p = v->pass;
  for (int i = 0; i < p->nub; i++)
    json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I}", "name", p->ub[i].name, "type",
                                         ug_elem_name(p->ub[i].elem)[0] == 'T' ? ug_dtype_name(v->pt.dtype)
                                                                               : ug_elem_name(p->ub[i].elem),
                                         "count", (json_int_t)v->ub[i].count, "offset", (json_int_t)v->ub[i].offset,
                                         "bytes", (json_int_t)v->ub[i].bytes));
  return arr;
}

int (*cli_plan_composite)(cli_opts *o, int dtype, const ug_kernel *k, const ug_composite *c);

int cli_cmd_plan(int argc, char **argv) {
  cli_opts o;
  const int parsed = cli_parse(argc, argv, "plan", "specs ub margin dtype shape json verbose db", true, &o);
  if (parsed) return parsed < 0 ? EXIT_USAGE : EXIT_OK;
  if (!o.target) {
    cli_error("plan: which KERNEL.PASS? (for example: ubgen plan rms_norm.fwd --dtype bf16 --shape rows=2048,cols=4096)");
    return EXIT_USAGE;
  }
  if (o.ndtype_args > 1) {
    cli_error("plan: --dtype \"%s\" after --dtype \"%s\": give exactly one --dtype (f32, f16 or bf16)", o.dtype_args[1],
              o.dtype_args[0]);
    return EXIT_USAGE;
  }
  int dtype = -1;
  for (int i = 0; i < UG_NDTYPES; i++)
    if (o.dtypes[i]) dtype = i;
  if (dtype < 0) {
    cli_error("plan: give exactly one --dtype (f32, f16 or bf16)");
    return EXIT_USAGE;
  }
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) return EXIT_USAGE;
  int rc = EXIT_USAGE;
  const ug_kernel *k;
  const ug_pass *p;
  ug_variant *vs = NULL;
  int64_t *env = NULL;
  json_t *root = NULL;
  char kname[UG_MAX_VARIANT_NAME + 1];
  const char *dot = strchr(o.target, '.');
  snprintf(kname, sizeof kname, "%.*s", dot ? (int)(dot - o.target) : 0, o.target);
  k = dot ? ug_specset_find(&set, kname) : NULL;
  const ug_composite *comp = k ? ug_spec_composite(k, dot + 1) : NULL;
  if (comp && cli_plan_composite) {
    rc = cli_plan_composite(&o, dtype, k, comp);
    goto out;
  }
  if (comp) {
    cli_error("plan: %s is a composite op, which this build of ubgen cannot plan (it has no runtime)", o.target);
    goto out;
  }
  if (cli_find_pass(&set, o.target, &k, &p) < 0) goto out;
  if (!p->dtypes[dtype]) {
    cli_error("plan: %s has no %s variants", o.target, ug_dtype_name(dtype));
    goto out;
  }
  env = calloc((size_t)p->nsyms + 1, sizeof *env);
  if (!env || cli_shape_env(p, o.shape, env) < 0) goto out;
  int nv;
  ug_diag d;
  if (ug_enumerate(p, dtype, &vs, &nv, &d) < 0) {
    cli_diag(&d);
    goto out;
  }
  int64_t usable = ug_budget_usable(&o.budget, k);
  ug_choice choice;
  if (ug_default_strategy(p, vs, nv, env, usable, &choice, &d) < 0) {
    cli_diag(&d);
    goto out;
  }
  /* the tuning DB overrides the default strategy, as at run time: --db, else
   * the one the library reads */
  char db_file[4096];
  if (cli_db_to_read(&o, db_file, sizeof db_file) < 0) goto out;
  const char *db_path = db_file[0] ? db_file : NULL;
  const char *source = "default";
  char tuned_why[512] = "no tuning DB (--db, UBGEN_TUNING_DB, UBGEN_CACHE_DIR or HOME names one)";
  struct stat st;
  if (db_path && stat(db_path, &st) != 0) {
    snprintf(tuned_why, sizeof tuned_why, "no tuning DB at %.400s (`ubgen tune` and `make run` write it there)", db_path);
    db_path = NULL;
  }
  if (db_path) {
    ug_tunedb db;
    char warn[1024];
    int lr = ug_tunedb_load_here(db_path, &db, warn, sizeof warn);
    if (lr == 1) {
      fprintf(stderr, "ubgen: warning: tuning DB %s: ignored\n", warn);
      snprintf(tuned_why, sizeof tuned_why, "the tuning DB is unusable (warning above)");
    } else if (lr == 0) {
      int dropped = ug_tuned_drop_foreign(&db, set_kernel, &set, warn, sizeof warn);
      if (dropped > 0)
        fprintf(stderr, "ubgen: warning: tuning DB %s: %d %s ignored: %s\n", db_path, dropped,
                dropped == 1 ? "entry" : "entries", warn);
      int ti = -1;
      int t = ug_tuned_choice(&db, p, dtype, vs, nv, env, o.budget.ub_bytes, usable, &ti, tuned_why, sizeof tuned_why, &d);
      if (t < 0) {
        cli_diag(&d);
        ug_tunedb_free(&db);
        goto out;
      }
      if (t == 1) {
        choice.chosen = ti;
        snprintf(choice.why, sizeof choice.why, "%s", tuned_why);
        source = "tuned";
      }
    }
    ug_tunedb_free(&db);
  }
  char shape_text[512] = "";
  for (int i = 0; i < k->nshape; i++) {
    int s = ug_pass_sym(p, k->shape[i]);
    size_t l = strlen(shape_text);
    snprintf(shape_text + l, sizeof shape_text - l, "%s%s=%lld", i ? "," : "", k->shape[i], (long long)env[s]);
  }
  if (o.json) {
    root = json_pack("{s:s, s:s, s:s, s:o, s:I, s:f, s:I}", "kernel", k->name, "pass", p->name, "dtype",
                     ug_dtype_name(dtype), "shape", cli_shape_json(p, env), "ub_bytes", (json_int_t)o.budget.ub_bytes,
                     "safety_margin", ug_budget_margin(&o.budget, k), "usable", (json_int_t)usable);
    if (choice.chosen >= 0) {
      json_object_set_new(root, "variant", json_string(vs[choice.chosen].name));
      json_object_set_new(root, "source", json_string(source));
      if (strcmp(source, "tuned")) json_object_set_new(root, "not_tuned", json_string(tuned_why));
      json_object_set_new(root, "footprint", json_integer(vs[choice.chosen].footprint));
      json_object_set_new(root, "layout", layout_json(&vs[choice.chosen]));
    } else {
      json_object_set_new(root, "variant", json_null());
    }
    json_object_set_new(root, "why", json_string(choice.why));
  } else {
    printf("%s.%s  dtype %s  shape %s\n", k->name, p->name, ug_dtype_name(dtype), shape_text);
    printf("UB budget %lld bytes x %.2f = %lld usable\n", (long long)o.budget.ub_bytes, ug_budget_margin(&o.budget, k),
           (long long)usable);
    if (choice.chosen >= 0) {
      const ug_variant *v = &vs[choice.chosen];
      if (!strcmp(source, "tuned")) printf("choice    %s  (tuned)\n", v->name);
      else printf("choice    %s  (default strategy: %s)\n", v->name, tuned_why);
      printf("why       %s\n", choice.why);
      printf("UB layout of %s, footprint %lld bytes:\n", v->name, (long long)v->footprint);
      for (int i = 0; i < p->nub; i++)
        printf("  %-16s %-5s %9lld elements  offset %7lld  %8lld bytes\n", p->ub[i].name,
               ug_elem_name(p->ub[i].elem)[0] == 'T' ? ug_dtype_name(dtype) : ug_elem_name(p->ub[i].elem),
               (long long)v->ub[i].count, (long long)v->ub[i].offset, (long long)v->ub[i].bytes);
    } else {
      printf("choice    none: %s\n", choice.why);
    }
    printf("variants for this shape:\n  %-44s %10s  %s\n", "variant", "footprint", "status");
  }
  json_t *cands = o.json ? json_array() : NULL;
  int excluded[64] = {0}, nexcluded = 0; /* per failing constraint, when not listed */
  for (int i = 0; i < nv; i++) {
    const ug_variant *v = &vs[i];
    int failed = -1;
    int b = ug_bind(p, &v->pt, env, &failed, &d);
    if (b < 0) {
      cli_diag(&d);
      json_decref(cands);
      goto out;
    }
    char status[768];
    if (b == 1) {
      char why[640];
      ug_explain_rule(p, &p->constraints[failed], env, why, sizeof why);
      snprintf(status, sizeof status, "not applicable: %s", why);
    } else if (v->footprint > usable) {
      snprintf(status, sizeof status, "over budget (%lld > %lld)", (long long)v->footprint, (long long)usable);
    } else {
      snprintf(status, sizeof status, "%s", i == choice.chosen ? "candidate, chosen" : "candidate");
    }
    if (o.json) {
      json_array_append_new(cands, json_pack("{s:s, s:I, s:s}", "variant", v->name, "footprint",
                                             (json_int_t)v->footprint, "status", status));
    } else if (b == 1 && !o.verbose && failed < 64) {
      excluded[failed]++;
      nexcluded++;
    } else {
      printf("  %-44s %10lld  %s\n", v->name, (long long)v->footprint, status);
    }
  }
  if (!o.json && nexcluded) {
    printf("  and %d variants that do not apply to this shape (--verbose lists them):\n", nexcluded);
    for (int r = 0; r < p->nconstraints && r < 64; r++)
      if (excluded[r])
        printf("    %4d by `%s`%s%s%s\n", excluded[r], ug_expr_source(p->constraints[r].require),
               p->constraints[r].why ? " (" : "", p->constraints[r].why ? p->constraints[r].why : "",
               p->constraints[r].why ? ")" : "");
  }
  if (o.json) {
    json_object_set_new(root, "variants", cands);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) puts(s);
    free(s);
  }
  rc = choice.chosen >= 0 ? EXIT_OK : EXIT_FAILED;
out:
  json_decref(root);
  free(env);
  free(vs);
  ug_specset_free(&set);
  return rc;
}
