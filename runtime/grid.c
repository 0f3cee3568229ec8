/* The grid: programs 0..nprog-1 of one stage on the OpenMP workers. Worker t
 * runs programs t, t + nthreads, ... with arena t; with nprog <= nthreads
 * (the usual case) each worker runs one program.
 *
 * fork: GNU libgomp's thread pool does not survive it. A child of a process
 * that has run a parallel region would wait forever in its first one, so
 * such a child runs every program on its calling thread. The bits are the
 * same (programs do not depend on which worker runs them), only slower;
 * docs/architecture.md says so. The routines' own parallel loops and the
 * libraries they call ask rt_omp_threads the same. */
#include <omp.h>
#include <stdatomic.h>
#include <unistd.h>

#include "internal.h"

static _Atomic pid_t omp_process; /* the process whose libgomp runs our parallel regions; 0 before the first */

/* true when this process may start a parallel region */
static bool omp_usable(void) {
  pid_t me = getpid(), owner = 0;
  if (atomic_compare_exchange_strong(&omp_process, &owner, me)) return true; /* the first region: ours */
  return owner == me;
}

int rt_omp_threads(int threads) { return threads > 1 && omp_usable() ? threads : 1; }

void rt_grid_run(ubg_kernel_fn fn, const void *slots, int stage, int64_t nprog, rt_block **arenas, int nthreads) {
  if (nthreads <= 1 || nprog <= 1 || !omp_usable()) {
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
