/* Composite ops: an op that runs several spec'd passes (ubg_flce) and has
 * variants of its own, the axes of a "composites" entry of its kernel's
 * spec. Here is what every such op shares: the registry of the ops linked
 * in, a variant's name checked against the spec, the name forced on a
 * context, and the choice for a call — forced, else tuned, else the
 * spec's default — so a typed wrapper only reads the values it runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../gen/lib/strbuf.h"

/* the composite ops linked in; registered by constructors, before main */
static rt_composite *composites;
static int ncomposites;

void rt_composite_register(rt_composite *c) {
  if (ncomposites >= RT_MAX_COMPOSITES) abort(); /* a build-time limit: raise RT_MAX_COMPOSITES */
  c->index = ncomposites++;
  c->next = composites;
  composites = c;
}

const rt_composite *rt_composite_find(const char *kernel, const char *pass) {
  for (const rt_composite *c = composites; c && kernel && pass; c = c->next)
    if (!strcmp(c->kernel, kernel) && !strcmp(c->pass, pass)) return c;
  return NULL;
}

const ug_composite *rt_composite_spec(const ubg_ctx *ctx, const rt_composite *c, char *why, size_t n) {
  const ug_kernel *k = rt_find_kernel(ctx, c->kernel);
  const ug_composite *comp = ug_spec_composite(k, c->pass);
  if (!comp) {
    if (why) snprintf(why, n, "the %s spec%s declares no composite \"%s\"", c->kernel, k ? "" : " is not loaded: it",
                      c->pass);
    return NULL;
  }
  if (comp->naxes > RT_COMP_AXES) {
    if (why) snprintf(why, n, "the %s spec's composite \"%s\" has %d axes; the runtime takes at most %d", c->kernel,
                      c->pass, comp->naxes, RT_COMP_AXES);
    return NULL;
  }
  if (c->spec_ok && c->spec_ok(k, comp, why, n) < 0) return NULL;
  return comp;
}

/* a named axis's values, "generated, openblas, amx" */
static void put_values(ug_buf *b, const ug_comp_axis *a) {
  for (int v = 0; v < a->nvalues; v++) ug_buf_printf(b, "%s%s", v ? ", " : "", a->values[v]);
}

/* The spellings of comp's variants as a message lists them: "chunk=N,
 * chunk=N,gemm=openblas and chunk=N,gemm=amx, N from 1 to 1073741824;
 * gemm=B (generated, openblas, amx) forces the gemm axis alone" */
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
    const char *missing = given[i] && comp->axes[i].values && c->missing ? c->missing(i, v[i]) : NULL;
    if (missing) {
      snprintf(why, n, "%s=%s, but %s", comp->axes[i].name, comp->axes[i].values[v[i]], missing);
      return -1;
    }
  }
  return 0;
}

void rt_composite_forced(const ubg_ctx *ctx, const rt_composite *c, char *out, size_t n, const char **source) {
  ubg_ctx *m = (ubg_ctx *)ctx; /* the lock only */
  pthread_mutex_lock(&m->lock);
  snprintf(out, n, "%s", ctx->composite_forced[c->index]);
  if (source) *source = ctx->composite_from_env[c->index] ? "UBGEN_VARIANT" : "ubg_set_variant";
  pthread_mutex_unlock(&m->lock);
}

ubg_status rt_composite_set(ubg_ctx *ctx, const rt_composite *c, const char *variant, bool from_env) {
  char why[400] = "too long";
  if (variant && (strlen(variant) >= sizeof ctx->composite_forced[0] || rt_composite_check(ctx, c, variant, why, sizeof why) < 0))
    return rt_fail(ctx, UBG_ENOTFOUND, "%s.%s has no variant \"%.160s\" (%s)", c->kernel, c->pass, variant, why);
  pthread_mutex_lock(&ctx->lock);
  snprintf(ctx->composite_forced[c->index], sizeof ctx->composite_forced[0], "%s", variant ? variant : "");
  ctx->composite_from_env[c->index] = from_env;
  pthread_mutex_unlock(&ctx->lock);
  return UBG_OK;
}

int rt_composite_choose(const ubg_ctx *ctx, const rt_composite *c, ubg_dtype dtype, const int64_t *shape,
                        rt_comp_choice *ch) {
  memset(ch, 0, sizeof *ch);
  const ug_kernel *k = rt_find_kernel(ctx, c->kernel);
  const ug_composite *comp = rt_composite_spec(ctx, c, NULL, 0);
  if (!comp) return -1;
  ch->naxes = comp->naxes;
  /* the defaults: an integer axis's expression over the shape, a named axis's first value */
  for (int i = 0; i < comp->naxes; i++) {
    ch->source[i] = comp->axes[i].values ? "default" : "spec rule";
    if (!comp->axes[i].values && ug_comp_default(&comp->axes[i], shape, &ch->value[i]) < 0) ch->overflow[i] = true;
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
      ch->value[i] = comp->axes[i].values && c->runs && !c->runs(i, v[i], dtype) ? 0 : v[i];
    }
  }
  /* tuned: the DB's entry for the shape's bucket, dtype and UB budget, when it is a whole variant */
  bool sized = k && k->nshape <= UG_TUNE_MAX_SHAPE;
  for (int i = 0; sized && i < k->nshape; i++) sized = shape[i] >= 1;
  if (!ctx->tunedb.n || !sized) return 0;
  int64_t bucket[UG_TUNE_MAX_SHAPE];
  for (int i = 0; i < k->nshape; i++) bucket[i] = ug_tune_bucket(shape[i]);
  ch->entry = ug_tunedb_find(&ctx->tunedb, c->kernel, c->pass, (int)dtype, k->nshape, (const char *const *)k->shape,
                             bucket, ctx->ub_bytes);
  if (!ch->entry || ug_comp_parse(comp, ch->entry->variant, v, given) < 0 || !given[0]) return 0;
  ch->entry_whole = true;
  for (int i = 0; i < comp->naxes; i++) {
    ch->entry_value[i] = v[i];
    if (ch->forced_axis[i]) continue;
    const bool named = comp->axes[i].values != NULL;
    if (named && ((c->runs && !c->runs(i, v[i], dtype)) || (c->missing && c->missing(i, v[i])))) continue;
    ch->value[i] = v[i], ch->overflow[i] = false;
    ch->source[i] = "tuned";
  }
  return 0;
}
