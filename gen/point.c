#include "point.h"

void ug_point_env(const ug_pass *p, const ug_point *pt, int64_t *env) {
  for (int i = 0; i < p->naxes; i++) env[p->sym_of_axis[i]] = pt->axis[i];
  if (p->sym_tiled >= 0) env[p->sym_tiled] = pt->tiled > 0;
  env[p->sym_dtype_bytes] = ug_dtype_bytes(pt->dtype);
}
