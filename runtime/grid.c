/* The grid: programs 0..nprog-1 of one stage on the OpenMP workers. Worker t
 * runs programs t, t + nthreads, ... with arena t; with nprog <= nthreads
 * (the usual case) each worker runs one program. */
#include <omp.h>

#include "internal.h"

void rt_grid_run(ubg_kernel_fn fn, const void *slots, int stage, int64_t nprog, rt_block **arenas, int nthreads) {
  if (nthreads <= 1 || nprog <= 1) {
    for (int64_t p = 0; p < nprog; p++) fn(slots, stage, p, nprog, arenas[0]->p);
    return;
  }
#pragma omp parallel num_threads(nthreads)
  {
    /* OpenMP may give fewer threads than asked (nested regions): the
     * programs are then spread over the team it gave */
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    for (int64_t p = t; p < nprog; p += nt) fn(slots, stage, p, nprog, arenas[t]->p);
  }
}
