/* A composite's "run": the scratch it allocates and the steps it takes
 * before its chunks of rows, per chunk and after them, each step a pass of
 * the kernel or a routine of the runtime with its arguments bound by name
 * (spec.h's ug_run; docs/spec-format.md). Everything a binding names is
 * resolved here, so the runtime only evaluates. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_load_internal.h"

enum { ALLOW_RUN = ALLOW_INTS | ALLOW_HAS };

static int scratch_index(const ug_run *r, const char *name, size_t len) {
  for (int i = 0; i < r->nscratch; i++)
    if (strlen(r->scratch[i].name) == len && !strncmp(r->scratch[i].name, name, len)) return i;
  return -1;
}

static int arg_index(const ug_pass *call, const char *name, size_t len) {
  for (int i = 0; i < call->nargs; i++)
    if (strlen(call->args[i].name) == len && !strncmp(call->args[i].name, name, len)) return i;
  return -1;
}

/* s[0, len) without the spaces around it */
static void trim(const char **s, size_t *len) {
  while (*len && isspace((unsigned char)**s)) (*s)++, (*len)--;
  while (*len && isspace((unsigned char)(*s)[*len - 1])) (*len)--;
}

/* "null", "name" or "name[off]", name a tensor of the call or a scratch
 * buffer: 1 and *t; 0 when s is not of that form (an expression, then) */
static int tensor_atom(const ug_pass *call, const ug_run *r, const char *s, size_t len, ug_tref *t) {
  trim(&s, &len);
  t->arg = t->scratch = -1;
  t->at_off = false;
  if (len == 4 && !strncmp(s, "null", 4)) return 1;
  if (len > 5 && !strncmp(s + len - 5, "[off]", 5)) t->at_off = true, len -= 5;
  const int a = arg_index(call, s, len);
  if (a >= 0 && call->args[a].kind == UG_ARG_TENSOR) return t->arg = a, 1;
  if (!t->at_off && (t->scratch = scratch_index(r, s, len)) >= 0) return 1;
  t->scratch = -1;
  return 0;
}

/* one binding, "param": value; want is the kind the pass's argument has,
 * or -1 for a routine's (its kind from the value's form) */
static int load_bind(L *l, const ug_pass *call, const ug_run *r, ug_binding *b, const char *param, json_t *v,
                     const ug_jloc *at, int want) {
  b->at = at->at;
  b->float_arg = -1;
  if (!(b->param = strdup(param))) return ug_spec_fail_at(l, at->at, "out of memory");
  if (json_is_number(v)) {
    if (want >= 0 && want != UG_ARG_FLOAT && !json_is_integer(v))
      return ug_spec_fail_at(l, at->at, "argument %s takes %s, not a float", param,
                             want == UG_ARG_TENSOR ? "a tensor" : "an integer expression");
    if (json_is_integer(v) && want != UG_ARG_FLOAT) {
      b->kind = UG_BIND_INT;
      return ug_spec_get_expr(l, v, at, call, ALLOW_RUN, 0, "a binding", &b->value);
    }
    b->kind = UG_BIND_FLOAT;
    return ug_spec_get_number(l, v, at, "a binding", &b->number);
  }
  if (!json_is_string(v))
    return ug_spec_fail_at(l, at->at, "a binding is a string (a tensor, an expression or a float argument) or a number, not %s",
                           ug_spec_json_kind(v));
  const char *s = json_string_value(v);
  const size_t n = strlen(s);
  /* cond ? A : B over tensors */
  const char *q = strchr(s, '?'), *colon = q ? strrchr(q, ':') : NULL;
  if (q && colon && tensor_atom(call, r, q + 1, (size_t)(colon - q - 1), &b->then) &&
      tensor_atom(call, r, colon + 1, n - (size_t)(colon + 1 - s), &b->other)) {
    b->kind = UG_BIND_TENSOR;
    char *cond = malloc((size_t)(q - s) + 1);
    if (!cond) return ug_spec_fail_at(l, at->at, "out of memory");
    memcpy(cond, s, (size_t)(q - s));
    cond[q - s] = '\0';
    const int rc = ug_spec_expr_text(l, cond, at, 0, call, ALLOW_RUN, 0, "a binding's condition", &b->cond);
    free(cond);
    if (rc < 0) return -1;
  } else if (tensor_atom(call, r, s, n, &b->then)) {
    b->kind = UG_BIND_TENSOR;
  } else {
    const char *t = s;
    size_t tl = n;
    trim(&t, &tl);
    const int a = arg_index(call, t, tl);
    if (a >= 0 && call->args[a].kind == UG_ARG_FLOAT) {
      b->kind = UG_BIND_FLOAT;
      b->float_arg = a;
    } else {
      b->kind = UG_BIND_INT;
      if (ug_spec_expr_text(l, s, at, 0, call, ALLOW_RUN, 0, "a binding", &b->value) < 0) return -1;
    }
  }
  static const char *const kinds[] = {"a tensor", "an integer expression", "a float"};
  const int got = b->kind == UG_BIND_TENSOR ? UG_ARG_TENSOR : b->kind == UG_BIND_INT ? UG_ARG_INT : UG_ARG_FLOAT;
  if (want >= 0 && want != got)
    return ug_spec_fail_at(l, at->at, "argument %s takes %s; \"%s\" is %s", param, kinds[want], s, kinds[got]);
  return 0;
}

static int load_binds(L *l, const ug_pass *call, const ug_run *r, const ug_pass *pass, json_t *v, const ug_jloc *at,
                      ug_binding **out, int *nout) {
  if (ug_spec_want(l, v, at, JSON_OBJECT, "\"args\"") < 0) return -1;
  const size_t n = json_object_size(v);
  if (n > UG_MAX_ARGS) return ug_spec_fail_at(l, at->at, "at most %d bindings", UG_MAX_ARGS);
  if (!(*out = calloc(n ? n : 1, sizeof **out))) return ug_spec_fail_at(l, at->at, "out of memory");
  const char *key;
  json_t *bv;
  json_object_foreach(v, key, bv) {
    const ug_jloc *bat = ug_jloc_member(at, key, NULL);
    int want = -1;
    if (pass) {
      const int pa = ug_pass_arg(pass, key);
      if (pa < 0) return ug_spec_fail_at(l, bat->at, "pass %s has no argument \"%s\"", pass->name, key);
      want = (int)pass->args[pa].kind;
    } else if (!ug_is_ident(key)) {
      return ug_spec_fail_at(l, bat->at, "argument name \"%s\" is not an identifier", key);
    }
    ug_binding *b = &(*out)[(*nout)++];
    if (load_bind(l, call, r, b, key, bv, bat, want) < 0) return -1;
    /* a pass writes what it binds as its outputs: never one of the op's inputs */
    const int pa = pass ? ug_pass_arg(pass, key) : -1;
    if (b->kind == UG_BIND_TENSOR && pa >= 0 && pass->args[pa].role != UG_ROLE_IN)
      for (int t = 0; t < (b->cond ? 2 : 1); t++) { /* other only with a condition */
        const ug_tref *tr = t ? &b->other : &b->then;
        if (tr->arg >= 0 && call->args[tr->arg].role == UG_ROLE_IN)
          return ug_spec_fail_at(l, bat->at, "pass %s writes its \"%s\", bound here to \"%s\", an input of the op",
                                 pass->name, key, call->args[tr->arg].name);
      }
  }
  /* a pass's arguments without a default are all bound */
  for (int i = 0; pass && i < pass->nargs; i++) {
    const ug_arg *a = &pass->args[i];
    if (a->optional || a->has_dflt || json_object_get(v, a->name)) continue;
    return ug_spec_fail_at(l, at->at, "the step binds no \"%s\", which pass %s needs", a->name, pass->name);
  }
  return 0;
}

static int load_step(L *l, const ug_kernel *k, const ug_composite *c, ug_step *st, json_t *v, const ug_jloc *at) {
  static const char *const keys[] = {"pass", "routine", "when", "args", "or", NULL};
  const ug_pass *call = c->call;
  const ug_run *r = c->run;
  st->at = at->at;
  st->or_axis = -1;
  if (ug_spec_want(l, v, at, JSON_OBJECT, "a step") < 0 || ug_spec_check_keys(l, v, at, "a step", keys) < 0) return -1;
  const ug_jloc *k_at;
  /* a pass, bound as it is declared; or a routine, which may name the pass it runs */
  json_t *pass = ug_spec_member(v, at, "pass", &k_at), *routine = json_object_get(v, "routine");
  if (!pass && !routine) return ug_spec_fail_at(l, at->at, "a step names a \"pass\" or a \"routine\"");
  const ug_pass *p = NULL;
  if (pass) {
    if (ug_spec_get_ident(l, pass, k_at, "a step's pass", &st->pass) < 0) return -1;
    if (!(p = ug_spec_pass(k, st->pass)))
      return ug_spec_fail_at(l, k_at->at, "kernel %s has no pass \"%s\"", k->name, st->pass);
  }
  if (routine) {
    routine = ug_spec_member(v, at, "routine", &k_at);
    if (ug_spec_get_ident(l, routine, k_at, "a step's routine", &st->routine) < 0) return -1;
    p = NULL; /* the routine's arguments, not the pass's */
  }
  json_t *f = ug_spec_member(v, at, "when", &k_at);
  if (f && ug_spec_get_expr(l, f, k_at, call, ALLOW_RUN, 0, "a step's \"when\"", &st->when) < 0) return -1;
  f = ug_spec_member(v, at, "args", &k_at);
  if (ug_spec_require(l, f, at, "args", "a step") < 0 || load_binds(l, call, r, p, f, k_at, &st->binds, &st->nbinds) < 0)
    return -1;
  const ug_jloc *or_at;
  json_t *alt = ug_spec_member(v, at, "or", &or_at);
  if (!alt) return 0;
  static const char *const or_keys[] = {"axis", "routine", "args", NULL};
  if (ug_spec_want(l, alt, or_at, JSON_OBJECT, "\"or\"") < 0 || ug_spec_check_keys(l, alt, or_at, "\"or\"", or_keys) < 0)
    return -1;
  char *axis = NULL;
  f = ug_spec_member(alt, or_at, "axis", &k_at);
  if (ug_spec_require(l, f, or_at, "axis", "\"or\"") < 0 || ug_spec_get_ident(l, f, k_at, "\"or\"'s axis", &axis) < 0)
    return -1;
  for (int i = 0; i < c->naxes; i++)
    if (!strcmp(c->axes[i].name, axis) && c->axes[i].values) st->or_axis = i;
  free(axis);
  if (st->or_axis < 0) return ug_spec_fail_at(l, k_at->at, "\"or\" names no named axis of composite \"%s\"", c->name);
  f = ug_spec_member(alt, or_at, "routine", &k_at);
  if (ug_spec_require(l, f, or_at, "routine", "\"or\"") < 0 ||
      ug_spec_get_ident(l, f, k_at, "\"or\"'s routine", &st->or_routine) < 0)
    return -1;
  f = ug_spec_member(alt, or_at, "args", &k_at);
  if (ug_spec_require(l, f, or_at, "args", "\"or\"") < 0 ||
      load_binds(l, call, r, NULL, f, k_at, &st->or_binds, &st->nor_binds) < 0)
    return -1;
  return 0;
}

static int load_scratch(L *l, ug_pass *call, ug_run *r, json_t *v, const ug_jloc *at) {
  static const char *const keys[] = {"name", "type", "count", "when", "zero", NULL};
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"scratch\"") < 0) return -1;
  const size_t n = json_array_size(v);
  if (n > UG_MAX_BUFFERS) return ug_spec_fail_at(l, at->at, "at most %d scratch buffers", UG_MAX_BUFFERS);
  if (!(r->scratch = calloc(n ? n : 1, sizeof *r->scratch))) return ug_spec_fail_at(l, at->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    json_t *e = json_array_get(v, i);
    ug_scratch *s = &r->scratch[r->nscratch++];
    s->at = eat->at;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, "a scratch buffer") < 0 ||
        ug_spec_check_keys(l, e, eat, "a scratch buffer", keys) < 0)
      return -1;
    json_t *f = ug_spec_member(e, eat, "name", &k);
    if (ug_spec_require(l, f, eat, "name", "a scratch buffer") < 0 ||
        ug_spec_get_ident(l, f, k, "a scratch buffer's name", &s->name) < 0)
      return -1;
    if (ug_pass_arg(call, s->name) >= 0 || ug_pass_sym(call, s->name) >= 0 || !strcmp(s->name, "null") ||
        scratch_index(r, s->name, strlen(s->name)) < r->nscratch - 1)
      return ug_spec_fail_at(l, k->at, "scratch \"%s\" has the name of an argument, a symbol or another buffer", s->name);
    ug_argkind kind;
    f = ug_spec_member(e, eat, "type", &k);
    if (ug_spec_require(l, f, eat, "type", "a scratch buffer") < 0 || ug_spec_parse_elem(l, f, k, false, &s->elem, &kind) < 0)
      return -1;
    f = ug_spec_member(e, eat, "count", &k);
    if (ug_spec_require(l, f, eat, "count", "a scratch buffer") < 0 ||
        ug_spec_get_expr(l, f, k, call, ALLOW_RUN, 0, "a scratch count", &s->count) < 0)
      return -1;
    f = ug_spec_member(e, eat, "when", &k);
    if (f && ug_spec_get_expr(l, f, k, call, ALLOW_RUN, 0, "a scratch buffer's \"when\"", &s->when) < 0) return -1;
    f = ug_spec_member(e, eat, "zero", &k);
    if (f) {
      if (ug_spec_want(l, f, k, JSON_TRUE, "\"zero\"") < 0) return -1;
      s->zero = json_is_true(f);
    }
  }
  return 0;
}

/* a and b are the same text but for spaces */
static bool same_text(const char *a, const char *b) {
  for (;; a++, b++) {
    while (*a == ' ') a++;
    while (*b == ' ') b++;
    if (*a != *b) return false;
    if (!*a) return true;
  }
}

/* "run": {"rows": expr, "scratch": [...], "before": [...], "chunk": [...], "after": [...]} */
int ug_spec_load_run(L *l, const ug_kernel *k, ug_composite *c, json_t *v, const ug_jloc *at) {
  static const char *const keys[] = {"rows", "scratch", "before", "chunk", "after", NULL};
  static const char *const phases[UG_RUN_PHASES] = {"before", "chunk", "after"};
  if (!c->call) return ug_spec_fail_at(l, at->at, "a composite's \"run\" needs its \"args\"");
  if (c->axes[0].values)
    return ug_spec_fail_at(l, at->at, "a composite with a \"run\" has an integer first axis: the rows of a chunk");
  if (ug_spec_want(l, v, at, JSON_OBJECT, "\"run\"") < 0 || ug_spec_check_keys(l, v, at, "\"run\"", keys) < 0) return -1;
  ug_run *r = c->run = calloc(1, sizeof *r);
  if (!r) return ug_spec_fail_at(l, at->at, "out of memory");
  ug_pass *call = c->call;
  /* the run's own symbols: the axes (a named one: its value's index), then off and rows */
  for (int i = 0; i < c->naxes && i < 8; i++)
    if ((r->sym_axis[i] = ug_spec_add_sym(l, call, c->axes[i].name, UG_SYM_RUN, i, at->at)) < 0) return -1;
  if ((r->sym_off = ug_spec_add_sym(l, call, "off", UG_SYM_RUN, -1, at->at)) < 0 ||
      (r->sym_rows = ug_spec_add_sym(l, call, "rows", UG_SYM_RUN, -1, at->at)) < 0)
    return -1;
  const ug_jloc *k_at;
  json_t *f = ug_spec_member(v, at, "rows", &k_at);
  if (ug_spec_require(l, f, at, "rows", "\"run\"") < 0 ||
      ug_spec_get_expr(l, f, k_at, call, ALLOW_RUN, 0, "\"rows\"", &r->rows) < 0)
    return -1;
  /* the chunks cover rows the op's tensors have: "rows" is a tensor's first dimension, as written */
  bool first_dim = false;
  for (int i = 0; i < call->nargs && !first_dim; i++)
    first_dim = call->args[i].kind == UG_ARG_TENSOR && call->args[i].rank > 0 &&
                same_text(ug_expr_source(call->args[i].shape[0]), ug_expr_source(r->rows));
  if (!first_dim)
    return ug_spec_fail_at(l, k_at->at, "\"rows\" (\"%s\") is not the first dimension of any tensor argument of the op: "
                           "the chunks would cover rows its tensors do not have", ug_expr_source(r->rows));
  if ((f = ug_spec_member(v, at, "scratch", &k_at)) && load_scratch(l, call, r, f, k_at) < 0) return -1;
  for (int ph = 0; ph < UG_RUN_PHASES; ph++) {
    json_t *steps = ug_spec_member(v, at, phases[ph], &k_at);
    if (!steps) continue;
    if (ug_spec_want(l, steps, k_at, JSON_ARRAY, phases[ph]) < 0) return -1;
    const size_t n = json_array_size(steps);
    if (n > 32) return ug_spec_fail_at(l, k_at->at, "at most 32 steps in \"%s\"", phases[ph]);
    if (!(r->steps[ph] = calloc(n ? n : 1, sizeof *r->steps[ph]))) return ug_spec_fail_at(l, k_at->at, "out of memory");
    for (size_t i = 0; i < n; i++)
      if (load_step(l, k, c, &r->steps[ph][r->nsteps[ph]++], json_array_get(steps, i), ug_jloc_index(k_at, i)) < 0)
        return -1;
  }
  if (!r->nsteps[UG_RUN_CHUNK]) return ug_spec_fail_at(l, at->at, "a composite's \"run\" has no \"chunk\" steps");
  return 0;
}

static void free_binds(ug_binding *b, int n) {
  for (int i = 0; i < n; i++) {
    free(b[i].param);
    ug_expr_free(b[i].cond);
    ug_expr_free(b[i].value);
  }
  free(b);
}

void ug_spec_free_run(ug_run *r) {
  if (!r) return;
  ug_expr_free(r->rows);
  for (int i = 0; i < r->nscratch; i++) {
    free(r->scratch[i].name);
    ug_expr_free(r->scratch[i].count);
    ug_expr_free(r->scratch[i].when);
  }
  free(r->scratch);
  for (int ph = 0; ph < UG_RUN_PHASES; ph++) {
    for (int i = 0; i < r->nsteps[ph]; i++) {
      ug_step *s = &r->steps[ph][i];
      free(s->pass), free(s->routine), free(s->or_routine);
      ug_expr_free(s->when);
      free_binds(s->binds, s->nbinds);
      free_binds(s->or_binds, s->nor_binds);
    }
    free(r->steps[ph]);
  }
  free(r);
}
