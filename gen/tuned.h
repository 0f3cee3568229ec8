/* The tuned choice: the tuning DB's variant for a call, when the DB has an
 * entry for the call's shape bucket, that variant exists, fits the budget
 * and applies to the call; else the caller falls back to the default
 * strategy. One function, used by the runtime's dispatch and `ubgen plan`,
 * so both say the same. */
#ifndef UG_TUNED_H
#define UG_TUNED_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "spec.h"
#include "tunedb.h"
#include "variant.h"

/* The call's shape values (env bound to the args), bucketed, in the spec's
 * shape order; returns their number. */
int ug_tuned_shape(const ug_pass *p, const int64_t *env, int64_t *shape);

/* 1: *index is the DB's variant for this call; 0: none (why says which
 * step failed: no entry, unknown variant, over budget, does not apply);
 * -1: an expression failed (d). env is left bound to the returned variant. */
int ug_tuned_choice(const ug_tunedb *db, const ug_pass *p, int dtype, const ug_variant *vs, int nv, int64_t *env,
                    int64_t ub_bytes, int64_t usable, int *index, char *why, size_t nwhy, ug_diag *d);

/* the kernel named name, or NULL when there is none */
typedef const ug_kernel *(*ug_kernel_lookup)(const char *name, const void *arg);

/* Drops the entries of a known kernel whose shape names are not exactly
 * that kernel's (a DB written for another spec, or edited by hand): such
 * an entry would never serve its own shape. The number dropped (warn
 * describes the first), or -1 out of memory. */
int ug_tuned_drop_foreign(ug_tunedb *db, ug_kernel_lookup find, const void *arg, char *warn, size_t nwarn);

#endif
