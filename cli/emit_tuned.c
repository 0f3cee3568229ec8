#include "emit_tuned.h"

#include <stdlib.h>
#include <string.h>

#include "../gen/bind.h"
#include "../gen/strategy.h"

/* keeps the default strategy's choice for the shape in env */
static int keep_default(const ug_pass *p, const ug_variant *vs, int nv, int64_t *env, int64_t usable, bool *keep,
                        ug_diag *d) {
  ug_choice ch;
  if (ug_default_strategy(p, vs, nv, env, usable, &ch, d) < 0) return -1;
  if (ch.chosen >= 0) keep[ch.chosen] = true;
  return 0;
}

int cli_tuned_keep(const ug_pass *p, int dtype, const ug_variant *vs, int nv, const ug_tunedb *db,
                  const ug_budget *budget, bool *keep, cli_tuned_stats *st, ug_diag *d) {
  const ug_kernel *k = p->kernel;
  int64_t usable = ug_budget_usable(budget, k);
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  ug_case none;
  memset(&none, 0, sizeof none);
  int rc = env ? 0 : -1;
  if (!env) ug_fail(d, k->path, (ug_loc){0, 0}, "out of memory");
  for (int c = 0; c < p->ntune_cases && rc == 0; c++) {
    ug_case_env(p, &p->tune_cases[c], env);
    rc = keep_default(p, vs, nv, env, usable, keep, d);
  }
  for (int i = 0; i < db->n && rc == 0; i++) {
    const ug_tune_entry *e = &db->e[i];
    if (strcmp(e->kernel, k->name) || strcmp(e->pass, p->name) || e->dtype != dtype) continue;
    if (e->ub_bytes != budget->ub_bytes) {
      st->other_ub++;
      continue;
    }
    int found = -1;
    for (int v = 0; v < nv && found < 0; v++)
      if (!strcmp(vs[v].name, e->variant)) found = v;
    if (found < 0) {
      st->unknown++;
      continue;
    }
    st->tuned++;
    keep[found] = true;
    /* the entry's shape, the other int args at their spec defaults */
    ug_case_env(p, &none, env);
    for (int s = 0; s < e->nshape; s++) {
      int sym = ug_pass_sym(p, e->shape_names[s]);
      if (sym >= 0) env[sym] = e->shape[s];
    }
    rc = keep_default(p, vs, nv, env, usable, keep, d);
  }
  free(env);
  return rc;
}
