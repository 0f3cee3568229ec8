/* Composite ops: an op that runs several spec'd passes (ubg_flce) and has
 * variants of its own, the axes of a "composites" entry of its kernel's
 * spec. Here is what every such op shares: a variant's name checked
 * against the spec, the name forced on a context, and the choice for a
 * call — forced, else tuned, else the spec's default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "routine.h"
#include "../gen/strbuf.h"

/* ---- what a spec's composite asks of this runtime: its routines ---- */

/* the routine behind value v of named axis `axis`: the first "or" of that axis */
static const rt_routine *axis_routine(const ug_composite *comp, int axis, int64_t v, char *name, size_t n) {
  for (int ph = 0; comp->run && ph < UG_RUN_PHASES; ph++)
    for (int i = 0; i < comp->run->nsteps[ph]; i++) {
      const ug_step *st = &comp->run->steps[ph][i];
      if (st->or_axis != axis) continue;
      snprintf(name, n, "%s.%s", st->or_routine, comp->axes[axis].values[v]);
      return rt_routine_find(name);
    }
  return NULL;
}

const char *rt_run_axis_missing(const ug_composite *comp, int axis, int64_t v) {
  static _Thread_local char why[160];
  char name[96];
  if (!comp->axes[axis].values || v == 0) return NULL;
  const rt_routine *r = axis_routine(comp, axis, v, name, sizeof name);
  if (!r) {
    snprintf(why, sizeof why, "this runtime has no routine %s", name);
    return why;
  }
  return r->missing ? r->missing() : NULL;
}

bool rt_run_axis_runs(const ug_composite *comp, int axis, int64_t v, ubg_dtype dtype) {
  char name[96];
  if (!comp->axes[axis].values || v == 0) return true;
  const rt_routine *r = axis_routine(comp, axis, v, name, sizeof name);
  return r && (!r->runs || r->runs(dtype));
}

int64_t rt_run_axis_default(const ug_composite *comp, int axis, ubg_dtype dtype) {
  const ug_comp_axis *a = &comp->axes[axis];
  for (int p = 0; a->values && p < a->nprefer; p++)
    if (rt_run_axis_runs(comp, axis, a->prefer[p], dtype) && !rt_run_axis_missing(comp, axis, a->prefer[p]))
      return a->prefer[p];
  return 0;
}

int rt_run_spec_ok(const ug_kernel *k, const ug_composite *comp, char *why, size_t n) {
  if (comp->naxes > RT_COMP_AXES) {
    if (why) snprintf(why, n, "the %s spec's composite \"%s\" has %d axes; the runtime takes at most %d", k->name,
                      comp->name, comp->naxes, RT_COMP_AXES);
    return -1;
  }
  if (!comp->call || !comp->run) {
    if (why) snprintf(why, n, "the %s spec's composite \"%s\" declares no \"args\" and \"run\"", k->name, comp->name);
    return -1;
  }
  for (int ph = 0; ph < UG_RUN_PHASES; ph++)
    for (int i = 0; i < comp->run->nsteps[ph]; i++) {
      const ug_step *st = &comp->run->steps[ph][i];
      if (st->routine && !rt_routine_find(st->routine)) {
        if (why) snprintf(why, n, "%s:%d:%d: this runtime has no routine \"%s\"", k->path, st->at.line, st->at.col,
                          st->routine);
        return -1;
      }
    }
  return 0;
}

bool rt_composite_exists(const ubg_ctx *ctx, const char *kernel, const char *pass) {
  return kernel && pass && ug_spec_composite(rt_find_kernel(ctx, kernel), pass) != NULL;
}

const ug_composite *rt_composite_spec(const ubg_ctx *ctx, const rt_composite *c, char *why, size_t n) {
  const ug_kernel *k = rt_find_kernel(ctx, c->kernel);
  const ug_composite *comp = ug_spec_composite(k, c->pass);
  if (!comp) {
    if (why) snprintf(why, n, "the %s spec%s declares no composite \"%s\"", c->kernel, k ? "" : " is not loaded: it",
                      c->pass);
    return NULL;
  }
  if (rt_run_spec_ok(k, comp, why, n) < 0) return NULL;
  return comp;
}

/* a named axis's values, "generated, onednn" */
static void put_values(ug_buf *b, const ug_comp_axis *a) {
  for (int v = 0; v < a->nvalues; v++) ug_buf_printf(b, "%s%s", v ? ", " : "", a->values[v]);
}

/* The spellings of comp's variants as a message lists them: "chunk=N and
 * chunk=N,gemm=onednn, N from 1 to 1073741824; gemm=B (generated, onednn)
 * forces the gemm axis alone" */
static void describe_variants(const ug_composite *comp, ug_buf *b) {
  const ug_comp_axis *a0 = &comp->axes[0];
  char head[80];
  snprintf(head, sizeof head, "%s=%s", a0->name, a0->values ? "B" : "N");
  int count = 1, total = 1;
  for (int i = 1; i < comp->naxes; i++) total += comp->axes[i].values ? comp->axes[i].nvalues - 1 : 1;
  ug_buf_puts(b, head);
  for (int i = 1; i < comp->naxes; i++) {
    const ug_comp_axis *a = &comp->axes[i];
    for (int v = a->values ? 1 : 0; v < (a->values ? a->nvalues : 1); v++, count++)
      ug_buf_printf(b, "%s%s,%s=%s", count + 1 == total ? " and " : ", ", head, a->name, a->values ? a->values[v] : "N");
  }
  if (a0->values) {
    ug_buf_puts(b, ", B one of ");
    put_values(b, a0);
  } else {
    ug_buf_printf(b, ", N from %lld to %lld", (long long)a0->min, (long long)a0->max);
  }
  for (int i = 1; i < comp->naxes; i++) {
    const ug_comp_axis *a = &comp->axes[i];
    ug_buf_printf(b, "; %s=%s", a->name, a->values ? "B (" : "N");
    if (a->values) put_values(b, a), ug_buf_puts(b, ")");
    ug_buf_printf(b, " forces the %s axis alone", a->name);
  }
}

int rt_composite_check(const ubg_ctx *ctx, const rt_composite *c, const char *name, char *why, size_t n) {
  const ug_composite *comp = rt_composite_spec(ctx, c, why, n);
  if (!comp) return -1;
  int64_t v[RT_COMP_AXES];
  bool given[RT_COMP_AXES];
  if (ug_comp_parse(comp, name, v, given) < 0) {
    ug_buf b = {0};
    describe_variants(comp, &b);
    snprintf(why, n, "its variants are %s", ug_buf_str(&b));
    ug_buf_free(&b);
    return -1;
  }
  for (int i = 0; i < comp->naxes; i++) {
    const char *missing = given[i] && comp->axes[i].values ? rt_run_axis_missing(comp, i, v[i]) : NULL;
    if (missing) {
      snprintf(why, n, "%s=%s, but %s", comp->axes[i].name, comp->axes[i].values[v[i]], missing);
      return -1;
    }
  }
  return 0;
}

/* c's slot on ctx ("kernel.pass"), or -1; under the lock */
static int forced_slot(const ubg_ctx *ctx, const rt_composite *c, const char *op) {
  for (int i = 0; i < RT_MAX_COMPOSITES; i++)
    if (!strcmp(ctx->composite_forced[i].op, op)) return i;
  (void)c;
  return -1;
}

void rt_composite_forced(const ubg_ctx *ctx, const rt_composite *c, char *out, size_t n, const char **source) {
  ubg_ctx *m = (ubg_ctx *)ctx; /* the lock only */
  char op[2 * UG_MAX_VARIANT_NAME];
  snprintf(op, sizeof op, "%s.%s", c->kernel, c->pass);
  pthread_mutex_lock(&m->lock);
  const int i = forced_slot(ctx, c, op);
  snprintf(out, n, "%s", i >= 0 ? ctx->composite_forced[i].name : "");
  if (source) *source = i >= 0 && ctx->composite_forced[i].from_env ? "UBGEN_VARIANT" : "ubg_set_variant";
  pthread_mutex_unlock(&m->lock);
}

ubg_status rt_composite_set(ubg_ctx *ctx, const rt_composite *c, const char *variant, bool from_env) {
  char why[400] = "too long", op[2 * UG_MAX_VARIANT_NAME];
  if (variant && (strlen(variant) >= sizeof ctx->composite_forced[0].name || rt_composite_check(ctx, c, variant, why, sizeof why) < 0))
    return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no variant \"%.160s\" (%s)", c->kernel, c->pass, variant, why);
  snprintf(op, sizeof op, "%s.%s", c->kernel, c->pass);
  if (strlen(op) >= sizeof ctx->composite_forced[0].op)
    return rt_fail(ctx, UBG_EINVAL, "%s: the name is too long to force", op);
  pthread_mutex_lock(&ctx->lock);
  int i = forced_slot(ctx, c, op);
  if (i < 0 && variant) i = forced_slot(ctx, c, ""); /* a free slot */
  if (i >= 0 && variant) {
    snprintf(ctx->composite_forced[i].op, sizeof ctx->composite_forced[i].op, "%s", op);
    snprintf(ctx->composite_forced[i].name, sizeof ctx->composite_forced[i].name, "%s", variant);
    ctx->composite_forced[i].from_env = from_env;
  } else if (i >= 0) {
    memset(&ctx->composite_forced[i], 0, sizeof ctx->composite_forced[i]);
  }
  pthread_mutex_unlock(&ctx->lock);
  if (i < 0 && variant)
    return rt_fail(ctx, UBG_EINVAL, "%s: at most %d composite ops are forced on one context", op, RT_MAX_COMPOSITES);
  return UBG_OK;
}

int rt_composite_choose(const ubg_ctx *ctx, const rt_composite *c, ubg_dtype dtype, const int64_t *shape,
                        rt_comp_choice *ch) {
  const ug_composite *comp = rt_composite_spec(ctx, c, NULL, 0);
  if (!comp) return memset(ch, 0, sizeof *ch), -1;
  return rt_composite_choose_spec(ctx, rt_find_kernel(ctx, c->kernel), comp, c, dtype, shape, ch);
}

int rt_composite_choose_spec(const ubg_ctx *ctx, const ug_kernel *k, const ug_composite *comp, const rt_composite *c,
                             ubg_dtype dtype, const int64_t *shape, rt_comp_choice *ch) {
  memset(ch, 0, sizeof *ch);
  ch->naxes = comp->naxes;
  /* the defaults: an integer axis's expression over the shape, a named
   * axis's first preferred value that this build and CPU run, else its first */
  for (int i = 0; i < comp->naxes; i++) {
    const ug_comp_axis *a = &comp->axes[i];
    ch->source[i] = a->values ? "default" : "spec rule";
    if (!a->values && ug_comp_default(a, shape, &ch->value[i]) < 0) ch->overflow[i] = true;
    if (a->values && (ch->value[i] = rt_run_axis_default(comp, i, dtype)) != 0) ch->source[i] = "preferred";
  }
  /* forced: a whole name every axis, a partial one the axes it gives */
  const char *source;
  rt_composite_forced(ctx, c, ch->forced, sizeof ch->forced, &source);
  int64_t v[RT_COMP_AXES];
  bool given[RT_COMP_AXES];
  if (*ch->forced && ug_comp_parse(comp, ch->forced, v, given) == 0) {
    for (int i = 0; i < comp->naxes; i++) {
      if (!given[i] && !given[0]) continue;
      ch->source[i] = source, ch->forced_axis[i] = true, ch->overflow[i] = false;
      /* a named value that does not run the dtype is not run: its default is */
      ch->value[i] = comp->axes[i].values && !rt_run_axis_runs(comp, i, v[i], dtype) ? 0 : v[i];
    }
  }
  /* tuned: the DB's entry for the shape's bucket, dtype and UB budget, when it is a whole variant */
  bool sized = k && k->nshape <= UG_TUNE_MAX_SHAPE;
  for (int i = 0; sized && i < k->nshape; i++) sized = shape[i] >= 1;
  if (!ctx->tunedb.n || !sized) return 0;
  int64_t bucket[UG_TUNE_MAX_SHAPE];
  for (int i = 0; i < k->nshape; i++) bucket[i] = ug_tune_bucket(shape[i]);
  ch->entry = ug_tunedb_find(&ctx->tunedb, c->kernel, c->pass, (int)dtype, k->nshape, (const char *const *)k->shape,
                             bucket, ctx->budget.ub_bytes);
  if (!ch->entry || ug_comp_parse(comp, ch->entry->variant, v, given) < 0 || !given[0]) return 0;
  ch->entry_whole = true;
  for (int i = 0; i < comp->naxes; i++) {
    ch->entry_value[i] = v[i];
    if (ch->forced_axis[i]) continue;
    const bool named = comp->axes[i].values != NULL;
    if (named && (!rt_run_axis_runs(comp, i, v[i], dtype) || rt_run_axis_missing(comp, i, v[i]))) continue;
    ch->value[i] = v[i], ch->overflow[i] = false;
    ch->source[i] = "tuned";
  }
  return 0;
}
