/* The UB model (docs/design.md "The UB model"): buffer layout of a variant at 64-byte
 * alignment, its exact footprint, and whether it fits a budget. */
#ifndef UG_UBPLAN_H
#define UG_UBPLAN_H

#include "point.h"

enum { UG_UB_ALIGN = 64 };
#define UG_DEFAULT_UB_BYTES 196608
#define UG_DEFAULT_MARGIN 0.90
#define UG_MIN_UB_BYTES 1024
#define UG_MAX_UB_BYTES ((int64_t)1 << 30)

typedef struct {
  int64_t ub_bytes; /* per program */
  double margin;    /* 0: the spec's own margin, else 0.90 */
} ug_budget;

/* Lays out the UB buffers of pt in declaration order; fills v->ub and
 * v->footprint. -1 when a count cannot be evaluated or overflows. */
int ug_plan(const ug_pass *p, const ug_point *pt, ug_variant *v, ug_diag *d);

double ug_budget_margin(const ug_budget *b, const ug_kernel *k);
/* floor(ub_bytes * margin) */
int64_t ug_budget_usable(const ug_budget *b, const ug_kernel *k);
bool ug_fits(const ug_variant *v, const ug_budget *b);

/* Parses a UB size: bytes, or with a KiB/MiB/KB/MB/K/M suffix, or "l1"/"l2"
 * (this CPU's data cache sizes). -1 with a message in err otherwise. */
int ug_parse_size(const char *s, int64_t *out, char *err, size_t errlen);

/* The budget from the environment, as the library and the command line both
 * read it: UBGEN_UB_BYTES (a size as above), else ASCEND_UB_CAPACITY_BITS
 * (bits, honoured as Liger-Kernel's UB manager does: a positive integer,
 * anything else ignored, *ignored set), else 196608. -1 with err set when
 * UBGEN_UB_BYTES is bad or out of [UG_MIN_UB_BYTES, UG_MAX_UB_BYTES]. */
int ug_ub_from_env(int64_t *out, bool *ignored, char *err, size_t errlen);
/* -1 with err when ub is outside [UG_MIN_UB_BYTES, UG_MAX_UB_BYTES] */
int ug_check_ub(int64_t ub, const char *what, char *err, size_t errlen);

#endif
