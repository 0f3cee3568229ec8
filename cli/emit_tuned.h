/* ubgen emit --tuned DB: which variants a lean build keeps (issue 6).
 *
 * For one pass and dtype, keep[i] is set for
 *   - each DB entry's tuned variant (entries of this pass and dtype, tuned
 *     at the emit's UB budget: the runtime follows no other), and
 *   - the default strategy's choice at each entry's shape (the fallback of a
 *     call in the bucket that the tuned variant does not apply to) and at
 *     each of the spec's "tune" shapes (the default shapes).
 * A call at any other shape whose default variant was not kept is compiled
 * by the JIT on first use (backend auto), or refused (backend aot). */
#ifndef CLI_EMIT_TUNED_H
#define CLI_EMIT_TUNED_H

#include <stdbool.h>

#include "../gen/tunedb.h"
#include "../gen/ubplan.h"
#include "../gen/variant.h"

typedef struct {
  int tuned;     /* entries of this pass and dtype used */
  int other_ub;  /* entries of this pass and dtype tuned at another UB budget (not used) */
  int unknown;   /* entries naming a variant the spec does not have (not used) */
} cli_tuned_stats;

/* vs: the pass's enumerated variants of dtype; keep: nv flags, set (never
 * cleared) for the variants to emit. 0 ok; -1 an expression failed (d). */
int cli_tuned_keep(const ug_pass *p, int dtype, const ug_variant *vs, int nv, const ug_tunedb *db,
                  const ug_budget *budget, bool *keep, cli_tuned_stats *st, ug_diag *d);

#endif
