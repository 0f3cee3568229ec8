/* A kernel's composite ops ("composites"): the axes of the variants of an op
 * that runs several of the kernel's passes, their defaults as expressions
 * over the kernel's shape, and the one spelling of a variant's name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_load_internal.h"

/* the kernel's shape names as an expression's symbols: slot i = shape[i] */
static int shape_resolve(void *ud, const char *name, size_t len, const char **why) {
  const ug_kernel *k = ud;
  for (int i = 0; i < k->nshape; i++)
    if (strlen(k->shape[i]) == len && !strncmp(k->shape[i], name, len)) return i;
  *why = "a composite's default names the kernel's shape only";
  return -1;
}

/* "prefer": values of a named axis other than the first, each once */
static int load_prefer(L *l, ug_comp_axis *a, json_t *prefer, const ug_jloc *at) {
  if (!prefer) return 0;
  if (ug_spec_want(l, prefer, at, JSON_ARRAY, "\"prefer\"") < 0) return -1;
  if (json_array_size(prefer) > 16) return ug_spec_fail_at(l, at->at, "\"prefer\" lists at most 16 values");
  for (size_t i = 0; i < json_array_size(prefer); i++) {
    const ug_jloc *pat = ug_jloc_index(at, i);
    json_t *p = json_array_get(prefer, i);
    if (!json_is_string(p)) return ug_spec_fail_at(l, pat->at, "a preference is the name of a value");
    const char *name = json_string_value(p);
    int found = -1;
    for (int v = 1; v < a->nvalues; v++)
      if (!strcmp(a->values[v], name)) found = v;
    if (found < 0)
      return ug_spec_fail_at(l, pat->at, "\"prefer\" of composite axis \"%s\": \"%s\" is not one of its values after the first",
                             a->name, name);
    for (int j = 0; j < a->nprefer; j++)
      if (a->prefer[j] == found)
        return ug_spec_fail_at(l, pat->at, "\"prefer\" of composite axis \"%s\": \"%s\" is listed twice", a->name, name);
    a->prefer[a->nprefer++] = found;
  }
  return 0;
}

static int load_axis(L *l, const ug_kernel *k, ug_comp_axis *a, json_t *v, const ug_jloc *at) {
  static const char *const keys[] = {"name", "default", "min", "max", "values", "prefer", NULL};
  if (ug_spec_want(l, v, at, JSON_OBJECT, "a composite axis") < 0 ||
      ug_spec_check_keys(l, v, at, "a composite axis", keys) < 0)
    return -1;
  const ug_jloc *k_at;
  json_t *f = ug_spec_member(v, at, "name", &k_at);
  if (ug_spec_require(l, f, at, "name", "a composite axis") < 0 ||
      ug_spec_get_ident(l, f, k_at, "a composite axis's name", &a->name) < 0)
    return -1;
  json_t *values = ug_spec_member(v, at, "values", &k_at);
  if (values) {
    if (json_object_get(v, "default") || json_object_get(v, "min") || json_object_get(v, "max"))
      return ug_spec_fail_at(l, at->at, "composite axis \"%s\" has \"values\": its default is the first one, and "
                                        "it takes no \"default\", \"min\" or \"max\"", a->name);
    if (ug_spec_want(l, values, k_at, JSON_ARRAY, "\"values\"") < 0) return -1;
    const size_t n = json_array_size(values);
    if (n == 0 || n > 16) return ug_spec_fail_at(l, k_at->at, "\"values\" must list 1 to 16 names");
    if (!(a->values = calloc(n, sizeof *a->values))) return ug_spec_fail_at(l, k_at->at, "out of memory");
    for (size_t i = 0; i < n; i++) {
      const ug_jloc *vat = ug_jloc_index(k_at, i);
      if (ug_spec_get_ident(l, json_array_get(values, i), vat, "a value", &a->values[i]) < 0) return -1;
      a->nvalues++;
      for (size_t j = 0; j < i; j++)
        if (!strcmp(a->values[j], a->values[i]))
          return ug_spec_fail_at(l, vat->at, "value \"%s\" is listed twice", a->values[i]);
    }
    json_t *prefer = ug_spec_member(v, at, "prefer", &k_at);
    return load_prefer(l, a, prefer, k_at);
  }
  if (json_object_get(v, "prefer"))
    return ug_spec_fail_at(l, at->at, "composite axis \"%s\" has no \"values\": it takes no \"prefer\"", a->name);
  f = ug_spec_member(v, at, "default", &k_at);
  if (ug_spec_require(l, f, at, "default", "an integer composite axis") < 0) return -1;
  if (!json_is_string(f)) return ug_spec_fail_at(l, k_at->at, "\"default\" must be an expression in a string");
  const char *src = json_string_value(f);
  ug_expr_err err;
  if (!(a->dflt = ug_expr_parse(src, shape_resolve, (void *)k, &err))) {
    ug_loc eat = ug_jloc_string_char(l->text, k_at, err.pos);
    return ug_spec_fail_at(l, eat, "the default of composite axis \"%s\": %s (in \"%s\")", a->name, err.msg, src);
  }
  if (!(a->dflt_src = strdup(src))) return ug_spec_fail_at(l, k_at->at, "out of memory");
  a->min = 1, a->max = INT64_MAX;
  if ((f = ug_spec_member(v, at, "min", &k_at)) && ug_spec_get_int(l, f, k_at, "\"min\"", 0, INT64_MAX, &a->min) < 0)
    return -1;
  if ((f = ug_spec_member(v, at, "max", &k_at)) && ug_spec_get_int(l, f, k_at, "\"max\"", 0, INT64_MAX, &a->max) < 0)
    return -1;
  if (a->min > a->max) return ug_spec_fail_at(l, at->at, "composite axis \"%s\": min %lld is above max %lld", a->name,
                                              (long long)a->min, (long long)a->max);
  return 0;
}

/* "tune": {"dtypes": [...], "cases": [{shape name: value, ...}, ...]}: what
 * `ubgen tune` sweeps without --dtype and --shape; each case gives every
 * name of the kernel's shape, at least 1 */
/* "omit", "flops" and "tolerance" of a composite's "tune": they name its "args" */
static int load_tune_call(L *l, ug_composite *c, json_t *v, const ug_jloc *at) {
  const ug_pass *call = c->call;
  const ug_jloc *k_at;
  json_t *f = ug_spec_member(v, at, "omit", &k_at);
  if ((f || json_object_get(v, "flops") || json_object_get(v, "tolerance")) && !call)
    return ug_spec_fail_at(l, at->at, "a composite's \"omit\", \"flops\" and \"tolerance\" name its \"args\", which it does not have");
  if (f) {
    if (ug_spec_want(l, f, k_at, JSON_ARRAY, "\"omit\"") < 0) return -1;
    for (size_t i = 0; i < json_array_size(f); i++) {
      const ug_jloc *iat = ug_jloc_index(k_at, i);
      json_t *e = json_array_get(f, i);
      if (ug_spec_want(l, e, iat, JSON_STRING, "an \"omit\" entry") < 0) return -1;
      const int a = ug_pass_arg(call, json_string_value(e));
      if (a < 0 || call->args[a].kind != UG_ARG_TENSOR || !call->args[a].optional)
        return ug_spec_fail_at(l, iat->at, "\"%s\" is not an optional tensor of composite \"%s\"", json_string_value(e), c->name);
      c->tune_omit[a] = true;
    }
  }
  if ((f = ug_spec_member(v, at, "flops", &k_at)) &&
      ug_spec_get_expr(l, f, k_at, call, ALLOW_INTS | ALLOW_HAS, 0, "\"flops\"", &c->tune_flops) < 0)
    return -1;
  if (!(f = ug_spec_member(v, at, "tolerance", &k_at))) return 0;
  if (ug_spec_want(l, f, k_at, JSON_OBJECT, "\"tolerance\"") < 0) return -1;
  const size_t n = json_object_size(f);
  c->tune_tol_value = calloc(n + 1, sizeof *c->tune_tol_value);
  c->tune_tol = calloc(n + 1, sizeof *c->tune_tol);
  c->tune_tol_scaled = calloc(n + 1, sizeof *c->tune_tol_scaled);
  if (!c->tune_tol_value || !c->tune_tol || !c->tune_tol_scaled) return ug_spec_fail_at(l, k_at->at, "out of memory");
  const char *key;
  json_t *tv;
  json_object_foreach(f, key, tv) {
    static const char *const keys[] = {"atol", "rtol", "scaled", NULL};
    const ug_jloc *tat = ug_jloc_member(k_at, key, NULL), *x_at;
    bool known = false;
    for (int i = 0; i < c->naxes; i++)
      for (int j = 1; c->axes[i].values && j < c->axes[i].nvalues; j++) known |= !strcmp(c->axes[i].values[j], key);
    if (!known)
      return ug_spec_fail_at(l, tat->at, "\"%s\" is not a value (other than the first) of a named axis of composite \"%s\"",
                             key, c->name);
    const int t = c->ntune_tol++;
    if (!(c->tune_tol_value[t] = strdup(key))) return ug_spec_fail_at(l, tat->at, "out of memory");
    if (ug_spec_want(l, tv, tat, JSON_OBJECT, "a tolerance") < 0 || ug_spec_check_keys(l, tv, tat, "a tolerance", keys) < 0)
      return -1;
    json_t *x = ug_spec_member(tv, tat, "atol", &x_at);
    if (ug_spec_require(l, x, tat, "atol", "a tolerance") < 0 || ug_spec_get_number(l, x, x_at, "\"atol\"", &c->tune_tol[t].atol) < 0)
      return -1;
    x = ug_spec_member(tv, tat, "rtol", &x_at);
    if (ug_spec_require(l, x, tat, "rtol", "a tolerance") < 0 || ug_spec_get_number(l, x, x_at, "\"rtol\"", &c->tune_tol[t].rtol) < 0)
      return -1;
    if ((x = ug_spec_member(tv, tat, "scaled", &x_at))) {
      if (ug_spec_want(l, x, x_at, JSON_TRUE, "\"scaled\"") < 0) return -1;
      c->tune_tol_scaled[t] = json_is_true(x);
    }
  }
  return 0;
}

static int load_tune(L *l, const ug_kernel *k, ug_composite *c, json_t *v, const ug_jloc *at) {
  static const char *const keys[] = {"dtypes", "cases", "omit", "flops", "tolerance", NULL};
  if (ug_spec_want(l, v, at, JSON_OBJECT, "a composite's \"tune\"") < 0 ||
      ug_spec_check_keys(l, v, at, "a composite's \"tune\"", keys) < 0)
    return -1;
  const ug_jloc *k_at;
  json_t *f = ug_spec_member(v, at, "dtypes", &k_at);
  if (f && ug_spec_load_dtypes(l, f, k_at, c->tune_dtypes) < 0) return -1;
  f = ug_spec_member(v, at, "cases", &k_at);
  if (ug_spec_require(l, f, at, "cases", "a composite's \"tune\"") < 0 ||
      ug_spec_want(l, f, k_at, JSON_ARRAY, "\"cases\"") < 0)
    return -1;
  const size_t n = json_array_size(f);
  if (n == 0 || n > 16) return ug_spec_fail_at(l, k_at->at, "\"cases\" must list 1 to 16 shapes");
  if (!(c->tune_shapes = calloc(n * (size_t)k->nshape, sizeof *c->tune_shapes)))
    return ug_spec_fail_at(l, k_at->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const ug_jloc *cat = ug_jloc_index(k_at, i);
    json_t *cs = json_array_get(f, i);
    if (ug_spec_want(l, cs, cat, JSON_OBJECT, "a tune case") < 0) return -1;
    if (json_object_size(cs) != (size_t)k->nshape || json_object_get(cs, "omit")) {
      char names[256] = "";
      for (int j = 0; j < k->nshape; j++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? ", " : "", k->shape[j]);
      return ug_spec_fail_at(l, cat->at, "a composite's tune case gives the kernel's shape, exactly: %s", names);
    }
    for (int j = 0; j < k->nshape; j++) {
      json_t *x = ug_spec_member(cs, cat, k->shape[j], &k_at);
      if (ug_spec_require(l, x, cat, k->shape[j], "a composite's tune case") < 0 ||
          ug_spec_get_int(l, x, k_at, k->shape[j], 1, INT64_MAX, &c->tune_shapes[i * (size_t)k->nshape + j]) < 0)
        return -1;
    }
    c->ntune++;
  }
  return 0;
}

/* "args" and "checks": the op's public arguments as a pass without a
 * template, so the runtime validates a call to it as it validates a pass's.
 * Its symbols are a pass's (dtype_bytes, the int args, has_<tensor>) and
 * "dtype", the call's dtype as a number (0 f32, 1 f16, 2 bf16), for a
 * check that relates an argument to it. */
static int load_call(L *l, ug_kernel *k, ug_composite *c, json_t *cv, const ug_jloc *cat) {
  const ug_jloc *args_at, *k_at;
  json_t *args = ug_spec_member(cv, cat, "args", &args_at), *checks = ug_spec_member(cv, cat, "checks", &k_at);
  if (!args) return checks ? ug_spec_fail_at(l, k_at->at, "a composite's \"checks\" need its \"args\"") : 0;
  ug_pass *p = c->call = calloc(1, sizeof *p);
  if (!p || !(p->name = strdup(c->name))) return ug_spec_fail_at(l, args_at->at, "out of memory");
  p->kernel = k;
  p->at = cat->at;
  p->sym_tiled = p->sym_dtype_bytes = p->sym_dtype = -1;
  for (int i = 0; i < UG_MAX_ARGS; i++) p->sym_of_arg[i] = -1;
  for (int i = 0; i < UG_MAX_AXES; i++) p->sym_of_axis[i] = -1;
  for (int dt = 0; dt < UG_NDTYPES; dt++) p->dtypes[dt] = true;
  if (ug_spec_load_args(l, args, args_at, p) < 0) return -1;
  if ((p->sym_dtype_bytes = ug_spec_add_sym(l, p, "dtype_bytes", UG_SYM_DTYPE_BYTES, 0, cat->at)) < 0 ||
      (p->sym_dtype = ug_spec_add_sym(l, p, "dtype", UG_SYM_DTYPE, 0, cat->at)) < 0)
    return -1;
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    char hn[80];
    snprintf(hn, sizeof hn, "has_%s", a->name);
    if (a->kind == UG_ARG_INT && (p->sym_of_arg[i] = ug_spec_add_sym(l, p, a->name, UG_SYM_INT, i, a->at)) < 0) return -1;
    if (a->kind == UG_ARG_TENSOR && (p->sym_of_arg[i] = ug_spec_add_sym(l, p, hn, UG_SYM_HAS, i, a->at)) < 0) return -1;
  }
  if (ug_spec_load_arg_shapes(l, args, args_at, p) < 0) return -1;
  for (int s = 0; s < k->nshape; s++) {
    const int ai = ug_pass_arg(p, k->shape[s]);
    if (ai < 0 || p->args[ai].kind != UG_ARG_INT)
      return ug_spec_fail_at(l, args_at->at, "shape name \"%s\" must be an int arg of composite \"%s\"", k->shape[s],
                             c->name);
  }
  return checks ? ug_spec_load_rules(l, checks, k_at, p, "checks", ALLOW_INTS | ALLOW_HAS, &p->checks, &p->nchecks) : 0;
}

/* "composites": {"<name>": {"about": "...", "axes": [...], "tune": {...},
 * "args": [...], "checks": [...], "run": {...}}, ...} */
int ug_spec_load_composites(L *l, ug_kernel *k, json_t *v, const ug_jloc *at) {
  if (ug_spec_want(l, v, at, JSON_OBJECT, "\"composites\"") < 0) return -1;
  const size_t n = json_object_size(v);
  if (n == 0 || n > 8) return ug_spec_fail_at(l, at->at, "\"composites\" must have 1 to 8 ops");
  if (!(k->composites = calloc(n, sizeof *k->composites))) return ug_spec_fail_at(l, at->at, "out of memory");
  const char *key;
  json_t *cv;
  json_object_foreach(v, key, cv) {
    const ug_jloc *cat = ug_jloc_member(at, key, NULL);
    ug_composite *c = &k->composites[k->ncomposites++];
    if (!ug_is_ident(key)) return ug_spec_fail_at(l, cat->at, "composite name \"%s\" is not an identifier", key);
    if (ug_spec_pass(k, key)) return ug_spec_fail_at(l, cat->at, "composite \"%s\" has a pass's name", key);
    if (!(c->name = strdup(key))) return ug_spec_fail_at(l, cat->at, "out of memory");
    static const char *const keys[] = {"about", "axes", "tune", "args", "checks", "run", NULL};
    if (ug_spec_want(l, cv, cat, JSON_OBJECT, "a composite") < 0 || ug_spec_check_keys(l, cv, cat, "a composite", keys) < 0)
      return -1;
    const ug_jloc *k_at;
    json_t *f = ug_spec_member(cv, cat, "about", &k_at);
    if (f) {
      if (ug_spec_want(l, f, k_at, JSON_STRING, "\"about\"") < 0) return -1;
      if (!(c->about = strdup(json_string_value(f)))) return ug_spec_fail_at(l, k_at->at, "out of memory");
    }
    json_t *axes = ug_spec_member(cv, cat, "axes", &k_at);
    if (ug_spec_require(l, axes, cat, "axes", "a composite") < 0 || ug_spec_want(l, axes, k_at, JSON_ARRAY, "\"axes\"") < 0)
      return -1;
    const size_t na = json_array_size(axes);
    if (na == 0 || na > 8) return ug_spec_fail_at(l, k_at->at, "\"axes\" must list 1 to 8 axes");
    if (!(c->axes = calloc(na, sizeof *c->axes))) return ug_spec_fail_at(l, k_at->at, "out of memory");
    for (size_t i = 0; i < na; i++) {
      const ug_jloc *aat = ug_jloc_index(k_at, i);
      ug_comp_axis *a = &c->axes[c->naxes++];
      if (load_axis(l, k, a, json_array_get(axes, i), aat) < 0) return -1;
      for (int j = 0; j + 1 < c->naxes; j++)
        if (!strcmp(c->axes[j].name, a->name)) return ug_spec_fail_at(l, aat->at, "axis \"%s\" is listed twice", a->name);
    }
    for (int dt = 0; dt < UG_NDTYPES; dt++) c->tune_dtypes[dt] = true;
    if (load_call(l, k, c, cv, cat) < 0) return -1;
    if ((f = ug_spec_member(cv, cat, "tune", &k_at)) && (load_tune(l, k, c, f, k_at) < 0 || load_tune_call(l, c, f, k_at) < 0))
      return -1;
    if ((f = ug_spec_member(cv, cat, "run", &k_at)) && ug_spec_load_run(l, k, c, f, k_at) < 0) return -1;
  }
  return 0;
}

void ug_spec_free_composites(ug_kernel *k) {
  for (int i = 0; i < k->ncomposites; i++) {
    ug_composite *c = &k->composites[i];
    for (int j = 0; j < c->naxes; j++) {
      ug_comp_axis *a = &c->axes[j];
      for (int v = 0; v < a->nvalues; v++) free(a->values[v]);
      free(a->values), free(a->name), free(a->dflt_src);
      ug_expr_free(a->dflt);
    }
    free(c->axes), free(c->name), free(c->about), free(c->tune_shapes);
    ug_spec_free_run(c->run);
    ug_expr_free(c->tune_flops);
    for (int t = 0; t < c->ntune_tol; t++) free(c->tune_tol_value[t]);
    free(c->tune_tol_value), free(c->tune_tol), free(c->tune_tol_scaled);
    if (c->call) ug_spec_free_pass(c->call);
    free(c->call);
  }
  free(k->composites);
}

const ug_composite *ug_spec_composite(const ug_kernel *k, const char *name) {
  for (int i = 0; k && name && i < k->ncomposites; i++)
    if (!strcmp(k->composites[i].name, name)) return &k->composites[i];
  return NULL;
}

int ug_comp_default(const ug_comp_axis *a, const int64_t *shape, int64_t *out) {
  ug_expr_err err;
  int64_t v;
  if (!a->dflt || ug_expr_eval(a->dflt, shape, &v, &err) < 0) return -1;
  *out = v;
  return 0;
}

/* one axis's value at s (len bytes): 0, or -1 */
static int parse_value(const ug_comp_axis *a, const char *s, size_t len, int64_t *out) {
  if (a->values) {
    for (int i = 0; i < a->nvalues; i++)
      if (strlen(a->values[i]) == len && !strncmp(a->values[i], s, len)) return *out = i, 0;
    return -1;
  }
  if (len == 0 || (s[0] == '0' && len > 1)) return -1; /* one spelling: no leading zero */
  int64_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    if (n > (INT64_MAX - (s[i] - '0')) / 10) return -1;
    n = n * 10 + (s[i] - '0');
  }
  if (n < a->min || n > a->max) return -1;
  *out = n;
  return 0;
}

int ug_comp_parse(const ug_composite *c, const char *name, int64_t *values, bool *given) {
  for (int i = 0; i < c->naxes; i++) values[i] = 0, given[i] = false;
  const char *s = name;
  int next = 0; /* axes before this one are behind us */
  while (*s) {
    const char *eq = strchr(s, '=');
    if (!eq) return -1;
    int ax = next;
    while (ax < c->naxes && !(strlen(c->axes[ax].name) == (size_t)(eq - s) && !strncmp(c->axes[ax].name, s, eq - s))) ax++;
    if (ax == c->naxes) return -1; /* unknown, repeated or out of order */
    const char *end = strchr(eq + 1, ',');
    const size_t len = end ? (size_t)(end - eq - 1) : strlen(eq + 1);
    if (parse_value(&c->axes[ax], eq + 1, len, &values[ax]) < 0) return -1;
    given[ax] = true;
    next = ax + 1;
    if (!end) break;
    s = end + 1;
    if (!*s) return -1; /* a trailing comma */
  }
  if (!given[0]) {
    for (int i = 0; i < c->naxes; i++)
      if (given[i]) return 0;
    return -1; /* nothing given */
  }
  for (int i = 1; i < c->naxes; i++) /* whole: a named axis at its default is not written */
    if (given[i] && c->axes[i].values && values[i] == 0) return -1;
  return 0;
}
