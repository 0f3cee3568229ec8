/* Spec loader: JSON (jansson) -> validated ug_kernel. The schema is
 * docs/spec-format.md; every rule there is enforced here, with the position
 * of the offending key or value. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "json_loc.h"
#include "spec.h"

/* ---- small shared helpers --------------------------------------------- */

static const char *const dtype_names[UG_NDTYPES] = {"f32", "f16", "bf16"};

const char *ug_dtype_name(int dtype) {
  return dtype >= 0 && dtype < UG_NDTYPES ? dtype_names[dtype] : "?";
}

int ug_dtype_parse(const char *s) {
  for (int k = 0; k < UG_NDTYPES; k++)
    if (strcmp(s, dtype_names[k]) == 0) return k;
  return -1;
}

int ug_dtype_bytes(int dtype) { return dtype == 0 ? 4 : 2; }

static const struct { const char *name; ug_elem elem; } elem_table[] = {
    {"T", UG_ELEM_T},     {"f32", UG_ELEM_F32}, {"f16", UG_ELEM_F16}, {"bf16", UG_ELEM_BF16},
    {"i64", UG_ELEM_I64}, {"i32", UG_ELEM_I32}, {"u8", UG_ELEM_U8},
};

const char *ug_elem_name(ug_elem e) {
  for (size_t k = 0; k < sizeof elem_table / sizeof elem_table[0]; k++)
    if (elem_table[k].elem == e) return elem_table[k].name;
  return "?";
}

size_t ug_elem_bytes(ug_elem e, int dtype) {
  switch (e) {
  case UG_ELEM_T: return (size_t)ug_dtype_bytes(dtype);
  case UG_ELEM_F32: return 4;
  case UG_ELEM_F16: return 2;
  case UG_ELEM_BF16: return 2;
  case UG_ELEM_I64: return 8;
  case UG_ELEM_I32: return 4;
  case UG_ELEM_U8: return 1;
  }
  return 1;
}

const char *ug_elem_ctype(ug_elem e, int dtype) {
  switch (e) {
  case UG_ELEM_T: return dtype == 0 ? "float" : "ubg_u16";
  case UG_ELEM_F32: return "float";
  case UG_ELEM_F16: return "ubg_u16";
  case UG_ELEM_BF16: return "ubg_u16";
  case UG_ELEM_I64: return "ubg_i64";
  case UG_ELEM_I32: return "int";
  case UG_ELEM_U8: return "ubg_u8";
  }
  return "void";
}

uint64_t ug_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t k = 0; k < n; k++) {
    h ^= p[k];
    h *= 0x100000001b3ull;
  }
  return h;
}

bool ug_is_ident(const char *s) {
  if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char *c = s + 1; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
      return false;
  return strlen(s) <= 64;
}

const ug_pass *ug_spec_pass(const ug_kernel *k, const char *pass) {
  for (int i = 0; i < k->npasses; i++)
    if (strcmp(k->passes[i].name, pass) == 0) return &k->passes[i];
  return NULL;
}

int ug_pass_arg(const ug_pass *p, const char *name) {
  for (int i = 0; i < p->nargs; i++)
    if (strcmp(p->args[i].name, name) == 0) return i;
  return -1;
}

int ug_pass_sym(const ug_pass *p, const char *name) {
  for (int i = 0; i < p->nsyms; i++)
    if (strcmp(p->syms[i].name, name) == 0) return i;
  return -1;
}

/* ---- loader context ------------------------------------------------------ */

typedef struct {
  const char *file;
  const char *text;
  ug_diag *d;
} L;

static int fail_at(L *l, ug_loc at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(L *l, ug_loc at, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ug_fail(l->d, l->file, at, "%s", msg);
}

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "?";
}

static int want(L *l, const json_t *v, const ug_jloc *at, json_type t, const char *what) {
  bool ok = json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v));
  if (ok) return 0;
  const char *need = t == JSON_OBJECT ? "an object" : t == JSON_ARRAY ? "an array" : t == JSON_STRING ? "a string"
                   : t == JSON_INTEGER ? "an integer" : t == JSON_TRUE ? "a boolean" : "a number";
  return fail_at(l, at->at, "%s must be %s, not %s", what, need, json_kind(v));
}

/* Every key of obj must be in allowed (NULL-terminated). */
static int check_keys(L *l, json_t *obj, const ug_jloc *loc, const char *what, const char *const *allowed) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    bool ok = false;
    for (const char *const *a = allowed; *a; a++) ok |= strcmp(*a, key) == 0;
    if (ok) continue;
    char list[512] = "";
    for (const char *const *a = allowed; *a; a++) {
      strncat(list, *a, sizeof list - strlen(list) - 3);
      if (a[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    ug_loc kat = loc->at;
    ug_jloc_member(loc, key, &kat);
    return fail_at(l, kat, "unknown key \"%s\" in %s (allowed: %s)", key, what, list);
  }
  return 0;
}

static json_t *member(json_t *obj, const ug_jloc *loc, const char *key, const ug_jloc **vloc) {
  json_t *v = json_object_get(obj, key);
  *vloc = v ? ug_jloc_member(loc, key, NULL) : NULL;
  if (v && !*vloc) *vloc = loc; /* cannot happen for a consistent tree; stay safe */
  return v;
}

static int require(L *l, json_t *v, const ug_jloc *loc, const char *key, const char *what) {
  if (v) return 0;
  return fail_at(l, loc->at, "%s needs the key \"%s\"", what, key);
}

static int get_ident(L *l, json_t *v, const ug_jloc *at, const char *what, char **out) {
  if (want(l, v, at, JSON_STRING, what) < 0) return -1;
  const char *s = json_string_value(v);
  if (!ug_is_ident(s))
    return fail_at(l, at->at, "%s \"%s\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)", what, s);
  *out = strdup(s);
  return *out ? 0 : fail_at(l, at->at, "out of memory");
}

static int get_int(L *l, json_t *v, const ug_jloc *at, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  if (!json_is_integer(v))
    return fail_at(l, at->at, "%s must be an integer, not %s", what, json_kind(v));
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return fail_at(l, at->at, "%s is %lld, outside [%lld, %lld]", what, (long long)x, (long long)lo, (long long)hi);
  *out = x;
  return 0;
}

static int get_number(L *l, json_t *v, const ug_jloc *at, const char *what, double *out) {
  if (!json_is_number(v)) return fail_at(l, at->at, "%s must be a number, not %s", what, json_kind(v));
  *out = json_number_value(v);
  if (!isfinite(*out)) return fail_at(l, at->at, "%s must be finite", what);
  return 0;
}

/* ---- expressions: names resolve to the pass's symbols ------------------ */

enum {
  ALLOW_AXES = 1,   /* axes, tiled, dtype_bytes */
  ALLOW_INTS = 2,
  ALLOW_HAS = 4,
  ALLOW_DERIVED = 8,
};

typedef struct {
  const ug_pass *pass;
  int allow;
  int derived_limit; /* derived values [0, limit) may be used */
  const char *context;
} resolver;

static int resolve(void *ud, const char *name, size_t len, const char **why) {
  resolver *r = ud;
  const ug_pass *p = r->pass;
  for (int i = 0; i < p->nsyms; i++) {
    const ug_sym *s = &p->syms[i];
    if (strlen(s->name) != len || strncmp(s->name, name, len) != 0) continue;
    switch (s->kind) {
    case UG_SYM_AXIS:
    case UG_SYM_TILED:
    case UG_SYM_DTYPE_BYTES:
      if (r->allow & ALLOW_AXES) return i;
      *why = "variant axes are not known here";
      return -2;
    case UG_SYM_INT:
      if (r->allow & ALLOW_INTS) return i;
      *why = "only variant axes may be used here (UB sizes belong to the variant, not the shape)";
      return -2;
    case UG_SYM_HAS:
      if (r->allow & ALLOW_HAS) return i;
      *why = "tensor presence is not known here";
      return -2;
    case UG_SYM_DERIVED:
      if ((r->allow & ALLOW_DERIVED) && s->ref < r->derived_limit) return i;
      *why = (r->allow & ALLOW_DERIVED) ? "a derived value may only use derived values declared before it"
                                        : "derived values are not known here";
      return -2;
    }
  }
  for (int i = 0; i < p->nargs; i++) {
    if (strlen(p->args[i].name) == len && strncmp(p->args[i].name, name, len) == 0) {
      *why = p->args[i].kind == UG_ARG_FLOAT ? "float arguments cannot appear in integer expressions"
                                             : "tensors are not values; use has_<name> for presence";
      return -2;
    }
  }
  *why = NULL;
  return -1;
}

static int get_expr(L *l, json_t *v, const ug_jloc *at, const ug_pass *p, int allow, int derived_limit,
                    const char *what, ug_expr **out) {
  char numbuf[32];
  const char *src;
  bool from_string = json_is_string(v);
  if (from_string) {
    src = json_string_value(v);
  } else if (json_is_integer(v)) {
    snprintf(numbuf, sizeof numbuf, "%lld", (long long)json_integer_value(v));
    src = numbuf;
  } else if (json_is_boolean(v)) {
    src = json_is_true(v) ? "true" : "false";
  } else {
    return fail_at(l, at->at, "%s must be an expression (a string or an integer), not %s", what, json_kind(v));
  }
  if (strlen(src) > 4096) return fail_at(l, at->at, "%s is longer than 4096 characters", what);
  resolver r = {p, allow, derived_limit, what};
  ug_expr_err err;
  *out = ug_expr_parse(src, resolve, &r, &err);
  if (*out) return 0;
  ug_loc eat = from_string ? ug_jloc_string_char(l->text, at, err.pos) : at->at;
  return fail_at(l, eat, "%s: %s (in \"%s\")", what, err.msg, src);
}

static bool expr_variant_only(const ug_pass *p, const ug_expr *e) {
  const int *slots;
  size_t n = ug_expr_slots(e, &slots);
  for (size_t i = 0; i < n; i++) {
    ug_symkind k = p->syms[slots[i]].kind;
    if (k != UG_SYM_AXIS && k != UG_SYM_TILED && k != UG_SYM_DTYPE_BYTES) return false;
  }
  return true;
}

/* ---- names ---------------------------------------------------------------- */

static bool name_taken(const ug_pass *p, const char *name) {
  if (ug_pass_arg(p, name) >= 0 || ug_pass_sym(p, name) >= 0) return true;
  for (int i = 0; i < p->naxes; i++)
    if (strcmp(p->axes[i].name, name) == 0) return true;
  return strcmp(name, "tiled") == 0 || strcmp(name, "dtype_bytes") == 0 || strcmp(name, "dtype") == 0;
}

static int add_sym(L *l, ug_pass *p, const char *name, ug_symkind kind, int ref, ug_loc at) {
  if (ug_pass_sym(p, name) >= 0) return fail_at(l, at, "the name \"%s\" is declared twice", name);
  ug_sym *s = realloc(p->syms, (size_t)(p->nsyms + 1) * sizeof *s);
  if (!s) return fail_at(l, at, "out of memory");
  p->syms = s;
  s[p->nsyms].name = strdup(name);
  if (!s[p->nsyms].name) return fail_at(l, at, "out of memory");
  s[p->nsyms].kind = kind;
  s[p->nsyms].ref = ref;
  return p->nsyms++;
}

/* ---- sections ------------------------------------------------------------- */

static int load_dtypes(L *l, json_t *v, const ug_jloc *at, bool out[UG_NDTYPES]) {
  if (want(l, v, at, JSON_ARRAY, "\"dtypes\"") < 0) return -1;
  if (json_array_size(v) == 0) return fail_at(l, at->at, "\"dtypes\" must list at least one dtype");
  memset(out, 0, UG_NDTYPES * sizeof *out);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i);
    if (want(l, e, eat, JSON_STRING, "a dtype") < 0) return -1;
    int dt = ug_dtype_parse(json_string_value(e));
    if (dt < 0) return fail_at(l, eat->at, "unknown dtype \"%s\" (known: f32, f16, bf16)", json_string_value(e));
    if (out[dt]) return fail_at(l, eat->at, "dtype \"%s\" is listed twice", json_string_value(e));
    out[dt] = true;
  }
  return 0;
}

static int load_tiled(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  if (want(l, v, at, JSON_ARRAY, "\"tiled\"") < 0) return -1;
  if (json_array_size(v) == 0) return fail_at(l, at->at, "\"tiled\" must list false, true or both");
  p->tiled_values[0] = p->tiled_values[1] = false;
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i);
    if (want(l, e, eat, JSON_TRUE, "an element of \"tiled\"") < 0) return -1;
    int t = json_is_true(e);
    if (p->tiled_values[t]) return fail_at(l, eat->at, "\"tiled\" lists %s twice", t ? "true" : "false");
    p->tiled_values[t] = true;
  }
  p->has_tiled = true;
  return 0;
}

/* Axes are loaded in two steps: names and values first (they enter the
 * symbol table), expressions after the args are known. */
static int load_axes(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"name", "tag", "values", "pow2", "tiles", "default", NULL};
  if (want(l, v, at, JSON_ARRAY, "\"axes\"") < 0) return -1;
  if (json_array_size(v) > UG_MAX_AXES) return fail_at(l, at->at, "at most %d axes", UG_MAX_AXES);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i);
    ug_axis *ax = &p->axes[p->naxes];
    memset(ax, 0, sizeof *ax);
    ax->tiles = -1;
    ax->at = eat->at;
    p->naxes++;
    if (want(l, e, eat, JSON_OBJECT, "an axis") < 0 || check_keys(l, e, eat, "an axis", keys) < 0) return -1;
    const ug_jloc *k;
    json_t *f = member(e, eat, "name", &k);
    if (require(l, f, eat, "name", "an axis") < 0 || get_ident(l, f, k, "the axis name", &ax->name) < 0) return -1;
    if (strcmp(ax->name, "tiled") == 0 || strcmp(ax->name, "dtype") == 0 || strcmp(ax->name, "dtype_bytes") == 0)
      return fail_at(l, k->at, "\"%s\" is reserved; use the \"tiled\" and \"dtypes\" keys", ax->name);
    for (int j = 0; j < p->naxes - 1; j++)
      if (strcmp(p->axes[j].name, ax->name) == 0) return fail_at(l, k->at, "axis \"%s\" is declared twice", ax->name);
    f = member(e, eat, "tag", &k);
    if (require(l, f, eat, "tag", "an axis") < 0 || get_ident(l, f, k, "the axis tag", &ax->tag) < 0) return -1;
    for (const char *c = ax->tag; *c; c++)
      if (!(*c >= 'a' && *c <= 'z'))
        return fail_at(l, k->at, "the axis tag \"%s\" must be lowercase letters (it becomes part of variant names)", ax->tag);
    for (int j = 0; j < p->naxes - 1; j++)
      if (strcmp(p->axes[j].tag, ax->tag) == 0) return fail_at(l, k->at, "tag \"%s\" is used by two axes", ax->tag);
    const ug_jloc *vat, *pat;
    json_t *vals = member(e, eat, "values", &vat);
    json_t *pow2 = member(e, eat, "pow2", &pat);
    if (!!vals == !!pow2) return fail_at(l, eat->at, "axis \"%s\" needs exactly one of \"values\" and \"pow2\"", ax->name);
    if (vals) {
      if (want(l, vals, vat, JSON_ARRAY, "\"values\"") < 0) return -1;
      size_t n = json_array_size(vals);
      if (n == 0 || n > 64) return fail_at(l, vat->at, "\"values\" must list 1 to 64 values");
      ax->values = calloc(n, sizeof *ax->values);
      if (!ax->values) return fail_at(l, vat->at, "out of memory");
      size_t j;
      json_t *x;
      json_array_foreach(vals, j, x) {
        const ug_jloc *xat = ug_jloc_index(vat, j);
        if (get_int(l, x, xat, "an axis value", 1, (int64_t)1 << 30, &ax->values[j]) < 0) return -1;
        if (j > 0 && ax->values[j] <= ax->values[j - 1])
          return fail_at(l, xat->at, "axis values must increase (%lld after %lld)", (long long)ax->values[j],
                         (long long)ax->values[j - 1]);
      }
      ax->nvalues = (int)n;
    } else {
      if (want(l, pow2, pat, JSON_ARRAY, "\"pow2\"") < 0) return -1;
      if (json_array_size(pow2) != 2) return fail_at(l, pat->at, "\"pow2\" must be [lowest, highest]");
      int64_t lo, hi;
      if (get_int(l, json_array_get(pow2, 0), ug_jloc_index(pat, 0), "the lowest power of two", 1, (int64_t)1 << 30, &lo) < 0 ||
          get_int(l, json_array_get(pow2, 1), ug_jloc_index(pat, 1), "the highest power of two", 1, (int64_t)1 << 30, &hi) < 0)
        return -1;
      if ((lo & (lo - 1)) || (hi & (hi - 1)))
        return fail_at(l, pat->at, "\"pow2\" bounds must be powers of two (got %lld and %lld)", (long long)lo, (long long)hi);
      if (lo > hi) return fail_at(l, pat->at, "\"pow2\" bounds are reversed (%lld > %lld)", (long long)lo, (long long)hi);
      for (int64_t x = lo; x <= hi; x *= 2) ax->nvalues++;
      ax->values = calloc((size_t)ax->nvalues, sizeof *ax->values);
      if (!ax->values) return fail_at(l, pat->at, "out of memory");
      int j = 0;
      for (int64_t x = lo; x <= hi; x *= 2) ax->values[j++] = x;
    }
  }
  return 0;
}

static int load_axis_exprs(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  for (int i = 0; i < p->naxes; i++) {
    json_t *e = json_array_get(v, (size_t)i);
    const ug_jloc *eat = ug_jloc_index(at, (size_t)i), *k;
    ug_axis *ax = &p->axes[i];
    json_t *f = member(e, eat, "tiles", &k);
    if (f) {
      if (want(l, f, k, JSON_STRING, "\"tiles\"") < 0) return -1;
      ax->tiles = ug_pass_arg(p, json_string_value(f));
      if (ax->tiles < 0 || p->args[ax->tiles].kind != UG_ARG_INT)
        return fail_at(l, k->at, "\"tiles\" must name an int argument; \"%s\" is not one", json_string_value(f));
    }
    f = member(e, eat, "default", &k);
    if (f && get_expr(l, f, k, p, ALLOW_AXES | ALLOW_INTS, 0, "the axis default", &ax->dflt) < 0) return -1;
  }
  return 0;
}

static int parse_elem(L *l, json_t *v, const ug_jloc *at, bool scalars_ok, ug_elem *elem, ug_argkind *kind) {
  if (want(l, v, at, JSON_STRING, "\"type\"") < 0) return -1;
  const char *s = json_string_value(v);
  if (scalars_ok && strcmp(s, "int") == 0) { *kind = UG_ARG_INT; return 0; }
  if (scalars_ok && strcmp(s, "float") == 0) { *kind = UG_ARG_FLOAT; return 0; }
  for (size_t k = 0; k < sizeof elem_table / sizeof elem_table[0]; k++) {
    if (strcmp(s, elem_table[k].name) == 0) {
      *elem = elem_table[k].elem;
      if (kind) *kind = UG_ARG_TENSOR;
      return 0;
    }
  }
  return fail_at(l, at->at, "unknown type \"%s\" (known: %sT, f32, f16, bf16, i64, i32, u8)", s,
                 scalars_ok ? "int, float, " : "");
}

/* Args, first step: names, kinds and plain attributes; shapes after the
 * symbol table exists. */
static int load_args(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"name", "type", "role", "shape", "optional", "may_alias", "min", "max",
                                     "values", "names", "allow_nonfinite", "default", "range", "range_except", NULL};
  if (want(l, v, at, JSON_ARRAY, "\"args\"") < 0) return -1;
  if (json_array_size(v) == 0) return fail_at(l, at->at, "\"args\" must not be empty");
  if (json_array_size(v) > UG_MAX_ARGS) return fail_at(l, at->at, "at most %d args", UG_MAX_ARGS);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_arg *a = &p->args[p->nargs];
    memset(a, 0, sizeof *a);
    a->at = eat->at;
    p->nargs++;
    if (want(l, e, eat, JSON_OBJECT, "an arg") < 0 || check_keys(l, e, eat, "an arg", keys) < 0) return -1;
    json_t *f = member(e, eat, "name", &k);
    if (require(l, f, eat, "name", "an arg") < 0 || get_ident(l, f, k, "the arg name", &a->name) < 0) return -1;
    if (strncmp(a->name, "has_", 4) == 0 || strcmp(a->name, "stage") == 0 || strcmp(a->name, "pid") == 0 ||
        strcmp(a->name, "nprog") == 0 || strcmp(a->name, "ub") == 0 || strncmp(a->name, "ubg_", 4) == 0)
      return fail_at(l, k->at, "the arg name \"%s\" is reserved (has_*, ubg_*, stage, pid, nprog, ub)", a->name);
    for (int j = 0; j < p->nargs - 1; j++)
      if (strcmp(p->args[j].name, a->name) == 0) return fail_at(l, k->at, "arg \"%s\" is declared twice", a->name);
    for (int j = 0; j < p->naxes; j++)
      if (strcmp(p->axes[j].name, a->name) == 0) return fail_at(l, k->at, "arg \"%s\" has the name of an axis", a->name);
    f = member(e, eat, "type", &k);
    if (require(l, f, eat, "type", "an arg") < 0 || parse_elem(l, f, k, true, &a->elem, &a->kind) < 0) return -1;
    bool tensor = a->kind == UG_ARG_TENSOR;
    static const char *const tensor_only[] = {"role", "shape", "optional", "may_alias", "range", "range_except", NULL};
    static const char *const int_only[] = {"min", "max", "values", "names", NULL};
    for (const char *const *t = tensor_only; *t; t++)
      if (!tensor && json_object_get(e, *t))
        return fail_at(l, ug_jloc_member(eat, *t, NULL)->at, "\"%s\" applies to tensors, and \"%s\" is a scalar", *t, a->name);
    for (const char *const *t = int_only; *t; t++)
      if (a->kind != UG_ARG_INT && json_object_get(e, *t))
        return fail_at(l, ug_jloc_member(eat, *t, NULL)->at, "\"%s\" applies to int args, and \"%s\" is not one", *t, a->name);
    if (a->kind != UG_ARG_FLOAT && json_object_get(e, "allow_nonfinite"))
      return fail_at(l, ug_jloc_member(eat, "allow_nonfinite", NULL)->at, "\"allow_nonfinite\" applies to float args");
    if (tensor) {
      f = member(e, eat, "role", &k);
      if (require(l, f, eat, "role", "a tensor arg") < 0 || want(l, f, k, JSON_STRING, "\"role\"") < 0) return -1;
      const char *r = json_string_value(f);
      if (strcmp(r, "in") == 0) a->role = UG_ROLE_IN;
      else if (strcmp(r, "out") == 0) a->role = UG_ROLE_OUT;
      else if (strcmp(r, "inout") == 0) a->role = UG_ROLE_INOUT;
      else return fail_at(l, k->at, "unknown role \"%s\" (known: in, out, inout)", r);
      f = member(e, eat, "optional", &k);
      if (f) {
        if (want(l, f, k, JSON_TRUE, "\"optional\"") < 0) return -1;
        a->optional = json_is_true(f);
      }
      if (!json_object_get(e, "shape")) return require(l, NULL, eat, "shape", "a tensor arg");
      bool integer = a->elem == UG_ELEM_I64 || a->elem == UG_ELEM_I32 || a->elem == UG_ELEM_U8;
      if ((f = member(e, eat, "range", &k)) && (!integer || a->role != UG_ROLE_IN))
        return fail_at(l, k->at, "\"range\" applies to integer input tensors (i64, i32, u8 with role in)");
      if ((f = member(e, eat, "range_except", &k)) && !json_object_get(e, "range"))
        return fail_at(l, k->at, "\"range_except\" needs \"range\"");
    } else if (a->kind == UG_ARG_INT) {
      f = member(e, eat, "min", &k);
      if (f && get_int(l, f, k, "\"min\"", INT64_MIN, INT64_MAX, &a->min) < 0) return -1;
      a->has_min = f != NULL;
      f = member(e, eat, "max", &k);
      if (f && get_int(l, f, k, "\"max\"", INT64_MIN, INT64_MAX, &a->max) < 0) return -1;
      a->has_max = f != NULL;
      if (a->has_min && a->has_max && a->min > a->max)
        return fail_at(l, k->at, "\"min\" %lld is above \"max\" %lld", (long long)a->min, (long long)a->max);
      const ug_jloc *vat;
      json_t *vals = member(e, eat, "values", &vat);
      if (vals) {
        if (want(l, vals, vat, JSON_ARRAY, "\"values\"") < 0) return -1;
        size_t n = json_array_size(vals);
        if (n == 0 || n > 64) return fail_at(l, vat->at, "\"values\" must list 1 to 64 values");
        a->values = calloc(n, sizeof *a->values);
        if (!a->values) return fail_at(l, vat->at, "out of memory");
        a->nvalues = (int)n;
        for (size_t j = 0; j < n; j++)
          if (get_int(l, json_array_get(vals, j), ug_jloc_index(vat, j), "an allowed value", INT64_MIN, INT64_MAX,
                      &a->values[j]) < 0)
            return -1;
      }
      const ug_jloc *nat;
      json_t *names = member(e, eat, "names", &nat);
      if (names) {
        if (!vals) return fail_at(l, nat->at, "\"names\" needs \"values\"");
        if (want(l, names, nat, JSON_ARRAY, "\"names\"") < 0) return -1;
        if ((int)json_array_size(names) != a->nvalues)
          return fail_at(l, nat->at, "\"names\" has %zu entries for %d values", json_array_size(names), a->nvalues);
        a->value_names = calloc((size_t)a->nvalues, sizeof *a->value_names);
        if (!a->value_names) return fail_at(l, nat->at, "out of memory");
        for (int j = 0; j < a->nvalues; j++)
          if (get_ident(l, json_array_get(names, (size_t)j), ug_jloc_index(nat, (size_t)j), "a value name",
                        &a->value_names[j]) < 0)
            return -1;
      }
    } else {
      f = member(e, eat, "allow_nonfinite", &k);
      if (f) {
        if (want(l, f, k, JSON_TRUE, "\"allow_nonfinite\"") < 0) return -1;
        a->allow_nonfinite = json_is_true(f);
      }
    }
    f = member(e, eat, "default", &k);
    if (f) {
      if (tensor) return fail_at(l, k->at, "\"default\" applies to scalars");
      if (a->kind == UG_ARG_INT) {
        int64_t x;
        if (get_int(l, f, k, "\"default\"", INT64_MIN, INT64_MAX, &x) < 0) return -1;
        a->dflt = (double)x;
      } else if (get_number(l, f, k, "\"default\"", &a->dflt) < 0) {
        return -1;
      }
      a->has_dflt = true;
    }
  }
  return 0;
}

static int load_arg_shapes(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  for (int i = 0; i < p->nargs; i++) {
    ug_arg *a = &p->args[i];
    if (a->kind != UG_ARG_TENSOR) continue;
    json_t *e = json_array_get(v, (size_t)i);
    const ug_jloc *eat = ug_jloc_index(at, (size_t)i), *k;
    json_t *sh = member(e, eat, "shape", &k);
    if (want(l, sh, k, JSON_ARRAY, "\"shape\"") < 0) return -1;
    size_t n = json_array_size(sh);
    if (n == 0 || n > UG_MAX_RANK) return fail_at(l, k->at, "\"shape\" must have 1 to %d dimensions", UG_MAX_RANK);
    a->rank = (int)n;
    for (size_t j = 0; j < n; j++)
      if (get_expr(l, json_array_get(sh, j), ug_jloc_index(k, j), p, ALLOW_INTS, 0, "a tensor dimension", &a->shape[j]) < 0)
        return -1;
    const ug_jloc *mat;
    json_t *ma = member(e, eat, "may_alias", &mat);
    if (ma) {
      if (want(l, ma, mat, JSON_ARRAY, "\"may_alias\"") < 0) return -1;
      a->nmay_alias = (int)json_array_size(ma);
      a->may_alias = calloc((size_t)a->nmay_alias + 1, sizeof *a->may_alias);
      if (!a->may_alias) return fail_at(l, mat->at, "out of memory");
      for (int j = 0; j < a->nmay_alias; j++) {
        const ug_jloc *jat = ug_jloc_index(mat, (size_t)j);
        if (get_ident(l, json_array_get(ma, (size_t)j), jat, "a \"may_alias\" entry", &a->may_alias[j]) < 0) return -1;
        int t = ug_pass_arg(p, a->may_alias[j]);
        if (t < 0 || p->args[t].kind != UG_ARG_TENSOR || t == i)
          return fail_at(l, jat->at, "\"may_alias\" must name another tensor arg; \"%s\" is not one", a->may_alias[j]);
      }
    }
    const ug_jloc *rat;
    json_t *range = member(e, eat, "range", &rat);
    if (range) {
      if (want(l, range, rat, JSON_ARRAY, "\"range\"") < 0) return -1;
      if (json_array_size(range) != 2) return fail_at(l, rat->at, "\"range\" is [lo, hi): two expressions");
      if (get_expr(l, json_array_get(range, 0), ug_jloc_index(rat, 0), p, ALLOW_INTS, 0, "a range bound", &a->range_lo) < 0 ||
          get_expr(l, json_array_get(range, 1), ug_jloc_index(rat, 1), p, ALLOW_INTS, 0, "a range bound", &a->range_hi) < 0)
        return -1;
      json_t *ex = member(e, eat, "range_except", &rat);
      if (ex && get_expr(l, ex, rat, p, ALLOW_INTS, 0, "\"range_except\"", &a->range_except) < 0) return -1;
    }
  }
  return 0;
}

static int load_named_exprs(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *what) {
  static const char *const keys[] = {"name", "value", NULL};
  if (want(l, v, at, JSON_ARRAY, "\"derived\"") < 0) return -1;
  size_t n = json_array_size(v);
  p->derived = calloc(n ? n : 1, sizeof *p->derived);
  if (!p->derived) return fail_at(l, at->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_derived *dv = &p->derived[i];
    dv->at = eat->at;
    p->nderived++;
    if (want(l, e, eat, JSON_OBJECT, what) < 0 || check_keys(l, e, eat, what, keys) < 0) return -1;
    json_t *f = member(e, eat, "name", &k);
    if (require(l, f, eat, "name", what) < 0 || get_ident(l, f, k, "the derived name", &dv->name) < 0) return -1;
    if (name_taken(p, dv->name)) return fail_at(l, k->at, "the name \"%s\" is already used in this pass", dv->name);
    if (add_sym(l, p, dv->name, UG_SYM_DERIVED, (int)i, k->at) < 0) return -1;
    if (i == 0) p->sym_of_derived_base = p->nsyms - 1;
    f = member(e, eat, "value", &k);
    if (require(l, f, eat, "value", what) < 0 ||
        get_expr(l, f, k, p, ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED, (int)i, "a derived value", &dv->value) < 0)
      return -1;
  }
  return 0;
}

static int load_rules(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *key, int allow, ug_rule **out, int *nout) {
  static const char *const keys[] = {"require", "why", NULL};
  char what[64];
  snprintf(what, sizeof what, "\"%s\"", key);
  if (want(l, v, at, JSON_ARRAY, what) < 0) return -1;
  size_t n = json_array_size(v);
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return fail_at(l, at->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_rule *r = &(*out)[i];
    r->at = eat->at;
    (*nout)++;
    if (want(l, e, eat, JSON_OBJECT, "a rule") < 0 || check_keys(l, e, eat, "a rule", keys) < 0) return -1;
    json_t *f = member(e, eat, "require", &k);
    if (require(l, f, eat, "require", "a rule") < 0 ||
        get_expr(l, f, k, p, allow, p->nderived, "a rule", &r->require) < 0)
      return -1;
    r->variant_only = expr_variant_only(p, r->require);
    f = member(e, eat, "why", &k);
    if (f) {
      if (want(l, f, k, JSON_STRING, "\"why\"") < 0) return -1;
      r->why = strdup(json_string_value(f));
      if (!r->why) return fail_at(l, k->at, "out of memory");
    }
  }
  return 0;
}

static int load_stages(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"name", "grid", NULL};
  if (want(l, v, at, JSON_ARRAY, "\"stages\"") < 0) return -1;
  size_t n = json_array_size(v);
  if (n == 0 || n > UG_MAX_STAGES) return fail_at(l, at->at, "\"stages\" must list 1 to %d stages", UG_MAX_STAGES);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_stage *s = &p->stages[i];
    s->at = eat->at;
    p->nstages++;
    if (want(l, e, eat, JSON_OBJECT, "a stage") < 0 || check_keys(l, e, eat, "a stage", keys) < 0) return -1;
    json_t *f = member(e, eat, "name", &k);
    if (require(l, f, eat, "name", "a stage") < 0 || get_ident(l, f, k, "the stage name", &s->name) < 0) return -1;
    for (size_t j = 0; j < i; j++)
      if (strcmp(p->stages[j].name, s->name) == 0) return fail_at(l, k->at, "stage \"%s\" is declared twice", s->name);
    f = member(e, eat, "grid", &k);
    if (require(l, f, eat, "grid", "a stage") < 0 ||
        get_expr(l, f, k, p, ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED, p->nderived, "a stage grid", &s->grid) < 0)
      return -1;
  }
  return 0;
}

static int load_buffers(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *key, ug_buffer *bufs, int *nbufs) {
  static const char *const keys[] = {"name", "type", "count", NULL};
  char what[64];
  snprintf(what, sizeof what, "\"%s\"", key);
  bool is_ub = strcmp(key, "ub") == 0;
  if (want(l, v, at, JSON_ARRAY, what) < 0) return -1;
  size_t n = json_array_size(v);
  if (n > UG_MAX_BUFFERS) return fail_at(l, at->at, "at most %d buffers in %s", UG_MAX_BUFFERS, what);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    const ug_jloc *eat = ug_jloc_index(at, i), *k;
    ug_buffer *b = &bufs[i];
    b->at = eat->at;
    (*nbufs)++;
    if (want(l, e, eat, JSON_OBJECT, "a buffer") < 0 || check_keys(l, e, eat, "a buffer", keys) < 0) return -1;
    json_t *f = member(e, eat, "name", &k);
    if (require(l, f, eat, "name", "a buffer") < 0 || get_ident(l, f, k, "the buffer name", &b->name) < 0) return -1;
    if (name_taken(p, b->name)) return fail_at(l, k->at, "the name \"%s\" is already used in this pass", b->name);
    for (int j = 0; j < p->nub; j++)
      if (&p->ub[j] != b && strcmp(p->ub[j].name, b->name) == 0)
        return fail_at(l, k->at, "buffer \"%s\" is declared twice", b->name);
    for (int j = 0; j < p->nws; j++)
      if (&p->ws[j] != b && strcmp(p->ws[j].name, b->name) == 0)
        return fail_at(l, k->at, "buffer \"%s\" is declared twice", b->name);
    f = member(e, eat, "type", &k);
    if (require(l, f, eat, "type", "a buffer") < 0 || parse_elem(l, f, k, false, &b->elem, NULL) < 0) return -1;
    f = member(e, eat, "count", &k);
    int allow = is_ub ? ALLOW_AXES : ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED;
    if (require(l, f, eat, "count", "a buffer") < 0 ||
        get_expr(l, f, k, p, allow, p->nderived, is_ub ? "a UB buffer count" : "a workspace count", &b->count) < 0)
      return -1;
  }
  return 0;
}

/* "cases": [{int and float args, "omit": [optional tensors]}, ...] (check and tune) */
static int load_cases(L *l, json_t *cases, const ug_jloc *cat, ug_pass *p, ug_case **out, int *nout) {
  const char *key;
  if (want(l, cases, cat, JSON_ARRAY, "\"cases\"") < 0) return -1;
  size_t n = json_array_size(cases);
  if (n == 0 || n > 256) return fail_at(l, cat->at, "\"cases\" must list 1 to 256 cases");
  *out = calloc(n, sizeof **out);
  if (!*out) return fail_at(l, cat->at, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(cases, i);
    const ug_jloc *ca = ug_jloc_index(cat, i);
    ug_case *cs = &(*out)[i];
    cs->at = ca->at;
    (*nout)++;
    if (want(l, c, ca, JSON_OBJECT, "a case") < 0) return -1;
    json_t *x;
    json_object_foreach(c, key, x) {
      const ug_jloc *xa = ug_jloc_member(ca, key, NULL);
      ug_loc kat = ca->at;
      ug_jloc_member(ca, key, &kat);
      if (strcmp(key, "omit") == 0) {
        if (want(l, x, xa, JSON_ARRAY, "\"omit\"") < 0) return -1;
        for (size_t j = 0; j < json_array_size(x); j++) {
          json_t *o = json_array_get(x, j);
          const ug_jloc *oa = ug_jloc_index(xa, j);
          if (want(l, o, oa, JSON_STRING, "an \"omit\" entry") < 0) return -1;
          int ai = ug_pass_arg(p, json_string_value(o));
          if (ai < 0 || !p->args[ai].optional)
            return fail_at(l, oa->at, "\"omit\" must name optional tensors; \"%s\" is not one", json_string_value(o));
          cs->omit[ai] = true;
        }
        continue;
      }
      int ai = ug_pass_arg(p, key);
      if (ai < 0 || p->args[ai].kind == UG_ARG_TENSOR)
        return fail_at(l, kat, "a case sets int and float args and \"omit\"; \"%s\" is not one", key);
      if (p->args[ai].kind == UG_ARG_INT) {
        if (get_int(l, x, xa, key, INT64_MIN, INT64_MAX, &cs->ints[ai]) < 0) return -1;
      } else if (get_number(l, x, xa, key, &cs->floats[ai]) < 0) {
        return -1;
      }
      cs->set[ai] = true;
    }
    for (int ai = 0; ai < p->nargs; ai++) {
      const ug_arg *a = &p->args[ai];
      if (a->kind != UG_ARG_TENSOR && !cs->set[ai] && !a->has_dflt)
        return fail_at(l, ca->at, "this case does not set \"%s\", which has no \"default\"", a->name);
    }
  }
  return 0;
}

static int load_check(L *l, json_t *v, const ug_jloc *at, ug_pass *p) {
  static const char *const keys[] = {"tolerance", "cases", "inputs", NULL};
  static const char *const tol_keys[] = {"atol", "rtol", NULL};
  if (want(l, v, at, JSON_OBJECT, "\"check\"") < 0 || check_keys(l, v, at, "\"check\"", keys) < 0) return -1;
  const ug_jloc *k;
  json_t *tol = member(v, at, "tolerance", &k);
  if (require(l, tol, at, "tolerance", "\"check\"") < 0 || want(l, tol, k, JSON_OBJECT, "\"tolerance\"") < 0) return -1;
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    if (!p->dtypes[dt]) continue;
    char what[64];
    snprintf(what, sizeof what, "the %s tolerance", ug_dtype_name(dt));
    const ug_jloc *tat;
    json_t *t = member(tol, k, ug_dtype_name(dt), &tat);
    if (!t) return fail_at(l, k->at, "\"tolerance\" needs an entry for %s", ug_dtype_name(dt));
    if (want(l, t, tat, JSON_OBJECT, what) < 0 || check_keys(l, t, tat, what, tol_keys) < 0) return -1;
    const ug_jloc *aat, *rat;
    json_t *a = member(t, tat, "atol", &aat), *r = member(t, tat, "rtol", &rat);
    if (require(l, a, tat, "atol", what) < 0 || require(l, r, tat, "rtol", what) < 0) return -1;
    if (get_number(l, a, aat, "atol", &p->tol[dt].atol) < 0 || get_number(l, r, rat, "rtol", &p->tol[dt].rtol) < 0) return -1;
    if (p->tol[dt].atol < 0 || p->tol[dt].rtol < 0) return fail_at(l, tat->at, "tolerances must not be negative");
  }
  const char *key;
  json_t *t;
  json_object_foreach(tol, key, t) {
    int dt = ug_dtype_parse(key);
    if (dt < 0 || !p->dtypes[dt]) {
      ug_loc kat = k->at;
      ug_jloc_member(k, key, &kat);
      return fail_at(l, kat, "\"tolerance\" has \"%s\", which is not a dtype of this pass", key);
    }
  }
  const ug_jloc *cat;
  json_t *cases = member(v, at, "cases", &cat);
  if (require(l, cases, at, "cases", "\"check\"") < 0 || load_cases(l, cases, cat, p, &p->cases, &p->ncases) < 0)
    return -1;
  const ug_jloc *iat;
  json_t *inputs = member(v, at, "inputs", &iat);
  if (inputs) {
    if (want(l, inputs, iat, JSON_OBJECT, "\"inputs\"") < 0) return -1;
    p->inits = calloc(json_object_size(inputs) + 1, sizeof *p->inits);
    if (!p->inits) return fail_at(l, iat->at, "out of memory");
    json_object_foreach(inputs, key, t) {
      const ug_jloc *ta = ug_jloc_member(iat, key, NULL);
      ug_loc kat = iat->at;
      ug_jloc_member(iat, key, &kat);
      int ai = ug_pass_arg(p, key);
      if (ai < 0 || p->args[ai].kind != UG_ARG_TENSOR || p->args[ai].role == UG_ROLE_OUT)
        return fail_at(l, kat, "\"inputs\" describes input tensors; \"%s\" is not one", key);
      static const char *const init_keys[] = {"uniform", "integers", NULL};
      if (want(l, t, ta, JSON_OBJECT, "an input") < 0 || check_keys(l, t, ta, "an input", init_keys) < 0) return -1;
      ug_init *in = &p->inits[p->ninits++];
      in->arg = ai;
      const ug_jloc *ua;
      json_t *u = member(t, ta, "uniform", &ua);
      if (!u) {
        u = member(t, ta, "integers", &ua);
        in->integer = true;
      }
      if (!u) return fail_at(l, ta->at, "an input needs \"uniform\" or \"integers\"");
      if (want(l, u, ua, JSON_ARRAY, "the range") < 0 || json_array_size(u) != 2)
        return fail_at(l, ua->at, "the range must be [low, high]");
      if (get_number(l, json_array_get(u, 0), ug_jloc_index(ua, 0), "low", &in->lo) < 0 ||
          get_number(l, json_array_get(u, 1), ug_jloc_index(ua, 1), "high", &in->hi) < 0)
        return -1;
      if (in->lo > in->hi) return fail_at(l, ua->at, "the range is reversed (%g > %g)", in->lo, in->hi);
    }
  }
  return 0;
}

/* ---- a pass ------------------------------------------------------------------ */

typedef struct {
  json_t *dtypes, *axes, *tiled;
  const ug_jloc *dtypes_at, *axes_at, *tiled_at;
} kernel_defaults;

/* a file beside the spec (template, reference): a plain name, no path */
static int get_file_name(L *l, json_t *f, const ug_jloc *k, const char *what, char **out) {
  const char *tn = json_string_value(f);
  bool safe = tn[0] && tn[0] != '.' && strlen(tn) < 200;
  for (const char *c = tn; *c; c++)
    safe &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
  if (!safe) return fail_at(l, k->at, "%s file name \"%s\" may only use letters, digits, '_', '-' and '.' (no paths)", what, tn);
  if (!(*out = strdup(tn))) return fail_at(l, k->at, "out of memory");
  return 0;
}

static int load_pass(L *l, ug_kernel *kn, ug_pass *p, const char *name, json_t *v, const ug_jloc *at,
                     const kernel_defaults *kd) {
  static const char *const keys[] = {"template", "dtypes", "axes", "tiled", "args", "derived", "constraints", "checks",
                                     "stages", "ub", "workspace", "bitwise", "check", "tune", "description", NULL};
  char what[96];
  snprintf(what, sizeof what, "pass \"%s\"", name);
  p->kernel = kn;
  p->at = at->at;
  p->bitwise = true;
  p->sym_tiled = p->sym_dtype_bytes = -1;
  for (int i = 0; i < UG_MAX_ARGS; i++) p->sym_of_arg[i] = -1;
  for (int i = 0; i < UG_MAX_AXES; i++) p->sym_of_axis[i] = -1;
  p->name = strdup(name);
  if (!p->name) return fail_at(l, at->at, "out of memory");
  if (!ug_is_ident(name)) return fail_at(l, at->at, "pass name \"%s\" is not an identifier", name);
  if (want(l, v, at, JSON_OBJECT, what) < 0 || check_keys(l, v, at, what, keys) < 0) return -1;

  const ug_jloc *k;
  json_t *f = member(v, at, "template", &k);
  if (require(l, f, at, "template", what) < 0 || want(l, f, k, JSON_STRING, "\"template\"") < 0) return -1;
  if (get_file_name(l, f, k, "template", &p->template_name) < 0) return -1;
  p->template_at = k->at;

  f = member(v, at, "dtypes", &k);
  if (!f) { f = kd->dtypes; k = kd->dtypes_at; }
  if (!f) return require(l, NULL, at, "dtypes", what);
  if (load_dtypes(l, f, k, p->dtypes) < 0) return -1;

  const ug_jloc *axes_at;
  json_t *axes = member(v, at, "axes", &axes_at);
  if (!axes) { axes = kd->axes; axes_at = kd->axes_at; }
  if (axes && load_axes(l, axes, axes_at, p) < 0) return -1;

  f = member(v, at, "tiled", &k);
  if (!f) { f = kd->tiled; k = kd->tiled_at; }
  if (f && load_tiled(l, f, k, p) < 0) return -1;

  /* every combination of axis values, tiled and dtype is a candidate that
   * ubgen enumerates and plans (and may render): bounded, so a spec cannot
   * make it run out of memory */
  double points = (double)(p->has_tiled ? p->tiled_values[0] + p->tiled_values[1] : 1);
  for (int i = 0; i < p->naxes; i++) points *= (double)p->axes[i].nvalues;
  int ndt = 0;
  for (int dt = 0; dt < UG_NDTYPES; dt++) ndt += p->dtypes[dt];
  if (points * ndt > UG_MAX_VARIANTS)
    return fail_at(l, axes_at ? axes_at->at : at->at,
                   "pass %s has %.0f variants (axis values x tiled x dtypes); at most %d", p->name, points * ndt,
                   UG_MAX_VARIANTS);

  const ug_jloc *args_at;
  json_t *args = member(v, at, "args", &args_at);
  if (require(l, args, at, "args", what) < 0 || load_args(l, args, args_at, p) < 0) return -1;

  /* the symbol table: axes, tiled, dtype_bytes, int args, has_<tensor> */
  for (int i = 0; i < p->naxes; i++)
    if ((p->sym_of_axis[i] = add_sym(l, p, p->axes[i].name, UG_SYM_AXIS, i, p->axes[i].at)) < 0) return -1;
  if (p->has_tiled && (p->sym_tiled = add_sym(l, p, "tiled", UG_SYM_TILED, 0, at->at)) < 0) return -1;
  if ((p->sym_dtype_bytes = add_sym(l, p, "dtype_bytes", UG_SYM_DTYPE_BYTES, 0, at->at)) < 0) return -1;
  for (int i = 0; i < p->nargs; i++) {
    if (p->args[i].kind == UG_ARG_INT) {
      if ((p->sym_of_arg[i] = add_sym(l, p, p->args[i].name, UG_SYM_INT, i, p->args[i].at)) < 0) return -1;
    } else if (p->args[i].kind == UG_ARG_TENSOR) {
      char hn[80];
      snprintf(hn, sizeof hn, "has_%s", p->args[i].name);
      if ((p->sym_of_arg[i] = add_sym(l, p, hn, UG_SYM_HAS, i, p->args[i].at)) < 0) return -1;
    }
  }
  if (axes && load_axis_exprs(l, axes, axes_at, p) < 0) return -1;
  if (load_arg_shapes(l, args, args_at, p) < 0) return -1;

  for (int s = 0; s < kn->nshape; s++) {
    int ai = ug_pass_arg(p, kn->shape[s]);
    if (ai < 0 || p->args[ai].kind != UG_ARG_INT)
      return fail_at(l, args_at->at, "shape name \"%s\" must be an int arg of %s", kn->shape[s], what);
  }

  const ug_jloc *da;
  json_t *derived = member(v, at, "derived", &da);
  if (derived && load_named_exprs(l, derived, da, p, "a derived value") < 0) return -1;

  f = member(v, at, "constraints", &k);
  if (f && load_rules(l, f, k, p, "constraints", ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED, &p->constraints,
                      &p->nconstraints) < 0)
    return -1;
  f = member(v, at, "checks", &k);
  if (f && load_rules(l, f, k, p, "checks", ALLOW_INTS | ALLOW_HAS, &p->checks, &p->nchecks) < 0) return -1;

  f = member(v, at, "stages", &k);
  if (require(l, f, at, "stages", what) < 0 || load_stages(l, f, k, p) < 0) return -1;
  f = member(v, at, "ub", &k);
  if (f && load_buffers(l, f, k, p, "ub", p->ub, &p->nub) < 0) return -1;
  f = member(v, at, "workspace", &k);
  if (f && load_buffers(l, f, k, p, "workspace", p->ws, &p->nws) < 0) return -1;
  f = member(v, at, "bitwise", &k);
  if (f) {
    if (want(l, f, k, JSON_TRUE, "\"bitwise\"") < 0) return -1;
    p->bitwise = json_is_true(f);
  }
  f = member(v, at, "description", &k);
  if (f && want(l, f, k, JSON_STRING, "\"description\"") < 0) return -1;
  f = member(v, at, "check", &k);
  if (f && load_check(l, f, k, p) < 0) return -1;
  f = member(v, at, "tune", &k);
  if (f) { /* "tune": {"cases": [...]}: the shapes `ubgen tune` sweeps when none is given */
    static const char *const tune_keys[] = {"cases", NULL};
    if (want(l, f, k, JSON_OBJECT, "\"tune\"") < 0 || check_keys(l, f, k, "\"tune\"", tune_keys) < 0) return -1;
    const ug_jloc *tat;
    json_t *tc = member(f, k, "cases", &tat);
    if (require(l, tc, k, "cases", "\"tune\"") < 0 || load_cases(l, tc, tat, p, &p->tune_cases, &p->ntune_cases) < 0)
      return -1;
  }

  /* variant names are keys of the registry and the tuning DB: they must fit
   * their buffer whole, never be cut (two cut names could be equal) */
  size_t longest = strlen(kn->name) + 1 + strlen(p->name) + 1 + 4 + (p->has_tiled ? 2 : 0);
  for (int i = 0; i < p->naxes; i++) {
    char digits[32];
    longest += 1 + strlen(p->axes[i].tag) + (size_t)snprintf(digits, sizeof digits, "%lld",
                                                              (long long)p->axes[i].values[p->axes[i].nvalues - 1]);
  }
  if (longest > UG_MAX_VARIANT_NAME)
    return fail_at(l, at->at, "variant names of pass \"%s\" would be up to %zu characters; at most %d (shorten the kernel, pass or axis tags)",
                   name, longest, UG_MAX_VARIANT_NAME);
  for (int i = 0; i < p->naxes; i++) {
    if (p->axes[i].tiles >= 0) continue;
    if (p->has_tiled && i == 0) return fail_at(l, p->axes[0].at, "the first axis must say which int arg it \"tiles\" when the pass has \"tiled\"");
  }
  return 0;
}

/* ---- a kernel --------------------------------------------------------- */

static int load_kernel(L *l, ug_kernel *kn, json_t *root, const ug_jloc *at) {
  static const char *const keys[] = {"ubgen_spec", "kernel", "description", "reference", "safety_margin", "shape",
                                     "dtypes", "axes", "tiled", "passes", NULL};
  if (want(l, root, at, JSON_OBJECT, "a spec") < 0 || check_keys(l, root, at, "the spec", keys) < 0) return -1;
  const ug_jloc *k;
  json_t *f = member(root, at, "ubgen_spec", &k);
  int64_t version;
  if (require(l, f, at, "ubgen_spec", "the spec") < 0 || get_int(l, f, k, "\"ubgen_spec\"", INT64_MIN, INT64_MAX, &version) < 0)
    return -1;
  if (version != 1) return fail_at(l, k->at, "\"ubgen_spec\" is %lld; this ubgen reads version 1", (long long)version);
  f = member(root, at, "kernel", &k);
  if (require(l, f, at, "kernel", "the spec") < 0 || get_ident(l, f, k, "the kernel name", &kn->name) < 0) return -1;
  kn->name_at = k->at;
  f = member(root, at, "description", &k);
  if (f) {
    if (want(l, f, k, JSON_STRING, "\"description\"") < 0) return -1;
    if (!(kn->description = strdup(json_string_value(f)))) return fail_at(l, k->at, "out of memory");
  }
  f = member(root, at, "reference", &k);
  if (f) {
    if (want(l, f, k, JSON_STRING, "\"reference\"") < 0 || get_file_name(l, f, k, "reference", &kn->reference_name) < 0)
      return -1;
    kn->reference_at = k->at;
  }
  f = member(root, at, "safety_margin", &k);
  if (f) {
    if (get_number(l, f, k, "\"safety_margin\"", &kn->safety_margin) < 0) return -1;
    if (!(kn->safety_margin > 0 && kn->safety_margin <= 1))
      return fail_at(l, k->at, "\"safety_margin\" is %g, outside (0, 1]", kn->safety_margin);
  }
  f = member(root, at, "shape", &k);
  if (require(l, f, at, "shape", "the spec") < 0 || want(l, f, k, JSON_ARRAY, "\"shape\"") < 0) return -1;
  size_t ns = json_array_size(f);
  if (ns == 0 || ns > 8) return fail_at(l, k->at, "\"shape\" must list 1 to 8 names");
  kn->shape = calloc(ns, sizeof *kn->shape);
  if (!kn->shape) return fail_at(l, k->at, "out of memory");
  for (size_t i = 0; i < ns; i++) {
    if (get_ident(l, json_array_get(f, i), ug_jloc_index(k, i), "a shape name", &kn->shape[i]) < 0) return -1;
    kn->nshape++;
  }
  kernel_defaults kd = {0};
  kd.dtypes = member(root, at, "dtypes", &kd.dtypes_at);
  kd.axes = member(root, at, "axes", &kd.axes_at);
  kd.tiled = member(root, at, "tiled", &kd.tiled_at);

  const ug_jloc *pat;
  json_t *passes = member(root, at, "passes", &pat);
  if (require(l, passes, at, "passes", "the spec") < 0 || want(l, passes, pat, JSON_OBJECT, "\"passes\"") < 0) return -1;
  size_t np = json_object_size(passes);
  if (np == 0 || np > 16) return fail_at(l, pat->at, "\"passes\" must have 1 to 16 passes");
  kn->passes = calloc(np, sizeof *kn->passes);
  if (!kn->passes) return fail_at(l, pat->at, "out of memory");
  const char *key;
  json_t *pv;
  json_object_foreach(passes, key, pv) {
    const ug_jloc *pa = ug_jloc_member(pat, key, NULL);
    ug_pass *p = &kn->passes[kn->npasses++];
    if (load_pass(l, kn, p, key, pv, pa, &kd) < 0) return -1;
  }
  return 0;
}

ug_kernel *ug_spec_parse(const char *name, const char *dir, const char *text, size_t len, ug_diag *d) {
  ug_diag_clear(d);
  L l = {name, text, d};
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    ug_loc at = {jerr.line > 0 ? jerr.line : 0, jerr.column > 0 ? jerr.column : 1};
    ug_fail(d, name, at, "JSON: %s", jerr.text);
    return NULL;
  }
  ug_kernel *kn = calloc(1, sizeof *kn);
  ug_jloc *loc = ug_jloc_build(text, len);
  if (!kn || !loc) {
    ug_fail(d, name, (ug_loc){0, 0}, "out of memory");
    free(kn);
    ug_jloc_free(loc);
    json_decref(root);
    return NULL;
  }
  kn->path = strdup(name);
  kn->dir = strdup(dir ? dir : "");
  kn->text = malloc(len + 1);
  if (!kn->path || !kn->dir || !kn->text) {
    ug_fail(d, name, (ug_loc){0, 0}, "out of memory");
    goto fail;
  }
  memcpy(kn->text, text, len);
  kn->text[len] = '\0';
  kn->text_len = len;
  kn->hash = ug_fnv1a(text, len);
  if (load_kernel(&l, kn, root, loc) < 0) goto fail;
  ug_jloc_free(loc);
  json_decref(root);
  return kn;
fail:
  ug_jloc_free(loc);
  json_decref(root);
  ug_spec_free(kn);
  return NULL;
}

bool ug_json_is_spec(const char *text, size_t len) {
  json_t *root = json_loadb(text, len, 0, NULL);
  bool spec = !root || !json_is_object(root) || json_object_get(root, "ubgen_spec") || json_object_get(root, "kernel");
  json_decref(root);
  return spec;
}

ug_kernel *ug_spec_load_dir_file(const char *path, bool *skipped, ug_diag *d) {
  ug_diag_clear(d);
  *skipped = false;
  size_t len;
  char *buf = ug_read_file_within(path, 64u << 20, &len, d);
  if (!buf) return NULL;
  *skipped = !ug_json_is_spec(buf, len);
  free(buf);
  return *skipped ? NULL : ug_spec_load_file(path, d);
}

ug_kernel *ug_spec_load_file(const char *path, ug_diag *d) {
  ug_diag_clear(d);
  size_t len;
  char *buf = ug_read_file_within(path, 64u << 20, &len, d);
  if (!buf) return NULL;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  ug_kernel *k = ug_spec_parse(path, dir, buf, len, d);
  free(buf);
  return k;
}

static void free_rules(ug_rule *r, int n) {
  for (int i = 0; i < n; i++) {
    ug_expr_free(r[i].require);
    free(r[i].why);
  }
  free(r);
}

static void free_pass(ug_pass *p) {
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

void ug_spec_free(ug_kernel *k) {
  if (!k) return;
  for (int i = 0; i < k->npasses; i++) free_pass(&k->passes[i]);
  free(k->passes);
  for (int i = 0; i < k->nshape; i++) free(k->shape[i]);
  free(k->shape);
  free(k->name);
  free(k->path);
  free(k->dir);
  free(k->text);
  free(k->description);
  free(k->reference_name);
  free(k);
}
