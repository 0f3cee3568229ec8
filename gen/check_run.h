/* One check of one variant on one case: random inputs, the kernel through
 * ubg_launch, the double-precision reference, the comparison. Used by
 * `ubgen check`; the Criterion suites have their own, wider loops. */
#ifndef UG_CHECK_RUN_H
#define UG_CHECK_RUN_H

#include <stdint.h>

#include "../runtime/include/ubgen.h"
#include "../tests/ref/ref.h"
#include "spec.h"

/* Values of a case's int args and has_* flags in env (nsyms slots). */
void ck_case_env(const ug_pass *p, const ug_case *cs, int64_t *env);

/* 0: every output within tolerance; 1: a mismatch (msg says where);
 * -1: the call failed (msg has the status and message). The variant used
 * is whatever the context is set to use (ubg_set_variant). */
int ck_run_case(ubg_ctx *ctx, const ug_pass *p, const ref_entry *ref, int dtype, const ug_case *cs, uint64_t seed,
                char *msg, size_t n);

#endif
