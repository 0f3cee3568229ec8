/* The spec loader's sections of a pass (docs/spec-format.md): dtypes,
 * tiled, axes, args and their shapes, derived values, rules, stages, UB and
 * workspace buffers, check and tune cases (spec_load_internal.h). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "spec_load_internal.h"

/* ---- sections ------------------------------------------------------------- */

int ug_spec_load_dtypes(L *l, json_t *v, const ug_jloc *at, bool out[UG_NDTYPES]) {
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"dtypes\"") < 0) return -1;
  if (json_array_size(v) == 0) return ug_spec_fail_at(l, at->at, "\"dtypes\" must list at least one dtype");
  memset(out, 0, UG_NDTYPES * sizeof *out);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i);
    if (ug_spec_want(l, e, eat, JSON_STRING, "a dtype") < 0) return -1;
    int dt = ug_dtype_parse(json_string_value(e));
    if (dt < 0) return ug_spec_fail_at(l, eat->at, "unknown dtype \"%s\" (known: f32, f16, bf16)", json_string_value(e));
    if (out[dt]) return ug_spec_fail_at(l, eat->at, "dtype \"%s\" is listed twice", json_string_value(e));
    out[dt] = true;
  }
  return 0;
}

int ug_spec_load_tiled(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"tiled\"") < 0) return -1;
  if (json_array_size(v) == 0) return ug_spec_fail_at(l, at->at, "\"tiled\" must list false, true or both");
  p->tiled_values[0] = p->tiled_values[1] = false;
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i);
    if (ug_spec_want(l, e, eat, JSON_TRUE, "an element of \"tiled\"") < 0) return -1;
    int t = json_is_true(e);
    if (p->tiled_values[t]) return ug_spec_fail_at(l, eat->at, "\"tiled\" lists %s twice", t ? "true" : "false");
    p->tiled_values[t] = true;
  }
  p->has_tiled = true;
  return 0;
}

/* Axes are loaded in two steps: names and values first (they enter the
 * symbol table), expressions after the args are known. */
int ug_spec_load_axes(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"name", "tag", "values", "pow2", "tiles", "default", NULL};
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"axes\"") < 0) return -1;
  if (json_array_size(v) > UG_MAX_AXES) return ug_spec_fail_at(l, at->at, "at most %d axes", UG_MAX_AXES);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i);
    ug_axis *ax = &p->axes[p->naxes];
    memset(ax, 0, sizeof *ax);
    ax->tiles = -1;
    ax->at = eat->at;
    p->naxes++;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, "an axis") < 0 || ug_spec_check_keys(l, e, eat, "an axis", keys) < 0) return -1;
    const ug_jloc *k;
    json_t *f = ug_spec_member(e, eat, "name", &k);
    if (ug_spec_require(l, f, eat, "name", "an axis") < 0 || ug_spec_get_ident(l, f, k, "the axis name", &ax->name) < 0) return -1;
    if (strcmp(ax->name, "tiled") == 0 || strcmp(ax->name, "dtype") == 0 || strcmp(ax->name, "dtype_bytes") == 0)
      return ug_spec_fail_at(l, k->at, "\"%s\" is reserved; use the \"tiled\" and \"dtypes\" keys", ax->name);
    for (int j = 0; j < p->naxes - 1; j++)
      if (strcmp(p->axes[j].name, ax->name) == 0) return ug_spec_fail_at(l, k->at, "axis \"%s\" is declared twice", ax->name);
    f = ug_spec_member(e, eat, "tag", &k);
    if (ug_spec_require(l, f, eat, "tag", "an axis") < 0 || ug_spec_get_ident(l, f, k, "the axis tag", &ax->tag) < 0) return -1;
    for (const char *c = ax->tag; *c; c++)
      if (!(*c >= 'a' && *c <= 'z'))
        return ug_spec_fail_at(l, k->at, "the axis tag \"%s\" must be lowercase letters (it becomes part of variant names)", ax->tag);
    for (int j = 0; j < p->naxes - 1; j++)
      if (strcmp(p->axes[j].tag, ax->tag) == 0) return ug_spec_fail_at(l, k->at, "tag \"%s\" is used by two axes", ax->tag);
    const ug_jloc *vat, *pat;
    json_t *vals = ug_spec_member(e, eat, "values", &vat);
    json_t *pow2 = ug_spec_member(e, eat, "pow2", &pat);
    if (!!vals == !!pow2) return ug_spec_fail_at(l, eat->at, "axis \"%s\" needs exactly one of \"values\" and \"pow2\"", ax->name);
    if (vals) {
      if (ug_spec_want(l, vals, vat, JSON_ARRAY, "\"values\"") < 0) return -1;
      size_t n = json_array_size(vals);
      if (n == 0 || n > 64) return ug_spec_fail_at(l, vat->at, "\"values\" must list 1 to 64 values");
      ax->values = calloc(n, sizeof *ax->values);
      if (!ax->values) return ug_spec_fail_at(l, vat->at, "out of memory");
      size_t j;
      json_t *x;
      json_array_foreach(vals, j, x) {
        const ug_jloc *xat = ug_jloc_index(vat, j);
        if (ug_spec_get_int(l, x, xat, "an axis value", 1, (int64_t)1 << 30, &ax->values[j]) < 0) return -1;
        if (j > 0 && ax->values[j] <= ax->values[j - 1])
          return ug_spec_fail_at(l, xat->at, "axis values must increase (%lld after %lld)", (long long)ax->values[j],
                         (long long)ax->values[j - 1]);
      }
      ax->nvalues = (int)n;
    } else {
      if (ug_spec_want(l, pow2, pat, JSON_ARRAY, "\"pow2\"") < 0) return -1;
      if (json_array_size(pow2) != 2) return ug_spec_fail_at(l, pat->at, "\"pow2\" must be [lowest, highest]");
      int64_t lo, hi;
      if (ug_spec_get_int(l, json_array_get(pow2, 0), ug_jloc_index(pat, 0), "the lowest power of two", 1, (int64_t)1 << 30, &lo) < 0 ||
          ug_spec_get_int(l, json_array_get(pow2, 1), ug_jloc_index(pat, 1), "the highest power of two", 1, (int64_t)1 << 30, &hi) < 0)
        return -1;
      if ((lo & (lo - 1)) || (hi & (hi - 1)))
        return ug_spec_fail_at(l, pat->at, "\"pow2\" bounds must be powers of two (got %lld and %lld)", (long long)lo, (long long)hi);
      if (lo > hi) return ug_spec_fail_at(l, pat->at, "\"pow2\" bounds are reversed (%lld > %lld)", (long long)lo, (long long)hi);
      for (int64_t x = lo; x <= hi; x *= 2) ax->nvalues++;
      ax->values = calloc((size_t)ax->nvalues, sizeof *ax->values);
      if (!ax->values) return ug_spec_fail_at(l, pat->at, "out of memory");
      int j = 0;
      for (int64_t x = lo; x <= hi; x *= 2) ax->values[j++] = x;
    }
  }
  return 0;
}

int ug_spec_load_axis_exprs(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  for (int i = 0; i < p->naxes; i++) {
    json_t *e = json_array_get(v, (size_t)i);
    const ug_jloc *eat = ug_jloc_index(at, (size_t)i), *k;
    ug_axis *ax = &p->axes[i];
    json_t *f = ug_spec_member(e, eat, "tiles", &k);
    if (f) {
      if (ug_spec_want(l, f, k, JSON_STRING, "\"tiles\"") < 0) return -1;
      ax->tiles = ug_pass_arg(p, json_string_value(f));
      if (ax->tiles < 0 || p->args[ax->tiles].kind != UG_ARG_INT)
        return ug_spec_fail_at(l, k->at, "\"tiles\" must name an int argument; \"%s\" is not one", json_string_value(f));
    }
    f = ug_spec_member(e, eat, "default", &k);
    if (f && ug_spec_get_expr(l, f, k, p, ALLOW_AXES | ALLOW_INTS, 0, "the axis default", &ax->dflt) < 0) return -1;
  }
  return 0;
}

int ug_spec_parse_elem(L *l, json_t *v, const ug_jloc *at, bool scalars_ok, ug_elem *elem, ug_argkind *kind) {
  if (ug_spec_want(l, v, at, JSON_STRING, "\"type\"") < 0) return -1;
  const char *s = json_string_value(v);
  if (scalars_ok && strcmp(s, "int") == 0) { *kind = UG_ARG_INT; return 0; }
  if (scalars_ok && strcmp(s, "float") == 0) { *kind = UG_ARG_FLOAT; return 0; }
  if (ug_elem_parse(s, elem) == 0) {
    if (kind) *kind = UG_ARG_TENSOR;
    return 0;
  }
  return ug_spec_fail_at(l, at->at, "unknown type \"%s\" (known: %sT, f32, f16, bf16, i64, i32, u8)", s,
                 scalars_ok ? "int, float, " : "");
}

/* Args, first step: names, kinds and plain attributes; shapes after the
 * symbol table exists. */
int ug_spec_load_args(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"name", "type", "role", "shape", "optional", "may_alias", "min", "max",
                                     "values", "names", "allow_nonfinite", "default", "range", "range_except", NULL};
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"args\"") < 0) return -1;
  if (json_array_size(v) == 0) return ug_spec_fail_at(l, at->at, "\"args\" must not be empty");
  if (json_array_size(v) > UG_MAX_ARGS) return ug_spec_fail_at(l, at->at, "at most %d args", UG_MAX_ARGS);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_arg *a = &p->args[p->nargs];
    memset(a, 0, sizeof *a);
    a->at = eat->at;
    p->nargs++;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, "an arg") < 0 || ug_spec_check_keys(l, e, eat, "an arg", keys) < 0) return -1;
    json_t *f = ug_spec_member(e, eat, "name", &k);
    if (ug_spec_require(l, f, eat, "name", "an arg") < 0 || ug_spec_get_ident(l, f, k, "the arg name", &a->name) < 0) return -1;
    if (strncmp(a->name, "has_", 4) == 0 || strcmp(a->name, "stage") == 0 || strcmp(a->name, "pid") == 0 ||
        strcmp(a->name, "nprog") == 0 || strcmp(a->name, "ub") == 0 || strncmp(a->name, "ubg_", 4) == 0)
      return ug_spec_fail_at(l, k->at, "the arg name \"%s\" is reserved (has_*, ubg_*, stage, pid, nprog, ub)", a->name);
    for (int j = 0; j < p->nargs - 1; j++)
      if (strcmp(p->args[j].name, a->name) == 0) return ug_spec_fail_at(l, k->at, "arg \"%s\" is declared twice", a->name);
    for (int j = 0; j < p->naxes; j++)
      if (strcmp(p->axes[j].name, a->name) == 0) return ug_spec_fail_at(l, k->at, "arg \"%s\" has the name of an axis", a->name);
    f = ug_spec_member(e, eat, "type", &k);
    if (ug_spec_require(l, f, eat, "type", "an arg") < 0 || ug_spec_parse_elem(l, f, k, true, &a->elem, &a->kind) < 0) return -1;
    bool tensor = a->kind == UG_ARG_TENSOR;
    static const char *const tensor_only[] = {"role", "shape", "optional", "may_alias", "range", "range_except", NULL};
    static const char *const int_only[] = {"values", "names", NULL};
    for (const char *const *t = tensor_only; *t; t++)
      if (!tensor && json_object_get(e, *t))
        return ug_spec_fail_at(l, ug_jloc_member(eat, *t, NULL)->at, "\"%s\" applies to tensors, and \"%s\" is a scalar", *t, a->name);
    for (const char *const *t = int_only; *t; t++)
      if (a->kind != UG_ARG_INT && json_object_get(e, *t))
        return ug_spec_fail_at(l, ug_jloc_member(eat, *t, NULL)->at, "\"%s\" applies to int args, and \"%s\" is not one", *t, a->name);
    if (tensor && (json_object_get(e, "min") || json_object_get(e, "max")))
      return ug_spec_fail_at(l, eat->at, "\"min\" and \"max\" apply to scalars, and \"%s\" is a tensor", a->name);
    if (a->kind != UG_ARG_FLOAT && json_object_get(e, "allow_nonfinite"))
      return ug_spec_fail_at(l, ug_jloc_member(eat, "allow_nonfinite", NULL)->at, "\"allow_nonfinite\" applies to float args");
    if (tensor) {
      f = ug_spec_member(e, eat, "role", &k);
      if (ug_spec_require(l, f, eat, "role", "a tensor arg") < 0 || ug_spec_want(l, f, k, JSON_STRING, "\"role\"") < 0) return -1;
      const char *r = json_string_value(f);
      if (strcmp(r, "in") == 0) a->role = UG_ROLE_IN;
      else if (strcmp(r, "out") == 0) a->role = UG_ROLE_OUT;
      else if (strcmp(r, "inout") == 0) a->role = UG_ROLE_INOUT;
      else return ug_spec_fail_at(l, k->at, "unknown role \"%s\" (known: in, out, inout)", r);
      f = ug_spec_member(e, eat, "optional", &k);
      if (f) {
        if (ug_spec_want(l, f, k, JSON_TRUE, "\"optional\"") < 0) return -1;
        a->optional = json_is_true(f);
      }
      if (!json_object_get(e, "shape")) return ug_spec_require(l, NULL, eat, "shape", "a tensor arg");
      bool integer = a->elem == UG_ELEM_I64 || a->elem == UG_ELEM_I32 || a->elem == UG_ELEM_U8;
      if ((f = ug_spec_member(e, eat, "range", &k)) && (!integer || a->role != UG_ROLE_IN))
        return ug_spec_fail_at(l, k->at, "\"range\" applies to integer input tensors (i64, i32, u8 with role in)");
      if ((f = ug_spec_member(e, eat, "range_except", &k)) && !json_object_get(e, "range"))
        return ug_spec_fail_at(l, k->at, "\"range_except\" needs \"range\"");
    } else if (a->kind == UG_ARG_INT) {
      f = ug_spec_member(e, eat, "min", &k);
      if (f && ug_spec_get_int(l, f, k, "\"min\"", INT64_MIN, INT64_MAX, &a->min) < 0) return -1;
      a->has_min = f != NULL;
      f = ug_spec_member(e, eat, "max", &k);
      if (f && ug_spec_get_int(l, f, k, "\"max\"", INT64_MIN, INT64_MAX, &a->max) < 0) return -1;
      a->has_max = f != NULL;
      if (a->has_min && a->has_max && a->min > a->max)
        return ug_spec_fail_at(l, k->at, "\"min\" %lld is above \"max\" %lld", (long long)a->min, (long long)a->max);
      const ug_jloc *vat;
      json_t *vals = ug_spec_member(e, eat, "values", &vat);
      if (vals) {
        if (ug_spec_want(l, vals, vat, JSON_ARRAY, "\"values\"") < 0) return -1;
        size_t n = json_array_size(vals);
        if (n == 0 || n > 64) return ug_spec_fail_at(l, vat->at, "\"values\" must list 1 to 64 values");
        a->values = calloc(n, sizeof *a->values);
        if (!a->values) return ug_spec_fail_at(l, vat->at, "out of memory");
        a->nvalues = (int)n;
        for (size_t j = 0; j < n; j++)
          if (ug_spec_get_int(l, json_array_get(vals, j), ug_jloc_index(vat, j), "an allowed value", INT64_MIN, INT64_MAX,
                      &a->values[j]) < 0)
            return -1;
      }
      const ug_jloc *nat;
      json_t *names = ug_spec_member(e, eat, "names", &nat);
      if (names) {
        if (!vals) return ug_spec_fail_at(l, nat->at, "\"names\" needs \"values\"");
        if (ug_spec_want(l, names, nat, JSON_ARRAY, "\"names\"") < 0) return -1;
        if ((int)json_array_size(names) != a->nvalues)
          return ug_spec_fail_at(l, nat->at, "\"names\" has %zu entries for %d values", json_array_size(names), a->nvalues);
        a->value_names = calloc((size_t)a->nvalues, sizeof *a->value_names);
        if (!a->value_names) return ug_spec_fail_at(l, nat->at, "out of memory");
        for (int j = 0; j < a->nvalues; j++)
          if (ug_spec_get_ident(l, json_array_get(names, (size_t)j), ug_jloc_index(nat, (size_t)j), "a value name",
                        &a->value_names[j]) < 0)
            return -1;
      }
    } else {
      /* a float's bounds are closed, like an int's: [min, max] */
      f = ug_spec_member(e, eat, "min", &k);
      if (f && ug_spec_get_number(l, f, k, "\"min\"", &a->fmin) < 0) return -1;
      a->has_min = f != NULL;
      f = ug_spec_member(e, eat, "max", &k);
      if (f && ug_spec_get_number(l, f, k, "\"max\"", &a->fmax) < 0) return -1;
      a->has_max = f != NULL;
      if (a->has_min && a->has_max && a->fmin > a->fmax)
        return ug_spec_fail_at(l, k->at, "\"min\" %g is above \"max\" %g", a->fmin, a->fmax);
      f = ug_spec_member(e, eat, "allow_nonfinite", &k);
      if (f) {
        if (ug_spec_want(l, f, k, JSON_TRUE, "\"allow_nonfinite\"") < 0) return -1;
        a->allow_nonfinite = json_is_true(f);
      }
    }
    f = ug_spec_member(e, eat, "default", &k);
    if (f) {
      if (tensor) return ug_spec_fail_at(l, k->at, "\"default\" applies to scalars");
      if (a->kind == UG_ARG_INT) {
        int64_t x;
        if (ug_spec_get_int(l, f, k, "\"default\"", INT64_MIN, INT64_MAX, &x) < 0) return -1;
        a->dflt = (double)x;
      } else if (ug_spec_get_number(l, f, k, "\"default\"", &a->dflt) < 0) {
        return -1;
      }
      a->has_dflt = true;
    }
  }
  return 0;
}

int ug_spec_load_arg_shapes(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  for (int i = 0; i < p->nargs; i++) {
    ug_arg *a = &p->args[i];
    if (a->kind != UG_ARG_TENSOR) continue;
    json_t *e = json_array_get(v, (size_t)i);
    const ug_jloc *eat = ug_jloc_index(at, (size_t)i), *k;
    json_t *sh = ug_spec_member(e, eat, "shape", &k);
    if (ug_spec_want(l, sh, k, JSON_ARRAY, "\"shape\"") < 0) return -1;
    size_t n = json_array_size(sh);
    if (n == 0 || n > UG_MAX_RANK) return ug_spec_fail_at(l, k->at, "\"shape\" must have 1 to %d dimensions", UG_MAX_RANK);
    a->rank = (int)n;
    for (size_t j = 0; j < n; j++)
      if (ug_spec_get_expr(l, json_array_get(sh, j), ug_jloc_index(k, j), p, ALLOW_INTS, 0, "a tensor dimension", &a->shape[j]) < 0)
        return -1;
    const ug_jloc *mat;
    json_t *ma = ug_spec_member(e, eat, "may_alias", &mat);
    if (ma) {
      if (ug_spec_want(l, ma, mat, JSON_ARRAY, "\"may_alias\"") < 0) return -1;
      a->nmay_alias = (int)json_array_size(ma);
      a->may_alias = calloc((size_t)a->nmay_alias + 1, sizeof *a->may_alias);
      if (!a->may_alias) return ug_spec_fail_at(l, mat->at, "out of memory");
      for (int j = 0; j < a->nmay_alias; j++) {
        const ug_jloc *jat = ug_jloc_index(mat, (size_t)j);
        if (ug_spec_get_ident(l, json_array_get(ma, (size_t)j), jat, "a \"may_alias\" entry", &a->may_alias[j]) < 0) return -1;
        int t = ug_pass_arg(p, a->may_alias[j]);
        if (t < 0 || p->args[t].kind != UG_ARG_TENSOR || t == i)
          return ug_spec_fail_at(l, jat->at, "\"may_alias\" must name another tensor arg; \"%s\" is not one", a->may_alias[j]);
      }
    }
    const ug_jloc *rat;
    json_t *range = ug_spec_member(e, eat, "range", &rat);
    if (range) {
      if (ug_spec_want(l, range, rat, JSON_ARRAY, "\"range\"") < 0) return -1;
      if (json_array_size(range) != 2) return ug_spec_fail_at(l, rat->at, "\"range\" is [lo, hi): two expressions");
      if (ug_spec_get_expr(l, json_array_get(range, 0), ug_jloc_index(rat, 0), p, ALLOW_INTS, 0, "a range bound", &a->range_lo) < 0 ||
          ug_spec_get_expr(l, json_array_get(range, 1), ug_jloc_index(rat, 1), p, ALLOW_INTS, 0, "a range bound", &a->range_hi) < 0)
        return -1;
      json_t *ex = ug_spec_member(e, eat, "range_except", &rat);
      if (ex && ug_spec_get_expr(l, ex, rat, p, ALLOW_INTS, 0, "\"range_except\"", &a->range_except) < 0) return -1;
    }
  }
  return 0;
}

int ug_spec_load_named_exprs(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *what) {
  static const char *const keys[] = {"name", "value", NULL};
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"derived\"") < 0) return -1;
  size_t n = json_array_size(v);
  p->derived = calloc(n ? n : 1, sizeof *p->derived);
  if (!p->derived) return ug_spec_fail_at(l, at->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_derived *dv = &p->derived[i];
    dv->at = eat->at;
    p->nderived++;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, what) < 0 || ug_spec_check_keys(l, e, eat, what, keys) < 0) return -1;
    json_t *f = ug_spec_member(e, eat, "name", &k);
    if (ug_spec_require(l, f, eat, "name", what) < 0 || ug_spec_get_ident(l, f, k, "the derived name", &dv->name) < 0) return -1;
    if (ug_spec_name_taken(p, dv->name)) return ug_spec_fail_at(l, k->at, "the name \"%s\" is already used in this pass", dv->name);
    if (ug_spec_add_sym(l, p, dv->name, UG_SYM_DERIVED, (int)i, k->at) < 0) return -1;
    if (i == 0) p->sym_of_derived_base = p->nsyms - 1;
    f = ug_spec_member(e, eat, "value", &k);
    if (ug_spec_require(l, f, eat, "value", what) < 0 ||
        ug_spec_get_expr(l, f, k, p, ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED, (int)i, "a derived value", &dv->value) < 0)
      return -1;
  }
  return 0;
}

int ug_spec_load_rules(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *key, int allow, ug_rule **out, int *nout) {
  static const char *const keys[] = {"require", "why", NULL};
  char what[64];
  snprintf(what, sizeof what, "\"%s\"", key);
  if (ug_spec_want(l, v, at, JSON_ARRAY, what) < 0) return -1;
  size_t n = json_array_size(v);
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return ug_spec_fail_at(l, at->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_rule *r = &(*out)[i];
    r->at = eat->at;
    (*nout)++;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, "a rule") < 0 || ug_spec_check_keys(l, e, eat, "a rule", keys) < 0) return -1;
    json_t *f = ug_spec_member(e, eat, "require", &k);
    if (ug_spec_require(l, f, eat, "require", "a rule") < 0 ||
        ug_spec_get_expr(l, f, k, p, allow, p->nderived, "a rule", &r->require) < 0)
      return -1;
    r->variant_only = ug_spec_expr_variant_only(p, r->require);
    f = ug_spec_member(e, eat, "why", &k);
    if (f) {
      if (ug_spec_want(l, f, k, JSON_STRING, "\"why\"") < 0) return -1;
      r->why = strdup(json_string_value(f));
      if (!r->why) return ug_spec_fail_at(l, k->at, "out of memory");
    }
  }
  return 0;
}

int ug_spec_load_stages(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"name", "grid", NULL};
  if (ug_spec_want(l, v, at, JSON_ARRAY, "\"stages\"") < 0) return -1;
  size_t n = json_array_size(v);
  if (n == 0 || n > UG_MAX_STAGES) return ug_spec_fail_at(l, at->at, "\"stages\" must list 1 to %d stages", UG_MAX_STAGES);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_stage *s = &p->stages[i];
    s->at = eat->at;
    p->nstages++;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, "a stage") < 0 || ug_spec_check_keys(l, e, eat, "a stage", keys) < 0) return -1;
    json_t *f = ug_spec_member(e, eat, "name", &k);
    if (ug_spec_require(l, f, eat, "name", "a stage") < 0 || ug_spec_get_ident(l, f, k, "the stage name", &s->name) < 0) return -1;
    for (size_t j = 0; j < i; j++)
      if (strcmp(p->stages[j].name, s->name) == 0) return ug_spec_fail_at(l, k->at, "stage \"%s\" is declared twice", s->name);
    f = ug_spec_member(e, eat, "grid", &k);
    if (ug_spec_require(l, f, eat, "grid", "a stage") < 0 ||
        ug_spec_get_expr(l, f, k, p, ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED, p->nderived, "a stage grid", &s->grid) < 0)
      return -1;
  }
  return 0;
}

int ug_spec_load_buffers(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *key, ug_buffer *bufs, int *nbufs) {
  static const char *const keys[] = {"name", "type", "count", NULL};
  char what[64];
  snprintf(what, sizeof what, "\"%s\"", key);
  bool is_ub = strcmp(key, "ub") == 0;
  if (ug_spec_want(l, v, at, JSON_ARRAY, what) < 0) return -1;
  size_t n = json_array_size(v);
  if (n > UG_MAX_BUFFERS) return ug_spec_fail_at(l, at->at, "at most %d buffers in %s", UG_MAX_BUFFERS, what);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_buffer *b = &bufs[i];
    b->at = eat->at;
    (*nbufs)++;
    if (ug_spec_want(l, e, eat, JSON_OBJECT, "a buffer") < 0 || ug_spec_check_keys(l, e, eat, "a buffer", keys) < 0) return -1;
    json_t *f = ug_spec_member(e, eat, "name", &k);
    if (ug_spec_require(l, f, eat, "name", "a buffer") < 0 || ug_spec_get_ident(l, f, k, "the buffer name", &b->name) < 0) return -1;
    if (ug_spec_name_taken(p, b->name)) return ug_spec_fail_at(l, k->at, "the name \"%s\" is already used in this pass", b->name);
    for (int j = 0; j < p->nub; j++)
      if (&p->ub[j] != b && strcmp(p->ub[j].name, b->name) == 0)
        return ug_spec_fail_at(l, k->at, "buffer \"%s\" is declared twice", b->name);
    for (int j = 0; j < p->nws; j++)
      if (&p->ws[j] != b && strcmp(p->ws[j].name, b->name) == 0)
        return ug_spec_fail_at(l, k->at, "buffer \"%s\" is declared twice", b->name);
    f = ug_spec_member(e, eat, "type", &k);
    if (ug_spec_require(l, f, eat, "type", "a buffer") < 0 || ug_spec_parse_elem(l, f, k, false, &b->elem, NULL) < 0) return -1;
    f = ug_spec_member(e, eat, "count", &k);
    int allow = is_ub ? ALLOW_AXES : ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED;
    if (ug_spec_require(l, f, eat, "count", "a buffer") < 0 ||
        ug_spec_get_expr(l, f, k, p, allow, p->nderived, is_ub ? "a UB buffer count" : "a workspace count", &b->count) < 0)
      return -1;
  }
  return 0;
}

/* "cases": [{int and float args, "omit": [optional tensors]}, ...] (check and tune) */
int ug_spec_load_cases(L *l, json_t *cases, const ug_jloc *cat, ug_pass *p, ug_case **out, int *nout) {
  const char *key;
  if (ug_spec_want(l, cases, cat, JSON_ARRAY, "\"cases\"") < 0) return -1;
  size_t n = json_array_size(cases);
  if (n == 0 || n > 256) return ug_spec_fail_at(l, cat->at, "\"cases\" must list 1 to 256 cases");
  *out = calloc(n, sizeof **out);
  if (!*out) return ug_spec_fail_at(l, cat->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(cases, i);
    const ug_jloc *ca = ug_jloc_index(cat, i);
    ug_case *cs = &(*out)[i];
    cs->at = ca->at;
    (*nout)++;
    if (ug_spec_want(l, c, ca, JSON_OBJECT, "a case") < 0) return -1;
    json_t *x;
    json_object_foreach(c, key, x) {
      const ug_jloc *xa = ug_jloc_member(ca, key, NULL);
      ug_loc kat = ca->at;
      ug_jloc_member(ca, key, &kat);
      if (strcmp(key, "omit") == 0) {
        if (ug_spec_want(l, x, xa, JSON_ARRAY, "\"omit\"") < 0) return -1;
        for (size_t j = 0; j < json_array_size(x); j++) {
          json_t *o = json_array_get(x, j);
          const ug_jloc *oa = ug_jloc_index(xa, j);
          if (ug_spec_want(l, o, oa, JSON_STRING, "an \"omit\" entry") < 0) return -1;
          int ai = ug_pass_arg(p, json_string_value(o));
          if (ai < 0 || !p->args[ai].optional)
            return ug_spec_fail_at(l, oa->at, "\"omit\" must name optional tensors; \"%s\" is not one", json_string_value(o));
          cs->omit[ai] = true;
        }
        continue;
      }
      int ai = ug_pass_arg(p, key);
      if (ai < 0 || p->args[ai].kind == UG_ARG_TENSOR)
        return ug_spec_fail_at(l, kat, "a case sets int and float args and \"omit\"; \"%s\" is not one", key);
      if (p->args[ai].kind == UG_ARG_INT) {
        if (ug_spec_get_int(l, x, xa, key, INT64_MIN, INT64_MAX, &cs->ints[ai]) < 0) return -1;
      } else if (ug_spec_get_number(l, x, xa, key, &cs->floats[ai]) < 0) {
        return -1;
      }
      cs->set[ai] = true;
    }
    for (int ai = 0; ai < p->nargs; ai++) {
      const ug_arg *a = &p->args[ai];
      if (a->kind != UG_ARG_TENSOR && !cs->set[ai] && !a->has_dflt)
        return ug_spec_fail_at(l, ca->at, "this case does not set \"%s\", which has no \"default\"", a->name);
    }
  }
  return 0;
}

int ug_spec_load_check(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"tolerance", "cases", "inputs", NULL};
  static const char *const tol_keys[] = {"atol", "rtol", NULL};
  if (ug_spec_want(l, v, at, JSON_OBJECT, "\"check\"") < 0 || ug_spec_check_keys(l, v, at, "\"check\"", keys) < 0) return -1;
  const ug_jloc *k;
  json_t *tol = ug_spec_member(v, at, "tolerance", &k);
  if (ug_spec_require(l, tol, at, "tolerance", "\"check\"") < 0 || ug_spec_want(l, tol, k, JSON_OBJECT, "\"tolerance\"") < 0) return -1;
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    if (!p->dtypes[dt]) continue;
    char what[64];
    snprintf(what, sizeof what, "the %s tolerance", ug_dtype_name(dt));
    const ug_jloc *tat;
    json_t *t = ug_spec_member(tol, k, ug_dtype_name(dt), &tat);
    if (!t) return ug_spec_fail_at(l, k->at, "\"tolerance\" needs an entry for %s", ug_dtype_name(dt));
    if (ug_spec_want(l, t, tat, JSON_OBJECT, what) < 0 || ug_spec_check_keys(l, t, tat, what, tol_keys) < 0) return -1;
    const ug_jloc *aat, *rat;
    json_t *a = ug_spec_member(t, tat, "atol", &aat), *r = ug_spec_member(t, tat, "rtol", &rat);
    if (ug_spec_require(l, a, tat, "atol", what) < 0 || ug_spec_require(l, r, tat, "rtol", what) < 0) return -1;
    if (ug_spec_get_number(l, a, aat, "atol", &p->tol[dt].atol) < 0 || ug_spec_get_number(l, r, rat, "rtol", &p->tol[dt].rtol) < 0) return -1;
    if (p->tol[dt].atol < 0 || p->tol[dt].rtol < 0) return ug_spec_fail_at(l, tat->at, "tolerances must not be negative");
  }
  const char *key;
  json_t *t;
  json_object_foreach(tol, key, t) {
    int dt = ug_dtype_parse(key);
    if (dt < 0 || !p->dtypes[dt]) {
      ug_loc kat = k->at;
      ug_jloc_member(k, key, &kat);
      return ug_spec_fail_at(l, kat, "\"tolerance\" has \"%s\", which is not a dtype of this pass", key);
    }
  }
  const ug_jloc *cat;
  json_t *cases = ug_spec_member(v, at, "cases", &cat);
  if (ug_spec_require(l, cases, at, "cases", "\"check\"") < 0 || ug_spec_load_cases(l, cases, cat, p, &p->cases, &p->ncases) < 0)
    return -1;
  const ug_jloc *iat;
  json_t *inputs = ug_spec_member(v, at, "inputs", &iat);
  if (inputs) {
    if (ug_spec_want(l, inputs, iat, JSON_OBJECT, "\"inputs\"") < 0) return -1;
    p->inits = calloc(json_object_size(inputs) + 1, sizeof *p->inits);
    if (!p->inits) return ug_spec_fail_at(l, iat->at, "out of memory");
    json_object_foreach(inputs, key, t) {
      const ug_jloc *ta = ug_jloc_member(iat, key, NULL);
      ug_loc kat = iat->at;
      ug_jloc_member(iat, key, &kat);
      int ai = ug_pass_arg(p, key);
      if (ai < 0 || p->args[ai].kind != UG_ARG_TENSOR || p->args[ai].role == UG_ROLE_OUT)
        return ug_spec_fail_at(l, kat, "\"inputs\" describes input tensors; \"%s\" is not one", key);
      static const char *const init_keys[] = {"uniform", "integers", NULL};
      if (ug_spec_want(l, t, ta, JSON_OBJECT, "an input") < 0 || ug_spec_check_keys(l, t, ta, "an input", init_keys) < 0) return -1;
      ug_init *in = &p->inits[p->ninits++];
      in->arg = ai;
      const ug_jloc *ua;
      json_t *u = ug_spec_member(t, ta, "uniform", &ua);
      if (!u) {
        u = ug_spec_member(t, ta, "integers", &ua);
        in->integer = true;
      }
      if (!u) return ug_spec_fail_at(l, ta->at, "an input needs \"uniform\" or \"integers\"");
      if (ug_spec_want(l, u, ua, JSON_ARRAY, "the range") < 0 || json_array_size(u) != 2)
        return ug_spec_fail_at(l, ua->at, "the range must be [low, high]");
      if (ug_spec_get_number(l, json_array_get(u, 0), ug_jloc_index(ua, 0), "low", &in->lo) < 0 ||
          ug_spec_get_number(l, json_array_get(u, 1), ug_jloc_index(ua, 1), "high", &in->hi) < 0)
        return -1;
      if (in->lo > in->hi) return ug_spec_fail_at(l, ua->at, "the range is reversed (%g > %g)", in->lo, in->hi);
    }
  }
  return 0;
}

/* ---- freeing ---------------------------------------------------------- */

static void free_rules(ug_rule *r, int n) {
  for (int i = 0; i < n; i++) {
    ug_expr_free(r[i].require);
    free(r[i].why);
  }
  free(r);
}

void ug_spec_free_pass(ug_pass *p) {
  free(p->name);
  free(p->template_name);
  for (int i = 0; i < p->naxes; i++) {
    free(p->axes[i].name);
    free(p->axes[i].tag);
    free(p->axes[i].values);
    ug_expr_free(p->axes[i].dflt);
  }
  for (int i = 0; i < p->nargs; i++) {
    ug_arg *a = &p->args[i];
    free(a->name);
    for (int j = 0; j < a->rank; j++) ug_expr_free(a->shape[j]);
    for (int j = 0; j < a->nmay_alias; j++) free(a->may_alias[j]);
    free(a->may_alias);
    ug_expr_free(a->range_lo);
    ug_expr_free(a->range_hi);
    ug_expr_free(a->range_except);
    free(a->values);
    if (a->value_names)
      for (int j = 0; j < a->nvalues; j++) free(a->value_names[j]);
    free(a->value_names);
  }
  for (int i = 0; i < p->nderived; i++) {
    free(p->derived[i].name);
    ug_expr_free(p->derived[i].value);
  }
  free(p->derived);
  free_rules(p->constraints, p->nconstraints);
  free_rules(p->checks, p->nchecks);
  for (int i = 0; i < p->nstages; i++) {
    free(p->stages[i].name);
    ug_expr_free(p->stages[i].grid);
  }
  for (int i = 0; i < p->nub; i++) {
    free(p->ub[i].name);
    ug_expr_free(p->ub[i].count);
  }
  for (int i = 0; i < p->nws; i++) {
    free(p->ws[i].name);
    ug_expr_free(p->ws[i].count);
  }
  for (int i = 0; i < p->nsyms; i++) free(p->syms[i].name);
  free(p->syms);
  free(p->cases);
  free(p->tune_cases);
  free(p->inits);
}
