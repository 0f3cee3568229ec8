/* The default strategy (docs/design.md, after Liger-Kernel's
 * compute_default_tiling_strategy), used when no tuning entry applies:
 *
 *  1. want = next_pow2(the dimension the first axis tiles), at least the
 *     axis's smallest value.
 *  2. Non-tiled when the non-tiled variant with first axis == want fits the
 *     budget and applies to the shape.
 *  3. Otherwise tiled, with the largest first-axis value <= want that fits.
 *  4. Every further axis: the largest value <= its "default" expression
 *     among what is left, or the smallest when none is <= (or when the axis
 *     has no default).
 */
#ifndef UG_STRATEGY_H
#define UG_STRATEGY_H

#include "variant.h"

typedef struct {
  int chosen; /* index into the variants, or -1 when none fits */
  char why[768];
} ug_choice;

/* vs: the enumerated variants of one dtype. env: int args and has_* set;
 * used as scratch (variant slots, derived values) and left bound to the
 * choice. usable: the UB bytes a variant may use. */
int ug_default_strategy(const ug_pass *p, const ug_variant *vs, int nv, int64_t *env, int64_t usable, ug_choice *c,
                        ug_diag *d);

#endif
