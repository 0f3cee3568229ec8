/* Variants: the points of a pass's axes (dtype x block sizes x tiled), their
 * stable names and their UB plans.
 *
 * Name: <kernel>_<pass>_<dtype>[_<tag><value>]..._<t|n>, axes in spec order,
 * for example rms_norm_fwd_bf16_d1024_m2_n. Names appear in the tuning DB and
 * the registry, so they never change for a given spec. */
#ifndef UG_VARIANT_H
#define UG_VARIANT_H

#include "point.h"


void ug_variant_name(const ug_pass *p, const ug_point *pt, char *out, size_t n);

/* Every point of the pass (one dtype, or all when dtype < 0) that satisfies
 * the variant-only constraints, planned, in a stable order: dtype, tiled,
 * then the axes. *out is malloc'd. */
int ug_enumerate(const ug_pass *p, int dtype, ug_variant **out, int *n, ug_diag *d);

/* The enumerated variant called `name`; -1 with a message when the pass has
 * none (the message says what the name should look like). */
int ug_find_variant(const ug_pass *p, const char *name, ug_variant *out, ug_diag *d);

/* Marks (keep[i] = true, never cleared) a sample of v[0..n), the variants
 * of one pass and dtype in enumeration order: every `every`th, plus the
 * first tiled one and the widest whole-row one, so that every row length
 * still has a variant of each kind that applies (a tiled one applies to any
 * length, a whole-row one up to its BLOCK_D; a spec without a tiled axis
 * has whole-row variants only). A reduced build (ubgen emit
 * --sample) and a reduced test run (TC_REDUCED) both take it. */
void ug_sample_mark(const ug_variant *v, int n, int every, bool *keep);

#endif
