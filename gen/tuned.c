#include "tuned.h"

#include <stdio.h>
#include <string.h>

#include "bind.h"

int ug_tuned_shape(const ug_pass *p, const int64_t *env, int64_t *shape) {
  const ug_kernel *k = p->kernel;
  int n = k->nshape < UG_TUNE_MAX_SHAPE ? k->nshape : UG_TUNE_MAX_SHAPE;
  for (int i = 0; i < n; i++) shape[i] = ug_tune_bucket(env[ug_pass_sym(p, k->shape[i])]);
  return n;
}

static void shape_text(const ug_pass *p, const int64_t *shape, int n, char *out, size_t nout) {
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    size_t l = strlen(out);
    snprintf(out + l, nout - l, "%s%s=%lld", i ? "," : "", p->kernel->shape[i], (long long)shape[i]);
  }
}

int ug_tuned_choice(const ug_tunedb *db, const ug_pass *p, int dtype, const ug_variant *vs, int nv, int64_t *env,
                    int64_t ub_bytes, int64_t usable, int *index, char *why, size_t nwhy, ug_diag *d) {
  int64_t shape[UG_TUNE_MAX_SHAPE];
  int n = ug_tuned_shape(p, env, shape);
  char st[256];
  shape_text(p, shape, n, st, sizeof st);
  const ug_tune_entry *e =
      db ? ug_tunedb_find(db, p->kernel->name, p->name, dtype, n, shape, ub_bytes) : NULL;
  if (!e) {
    snprintf(why, nwhy, "no tuning entry for bucket %s, ub_bytes %lld", st, (long long)ub_bytes);
    return 0;
  }
  for (int i = 0; i < nv; i++) {
    if (strcmp(vs[i].name, e->variant) != 0) continue;
    if (vs[i].footprint > usable) {
      snprintf(why, nwhy, "tuned %s for bucket %s needs %lld bytes of UB, over the %lld usable", e->variant, st,
               (long long)vs[i].footprint, (long long)usable);
      return 0;
    }
    int failed;
    int b = ug_bind(p, &vs[i].pt, env, &failed, d);
    if (b < 0) return -1;
    if (b == 1) {
      snprintf(why, nwhy, "tuned %s for bucket %s does not apply to this shape", e->variant, st);
      return 0;
    }
    *index = i;
    snprintf(why, nwhy, "tuned for bucket %s: %.1f us against the default %s's %.1f us (%lld candidates)", st,
             e->median_us, e->default_variant, e->default_median_us, (long long)e->candidates);
    return 1;
  }
  snprintf(why, nwhy, "the tuning entry for bucket %s names %s, which this spec does not have", st, e->variant);
  return 0;
}
