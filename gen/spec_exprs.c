/* The spec loader's expressions and names: an expression's names resolve
 * to the pass's symbols, which this part also adds (spec_load_internal.h). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "spec_load_internal.h"

/* ---- expressions: names resolve to the pass's symbols ------------------ */


typedef struct {
  const ug_pass *pass;
  int allow;
  int derived_limit; /* derived values [0, limit) may be used */
  const char *context;
} resolver;

int ug_spec_resolve(void *ud, const char *name, size_t len, const char **why) {
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
    case UG_SYM_DTYPE:
    case UG_SYM_RUN:
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

int ug_spec_get_expr(L *l, json_t *v, const ug_jloc *at, const ug_pass *p, int allow, int derived_limit,
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
    return ug_spec_fail_at(l, at->at, "%s must be an expression (a string or an integer), not %s", what, ug_spec_json_kind(v));
  }
  if (!from_string) return ug_spec_expr_text(l, src, at, -1, p, allow, derived_limit, what, out);
  return ug_spec_expr_text(l, src, at, 0, p, allow, derived_limit, what, out);
}

int ug_spec_expr_text(L *l, const char *src, const ug_jloc *at, int pos0, const ug_pass *p, int allow,
                      int derived_limit, const char *what, ug_expr **out) {
  resolver r = {p, allow, derived_limit, what};
  ug_expr_err err;
  *out = ug_expr_parse(src, ug_spec_resolve, &r, &err);
  if (*out) return 0;
  ug_loc eat = pos0 >= 0 ? ug_jloc_string_char(l->text, at, (size_t)pos0 + err.pos) : at->at;
  return ug_spec_fail_at(l, eat, "%s: %s (in \"%s\")", what, err.msg, src);
}

bool ug_spec_expr_variant_only(const ug_pass *p, const ug_expr *e) {
  const int *slots;
  size_t n = ug_expr_slots(e, &slots);
  for (size_t i = 0; i < n; i++) {
    ug_symkind k = p->syms[slots[i]].kind;
    if (k != UG_SYM_AXIS && k != UG_SYM_TILED && k != UG_SYM_DTYPE_BYTES) return false;
  }
  return true;
}

/* ---- names ---------------------------------------------------------------- */

bool ug_spec_name_taken(const ug_pass *p, const char *name) {
  if (ug_pass_arg(p, name) >= 0 || ug_pass_sym(p, name) >= 0) return true;
  for (int i = 0; i < p->naxes; i++)
    if (strcmp(p->axes[i].name, name) == 0) return true;
  return strcmp(name, "tiled") == 0 || strcmp(name, "dtype_bytes") == 0 || strcmp(name, "dtype") == 0;
}

int ug_spec_add_sym(L *l, ug_pass *p, const char *name, ug_symkind kind, int ref, ug_loc at) {
  if (ug_pass_sym(p, name) >= 0) return ug_spec_fail_at(l, at, "the name \"%s\" is declared twice", name);
  ug_sym *s = realloc(p->syms, (size_t)(p->nsyms + 1) * sizeof *s);
  if (!s) return ug_spec_fail_at(l, at, "out of memory");
  p->syms = s;
  s[p->nsyms].name = strdup(name);
  if (!s[p->nsyms].name) return ug_spec_fail_at(l, at, "out of memory");
  s[p->nsyms].kind = kind;
  s[p->nsyms].ref = ref;
  return p->nsyms++;
}
