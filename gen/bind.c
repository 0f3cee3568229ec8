#include "bind.h"

#include <stdio.h>
#include <string.h>

int ug_bind(const ug_pass *p, const ug_point *pt, int64_t *env, int *failed, ug_diag *d) {
  ug_point_env(p, pt, env);
  ug_expr_err err;
  for (int i = 0; i < p->nderived; i++) {
    if (ug_expr_eval(p->derived[i].value, env, &env[p->sym_of_derived_base + i], &err) < 0)
      return ug_fail(d, p->kernel->path, p->derived[i].at, "derived value \"%s\" (%s): %s", p->derived[i].name,
                     ug_expr_source(p->derived[i].value), err.msg);
  }
  for (int i = 0; i < p->nconstraints; i++) {
    const ug_rule *r = &p->constraints[i];
    if (r->variant_only) continue; /* enumeration already applied it */
    int64_t v;
    if (ug_expr_eval(r->require, env, &v, &err) < 0)
      return ug_fail(d, p->kernel->path, r->at, "constraint \"%s\": %s", ug_expr_source(r->require), err.msg);
    if (!v) {
      if (failed) *failed = i;
      return 1;
    }
  }
  return 0;
}

void ug_explain_rule(const ug_pass *p, const ug_rule *r, const int64_t *env, char *out, size_t n) {
  size_t len = (size_t)snprintf(out, n, "`%s`", ug_expr_source(r->require));
  if (r->why && len < n) len += (size_t)snprintf(out + len, n - len, " (%s)", r->why);
  if (len < n) len += (size_t)snprintf(out + len, n - len, " fails with");
  const int *slots;
  size_t ns = ug_expr_slots(r->require, &slots);
  for (size_t i = 0; i < ns && len < n; i++) {
    const ug_sym *s = &p->syms[slots[i]];
    const int64_t v = env[slots[i]];
    len += (size_t)snprintf(out + len, n - len, " %s=%lld", s->name, (long long)v);
    const char *named = s->kind == UG_SYM_DTYPE && v >= 0 && v < UG_NDTYPES ? ug_dtype_name((int)v) : NULL;
    const ug_arg *a = s->kind == UG_SYM_INT ? &p->args[s->ref] : NULL;
    for (int k = 0; a && a->value_names && k < a->nvalues; k++)
      if (a->values[k] == v) named = a->value_names[k];
    if (named && len < n) len += (size_t)snprintf(out + len, n - len, " (%s)", named);
  }
}

void ug_case_env(const ug_pass *p, const ug_case *cs, int64_t *env) {
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_INT) env[p->sym_of_arg[i]] = cs->set[i] ? cs->ints[i] : (int64_t)a->dflt;
    else if (a->kind == UG_ARG_TENSOR) env[p->sym_of_arg[i]] = !cs->omit[i];
  }
}
