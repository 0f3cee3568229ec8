/* ubgen plan KERNEL.OP --dtype D --shape name=v,...: what a composite op
 * (a spec's "composites" entry with a "run") would do for that call: each
 * axis's value and who chose it (forced by UBGEN_VARIANT, else the tuning
 * DB's entry for the call's bucket and UB budget, else the spec's default),
 * the chunks of rows, and the scratch it would allocate. The answer is the
 * runtime's own (rt_composite_plan), asked in a context created as an
 * application would create one with this budget and DB, so the two cannot
 * disagree. --shape gives the op's int arguments (its kernel's shape names
 * at least 1) and has_<tensor>=0 for an optional tensor left out; every
 * other optional tensor is given. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../runtime/composite_plan.h"
#include "../gen/strbuf.h"
#include "cli.h"
#include "shape_arg.h"

/* the op's shape names (its kernel's) from env, as "bt=4096,hidden=1024" */
static void shape_text(const ug_kernel *k, const ug_pass *call, const int64_t *env, bool bucketed, char *out, size_t n) {
  out[0] = '\0';
  for (int i = 0; i < k->nshape; i++) {
    const int64_t v = env[call->sym_of_arg[ug_pass_arg(call, k->shape[i])]];
    snprintf(out + strlen(out), n - strlen(out), "%s%s=%lld", i ? "," : "", k->shape[i],
             (long long)(bucketed ? ug_tune_bucket(v) : v));
  }
}

/* the bucket of the shape (cli_shape_json's object, each value bucketed) */
static json_t *bucket_json(const ug_pass *call, const int64_t *env) {
  json_t *o = cli_shape_json(call, env), *v;
  const char *key;
  json_object_foreach(o, key, v) json_integer_set(v, (json_int_t)ug_tune_bucket((int64_t)json_integer_value(v)));
  return o;
}

/* why the tuning DB's entry does not serve (no axis is "tuned") */
static void not_tuned(const ubg_ctx *ctx, const ug_kernel *k, const ug_composite *c, const rt_comp_plan *p,
                      const char *db_path, int db_load, const char *db_warn, int dtype, const char *bucket,
                      ug_buf *why) {
  struct stat st;
  const rt_comp_choice *ch = &p->choice;
  const ug_tunedb *db = rt_ctx_tunedb(ctx);
  if (!db_path) {
    ug_buf_puts(why, "no tuning DB (--db, UBGEN_TUNING_DB, UBGEN_CACHE_DIR or HOME names one)");
  } else if (db_load == 1) {
    ug_buf_printf(why, "the tuning DB is unusable: %s", db_warn);
  } else if (!db->n && stat(db_path, &st) != 0) {
    ug_buf_printf(why, "no tuning DB at %.400s (`ubgen tune` and `make run` write it there)", db_path);
  } else if (!ch->entry) {
    ug_buf_printf(why, "no tuning entry for %s.%s %s at bucket %s, ub_bytes %lld", k->name, c->name,
                  ug_dtype_name(dtype), bucket, (long long)rt_ctx_ub_bytes(ctx));
    /* the usual miss: tuned at another UB budget (--ub) */
    for (int i = 0; i < db->n; i++) {
      const ug_tune_entry *e = &db->e[i];
      if (strcmp(e->kernel, k->name) || strcmp(e->pass, c->name) || e->dtype != dtype) continue;
      char b[200];
      b[0] = '\0';
      for (int j = 0; j < e->nshape; j++)
        snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s=%lld", j ? "," : "", e->shape_names[j], (long long)e->shape[j]);
      if (!strcmp(b, bucket)) {
        ug_buf_printf(why, " (it has one at ub_bytes %lld: --ub)", (long long)e->ub_bytes);
        break;
      }
    }
  } else if (!ch->entry_whole) {
    ug_buf_printf(why, "the tuning entry for bucket %s names \"%s\", which is not one of its variants", bucket,
                  ch->entry->variant);
  } else {
    ug_buf_printf(why, "the variant forced by %s (%s.%s=%s) wins over the tuning DB's %s for bucket %s", ch->source[0],
                  k->name, c->name, ch->forced, ch->entry->variant, bucket);
  }
}

/* why axis i has its value */
static void axis_why(const ug_kernel *k, const ug_composite *c, const rt_comp_plan *p, int i, int dtype,
                     const char *rows_src, const char *bucket, ug_buf *why) {
  const rt_comp_choice *ch = &p->choice;
  const ug_comp_axis *a = &c->axes[i];
  const char *src = ch->source[i];
  if (!strcmp(src, "tuned")) {
    ug_buf_printf(why, "tuned for bucket %s: %.1f us against the default %s's %.1f us (%lld candidates)", bucket,
                  ch->entry->median_us, ch->entry->default_variant, ch->entry->default_median_us,
                  (long long)ch->entry->candidates);
  } else if (!strcmp(src, "spec rule")) {
    ug_buf_printf(why, "the %s spec's rule: %s = ", k->name, a->dflt_src);
    if (ch->overflow[i]) ug_buf_printf(why, "(overflows), so %s", rows_src);
    else ug_buf_printf(why, "%lld", (long long)ch->value[i]);
  } else if (!strcmp(src, "preferred")) {
    ug_buf_printf(why, "the first of %s's \"prefer\" in the %s spec that runs here", a->name, k->name);
  } else if (!strcmp(src, "default")) {
    ug_buf_printf(why, "the default, %s's first value", a->name);
    if (ch->entry && ch->entry_whole && ch->entry_value[i] != 0) {
      const char *absent = rt_run_axis_missing(c, i, ch->entry_value[i]);
      ug_buf_printf(why, "; the tuning DB's %s, but %s=%s %s", ch->entry->variant, a->name,
                    a->values[ch->entry_value[i]], absent ? absent : "does not run this dtype");
    }
  } else { /* forced */
    ug_buf_printf(why, "forced by %s: %s.%s=%s", src, k->name, c->name, ch->forced);
    if (a->values && ch->value[i] == 0) {
      int64_t v[RT_COMP_AXES];
      bool given[RT_COMP_AXES];
      if (ug_comp_parse(c, ch->forced, v, given) == 0 && v[i] != 0)
        ug_buf_printf(why, ", but %s=%s does not run %s: the default", a->name, a->values[v[i]], ug_dtype_name(dtype));
    }
    if (!a->values && ch->entry && ch->entry_whole) ug_buf_printf(why, ", over the tuning DB's %s", ch->entry->variant);
  }
  if (i == 0 && p->value[0] != ch->value[i] && !ch->overflow[i]) ug_buf_printf(why, ", at most %s", rows_src);
}

/* the whole variant name of the values run: the first axis, then those not at their default */
static void variant_name(const ug_composite *c, const rt_comp_plan *p, char *out, size_t n) {
  snprintf(out, n, "%s=%lld", c->axes[0].name, (long long)p->value[0]);
  for (int i = 1; i < c->naxes; i++) {
    if (c->axes[i].values && p->value[i] == 0) continue;
    if (c->axes[i].values) snprintf(out + strlen(out), n - strlen(out), ",%s=%s", c->axes[i].name, c->axes[i].values[p->value[i]]);
    else snprintf(out + strlen(out), n - strlen(out), ",%s=%lld", c->axes[i].name, (long long)p->value[i]);
  }
}

static int plan_composite(cli_opts *o, int dtype, const ug_kernel *k, const ug_composite *c) {
  if (!o->shape) {
    cli_error("plan: %s.%s needs --shape (its int arguments, name=value,...)", k->name, c->name);
    return EXIT_USAGE;
  }
  if (!c->call || !c->run) {
    cli_error("plan: %s.%s declares no \"args\" and \"run\" in %s: nothing runs it", k->name, c->name, k->path);
    return EXIT_USAGE;
  }
  const ug_pass *call = c->call;
  int64_t *env = calloc((size_t)call->nsyms + 1, sizeof *env);
  if (!env || cli_shape_env(call, o->shape, env) < 0) {
    free(env);
    return EXIT_USAGE;
  }
  for (int i = 0; i < k->nshape; i++) {
    const int64_t v = env[call->sym_of_arg[ug_pass_arg(call, k->shape[i])]];
    if (v < 1) {
      cli_error("--shape: %s=%lld is below 1 (a plan is of a call of at least one of each)", k->shape[i], (long long)v);
      free(env);
      return EXIT_USAGE;
    }
  }
  /* the tuning DB: --db, else the one the library reads, as plan KERNEL.PASS */
  char db_file[4096];
  if (cli_db_to_read(o, db_file, sizeof db_file) < 0) return free(env), EXIT_USAGE;
  const char *db_path = db_file[0] ? db_file : NULL;
  int db_load = 0;
  char db_warn[1024] = "";
  if (db_path) { /* loaded here for its warning; the context loads it alike */
    ug_tunedb db;
    db_load = ug_tunedb_load_here(db_path, &db, db_warn, sizeof db_warn);
    ug_tunedb_free(&db);
    if (db_load < 0) {
      cli_error("plan: out of memory reading %s", db_path);
      return free(env), EXIT_USAGE;
    }
    if (db_load == 1) fprintf(stderr, "ubgen: warning: tuning DB %s: ignored\n", db_warn);
  }
  ubg_config cfg = {0};
  cfg.ub_bytes = (size_t)o->budget.ub_bytes;
  cfg.safety_margin = o->budget.margin;
  cfg.threads = 1; /* the choice does not depend on it */
  cfg.tuning_db = db_path ? db_path : "/nonexistent/ubgen-plan-reads-no-db";
  ubg_ctx *ctx;
  if (ubg_ctx_create(&cfg, &ctx) != UBG_OK) { /* e.g. a bad UBGEN_VARIANT: an application gets the same */
    cli_error("plan: %s", ubg_ctx_error(NULL));
    return free(env), EXIT_USAGE;
  }
  const rt_composite op = {k->name, c->name};
  rt_comp_plan p;
  if (rt_composite_plan(ctx, &op, (ubg_dtype)dtype, env, &p) != UBG_OK) {
    cli_error("plan: --shape %s: %s", o->shape, ubg_ctx_error(ctx));
    ubg_ctx_destroy(ctx);
    return free(env), EXIT_USAGE;
  }
  /* the spec the context loaded is the one that ran: its names from here on */
  const ug_kernel *rk = rt_find_kernel(ctx, k->name);
  const ug_composite *rc = ug_spec_composite(rk, c->name);
  const char *rows_src = ug_expr_source(rc->run->rows);
  char shape[300], bucket[300], variant[UG_MAX_VARIANT_NAME + 1];
  shape_text(rk, call, env, false, shape, sizeof shape);
  shape_text(rk, call, env, true, bucket, sizeof bucket);
  variant_name(rc, &p, variant, sizeof variant);
  bool tuned = false;
  for (int i = 0; i < rc->naxes; i++) tuned |= !strcmp(p.choice.source[i], "tuned");
  ug_buf nt = {0};
  if (!tuned) not_tuned(ctx, rk, rc, &p, db_path, db_load, db_warn, dtype, bucket, &nt);
  /* the spec's rule alone, as the runtime caps it */
  int64_t rule = p.rows, shape_v[UG_TUNE_MAX_SHAPE] = {0};
  for (int i = 0; i < rk->nshape && i < UG_TUNE_MAX_SHAPE; i++)
    shape_v[i] = env[call->sym_of_arg[ug_pass_arg(call, rk->shape[i])]];
  if (ug_comp_default(&rc->axes[0], shape_v, &rule) < 0 || rule > p.rows) rule = p.rows;
  if (rule < 1) rule = 1;

  if (o->json) {
    json_t *root = json_pack("{s:s, s:s, s:s, s:o, s:o, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "kernel", rk->name,
                             "pass", rc->name, "dtype", ug_dtype_name(dtype), "shape", cli_shape_json(call, env),
                             "bucket", bucket_json(call, env), "ub_bytes", (json_int_t)rt_ctx_ub_bytes(ctx),
                             "variant", variant, "rows", (json_int_t)p.rows, "chunks", (json_int_t)p.chunks,
                             "last_chunk", (json_int_t)p.last, "routine_scratch_bytes", (json_int_t)p.routine_scratch,
                             "scratch_bytes", (json_int_t)p.total);
    for (int i = 0; i < rc->naxes; i++) {
      const ug_comp_axis *a = &rc->axes[i];
      char key[80];
      ug_buf why = {0};
      axis_why(rk, rc, &p, i, dtype, rows_src, bucket, &why);
      json_object_set_new(root, a->name, a->values ? json_string(a->values[p.value[i]]) : json_integer((json_int_t)p.value[i]));
      snprintf(key, sizeof key, i ? "%s_source" : "source", a->name);
      json_object_set_new(root, key, json_string(p.choice.source[i]));
      snprintf(key, sizeof key, i ? "%s_why" : "why", a->name);
      json_object_set_new(root, key, json_string(ug_buf_str(&why)));
      ug_buf_free(&why);
    }
    char key[80];
    snprintf(key, sizeof key, "rule_%s", rc->axes[0].name);
    json_object_set_new(root, key, json_integer((json_int_t)rule));
    for (int i = 0; i < rc->run->nscratch; i++) {
      snprintf(key, sizeof key, "%s_bytes", rc->run->scratch[i].name);
      json_object_set_new(root, key, json_integer((json_int_t)p.scratch[i]));
    }
    if (!tuned) json_object_set_new(root, "not_tuned", json_string(ug_buf_str(&nt)));
    if (p.choice.entry) json_object_set_new(root, "tuned_variant", json_string(p.choice.entry->variant));
    if (p.missing[0]) json_object_set_new(root, "error", json_string(p.missing));
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) puts(s);
    free(s);
    json_decref(root);
  } else {
    printf("%s.%s  dtype %s  shape %s\n", rk->name, rc->name, ug_dtype_name(dtype), shape);
    printf("bucket    %s, ub_bytes %lld (the tuning DB's key)\n", bucket, (long long)rt_ctx_ub_bytes(ctx));
    for (int i = 0; i < rc->naxes; i++) {
      const ug_comp_axis *a = &rc->axes[i];
      ug_buf why = {0};
      axis_why(rk, rc, &p, i, dtype, rows_src, bucket, &why);
      if (a->values) printf("%-9s %s  (%s)\n", a->name, a->values[p.value[i]], ug_buf_str(&why));
      else if (i == 0 && !strcmp(p.choice.source[i], "tuned")) printf("%-9s %lld rows  (tuned)\n", a->name, (long long)p.value[i]);
      else if (i == 0) printf("%-9s %lld rows  (%s; not tuned: %s)\n", a->name, (long long)p.value[i], p.choice.source[i], ug_buf_str(&nt));
      else printf("%-9s %lld  (%s)\n", a->name, (long long)p.value[i], p.choice.source[i]);
      if (i == 0) printf("why       %s\n", ug_buf_str(&why));
      ug_buf_free(&why);
    }
    printf("variant   %s\n", variant);
    printf("chunks    %lld of %lld rows", (long long)p.chunks, (long long)p.value[0]);
    if (p.chunks > 1 && p.last != p.value[0]) printf(", the last %lld", (long long)p.last);
    printf("\nscratch   %lld bytes:", (long long)p.total);
    for (int i = 0; i < rc->run->nscratch; i++)
      if (p.scratch[i]) printf(" %s %lld +", rc->run->scratch[i].name, (long long)p.scratch[i]);
    printf(" the routines' %lld\n", (long long)p.routine_scratch);
    printf("          (with every optional tensor given but those --shape has_NAME=0 leaves out)\n");
    if (p.missing[0]) printf("error     %s: the call is refused\n", p.missing);
  }
  ug_buf_free(&nt);
  ubg_ctx_destroy(ctx);
  free(env);
  return p.missing[0] ? EXIT_FAILED : EXIT_OK;
}

__attribute__((constructor)) static void register_planner(void) { cli_plan_composite = plan_composite; }
