/* The spec loader's access to JSON values: typed getters that fail with the
 * value's file:line:col (spec_load_internal.h). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "spec_load_internal.h"

/* ---- loader context ------------------------------------------------------ */


int ug_spec_fail_at(L *l, ug_loc at, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ug_fail(l->d, l->file, at, "%s", msg);
}

const char *ug_spec_json_kind(const json_t *v) {
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

int ug_spec_want(L *l, const json_t *v, const ug_jloc *at, json_type t, const char *what) {
  bool ok = json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v));
  if (ok) return 0;
  const char *need = t == JSON_OBJECT ? "an object" : t == JSON_ARRAY ? "an array" : t == JSON_STRING ? "a string"
                   : t == JSON_INTEGER ? "an integer" : t == JSON_TRUE ? "a boolean" : "a number";
  return ug_spec_fail_at(l, at->at, "%s must be %s, not %s", what, need, ug_spec_json_kind(v));
}

/* Every key of obj must be in allowed (NULL-terminated). */
int ug_spec_check_keys(L *l, json_t *obj, const ug_jloc *loc, const char *what, const char *const *allowed) {
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
    return ug_spec_fail_at(l, kat, "unknown key \"%s\" in %s (allowed: %s)", key, what, list);
  }
  return 0;
}

json_t *ug_spec_member(json_t *obj, const ug_jloc *loc, const char *key, const ug_jloc **vloc) {
  json_t *v = json_object_get(obj, key);
  *vloc = v ? ug_jloc_member(loc, key, NULL) : NULL;
  if (v && !*vloc) *vloc = loc; /* cannot happen for a consistent tree; stay safe */
  return v;
}

int ug_spec_require(L *l, json_t *v, const ug_jloc *loc, const char *key, const char *what) {
  if (v) return 0;
  return ug_spec_fail_at(l, loc->at, "%s needs the key \"%s\"", what, key);
}

int ug_spec_get_ident(L *l, json_t *v, const ug_jloc *at, const char *what, char **out) {
  if (ug_spec_want(l, v, at, JSON_STRING, what) < 0) return -1;
  const char *s = json_string_value(v);
  if (!ug_is_ident(s))
    return ug_spec_fail_at(l, at->at, "%s \"%s\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)", what, s);
  *out = strdup(s);
  return *out ? 0 : ug_spec_fail_at(l, at->at, "out of memory");
}

int ug_spec_get_int(L *l, json_t *v, const ug_jloc *at, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  if (!json_is_integer(v))
    return ug_spec_fail_at(l, at->at, "%s must be an integer, not %s", what, ug_spec_json_kind(v));
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return ug_spec_fail_at(l, at->at, "%s is %lld, outside [%lld, %lld]", what, (long long)x, (long long)lo, (long long)hi);
  *out = x;
  return 0;
}

int ug_spec_get_number(L *l, json_t *v, const ug_jloc *at, const char *what, double *out) {
  if (!json_is_number(v)) return ug_spec_fail_at(l, at->at, "%s must be a number, not %s", what, ug_spec_json_kind(v));
  *out = json_number_value(v);
  if (!isfinite(*out)) return ug_spec_fail_at(l, at->at, "%s must be finite", what);
  return 0;
}
