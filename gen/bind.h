/* Binding a variant to one call: the environment of expressions (variant
 * axes, int args, has_<tensor>, derived values) and the shape constraints.
 * Shared by the planner of `ubgen plan`, the default strategy and every
 * launch, so they can never disagree about what is applicable. */
#ifndef UG_BIND_H
#define UG_BIND_H

#include "variant.h"

/* env already holds the int args and has_* flags. Sets the variant slots and
 * evaluates the derived values, then the constraints that involve the shape.
 * Returns 0 when pt applies, 1 when a constraint fails (*failed = its index),
 * -1 when an expression cannot be evaluated (d says which and why). */
int ug_bind(const ug_pass *p, const ug_point *pt, int64_t *env, int *failed, ug_diag *d);

/* env := a check or tune case's int args (spec defaults where the case sets
 * none) and has_<tensor> flags */
void ug_case_env(const ug_pass *p, const ug_case *cs, int64_t *env);

/* "rule `tiled || BLOCK_D >= cols` (a non-tiled variant holds ...) fails with
 * tiled=0 BLOCK_D=1024 cols=4097" */
void ug_explain_rule(const ug_pass *p, const ug_rule *r, const int64_t *env, char *out, size_t n);

#endif
