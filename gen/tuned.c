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
      db ? ug_tunedb_find(db, p->kernel->name, p->name, dtype, n, (const char *const *)p->kernel->shape, shape, ub_bytes)
         : NULL;
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

typedef struct {
  ug_kernel_lookup find;
  const void *arg;
  int dropped;
  char *warn;
  size_t nwarn;
} foreign;

/* an entry whose kernel is known must name that kernel's shape values */
static bool names_match(const ug_tune_entry *e, void *arg) {
  foreign *f = arg;
  const ug_kernel *k = f->find(e->kernel, f->arg);
  if (!k) return true;
  bool ok = e->nshape == (k->nshape < UG_TUNE_MAX_SHAPE ? k->nshape : UG_TUNE_MAX_SHAPE);
  for (int i = 0; ok && i < e->nshape; i++) {
    bool found = false;
    for (int j = 0; j < k->nshape && !found; j++) found = !strncmp(e->shape_names[i], k->shape[j], sizeof e->shape_names[i]);
    ok = found;
  }
  if (ok) return true;
  if (f->dropped++ == 0) {
    char have[300] = "", want[300] = "";
    for (int i = 0; i < e->nshape; i++) {
      size_t l = strlen(have);
      snprintf(have + l, sizeof have - l, "%s%.*s", i ? ", " : "", (int)sizeof e->shape_names[i], e->shape_names[i]);
    }
    for (int j = 0; j < k->nshape; j++) {
      size_t l = strlen(want);
      snprintf(want + l, sizeof want - l, "%s%s", j ? ", " : "", k->shape[j]);
    }
    snprintf(f->warn, f->nwarn, "an entry of %.64s.%.64s has shape {%s}, not the kernel's {%s}", e->kernel, e->pass,
             have, want);
  }
  return false;
}

int ug_tuned_drop_foreign(ug_tunedb *db, ug_kernel_lookup find, const void *arg, char *warn, size_t nwarn) {
  foreign f = {find, arg, 0, warn, nwarn};
  if (nwarn) warn[0] = '\0';
  return ug_tunedb_keep_if(db, names_match, &f);
}
