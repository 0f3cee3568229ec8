#include "tune_timing.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

enum { PRUNE = 3 };
static const double MIN_SECONDS = 0.004;

double ug_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* one measurement: candidate c's call repeated for at least MIN_SECONDS */
static double measure(void (*run)(void *, int), void *ud, int c) {
  int n = 0;
  double t0 = ug_now(), t;
  do {
    run(ud, c);
    n++;
    t = ug_now() - t0;
  } while (t < MIN_SECONDS);
  return t / n;
}

int ug_time_candidates(ug_timed *cand, int n, int reps, void (*run)(void *ud, int c),
                       void (*progress)(void *ud, int round), void *ud) {
  double *times = calloc((size_t)n * (size_t)reps + 1, sizeof *times); /* [n][reps] */
  if (!times) return -1;
  for (int r = 0; r < reps; r++) {
    if (r == 1) {
      double fastest = INFINITY;
      for (int c = 0; c < n; c++)
        if (!cand[c].wrong && times[c * reps] < fastest) fastest = times[c * reps];
      for (int c = 0; c < n; c++)
        if (!cand[c].wrong && times[c * reps] > PRUNE * fastest) {
          cand[c].pruned = true;
          for (int q = 1; q < reps; q++) times[c * reps + q] = times[c * reps];
        }
    }
    if (progress) progress(ud, r);
    for (int j = 0; j < n; j++) {
      int c = (j + r) % n;
      if (cand[c].wrong || (r > 0 && cand[c].pruned)) continue;
      times[c * reps + r] = measure(run, ud, c);
    }
  }
  for (int c = 0; c < n; c++) {
    if (cand[c].wrong) continue;
    double *t = times + c * reps;
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    cand[c].median = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  }
  free(times);
  return 0;
}
