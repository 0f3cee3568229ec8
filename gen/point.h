/* A point of a pass's axes (dtype x block sizes x tiled) and the variant it
 * makes once its UB buffers are placed: the types the UB planner
 * (ubplan.c) and the enumeration of variants (variant.c) share. */
#ifndef UG_POINT_H
#define UG_POINT_H

#include "spec.h"

typedef struct {
  int dtype;
  int64_t axis[UG_MAX_AXES];
  int tiled; /* 0 or 1; -1 when the pass has no tiled axis */
} ug_point;

typedef struct {
  int64_t offset; /* from the arena start, a multiple of 64 */
  int64_t count;  /* elements */
  int64_t bytes;  /* count * element size, before alignment */
} ug_placed;

typedef struct {
  const ug_pass *pass;
  ug_point pt;
  char name[160];
  int64_t footprint; /* sum of the buffers, each rounded up to 64 bytes */
  ug_placed ub[UG_MAX_BUFFERS];
} ug_variant;

/* Sets the variant slots of env (axes, tiled, dtype_bytes); other slots are
 * left as they are. */
void ug_point_env(const ug_pass *p, const ug_point *pt, int64_t *env);

#endif
