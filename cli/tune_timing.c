#include "tune_timing.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

enum { PRUNE = 3, PLAYOFF = 4, PLAYOFF_ROUNDS = 2 };
static const double MIN_SECONDS = 0.004, CLOSE = 1.10;

double cli_now(void) {
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
  double t0 = cli_now(), t;
  do {
    run(ud, c);
    n++;
    t = cli_now() - t0;
  } while (t < MIN_SECONDS);
  return t / n;
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* quantile q of sorted t[0, n), linearly interpolated */
static double quantile(const double *t, int n, double q) {
  const double at = q * (n - 1);
  const int i = (int)at;
  return i + 1 < n ? t[i] + (at - i) * (t[i + 1] - t[i]) : t[n - 1];
}

double cli_spread(double *t, int n) {
  const double mid = median(t, n);
  return mid > 0 ? (quantile(t, n, 0.75) - quantile(t, n, 0.25)) / mid : 0;
}

/* The play-off: the candidates within CLOSE of the fastest (at most
 * PLAYOFF of them, the fastest first) run PLAYOFF_ROUNDS x reps more
 * rounds among themselves, and their medians are taken again over all
 * their rounds. Between close candidates a median of a few measurements
 * picks a slower one now and then (bench_tune measures how often); the few
 * close ones are where more rounds pay. */
static int playoff(cli_timed *cand, int n, int reps, void (*run)(void *, int), void *ud) {
  int idx[PLAYOFF], m = 0;
  for (int k = 0; k < PLAYOFF; k++) { /* the fastest PLAYOFF within CLOSE, in order */
    int next = -1;
    for (int c = 0; c < n; c++) {
      bool taken = false;
      for (int q = 0; q < m; q++) taken |= idx[q] == c;
      if (!cand[c].wrong && !taken && (next < 0 || cand[c].median < cand[next].median)) next = c;
    }
    if (next < 0 || (m > 0 && cand[next].median > CLOSE * cand[idx[0]].median)) break;
    idx[m++] = next;
  }
  if (m < 2) return 0;
  const int extra = PLAYOFF_ROUNDS * reps;
  double *times = calloc((size_t)m * (size_t)(reps + extra), sizeof *times); /* [m][reps + extra] */
  if (!times) return -1;
  for (int r = 0; r < extra; r++)
    for (int j = 0; j < m; j++) {
      int q = (j + r) % m;
      times[q * (reps + extra) + r] = measure(run, ud, idx[q]);
    }
  /* the main rounds' median stands for their reps values: the play-off adds
   * to the evidence rather than replacing it */
  for (int q = 0; q < m; q++) {
    double *t = times + q * (reps + extra);
    const double noise = cli_spread(t, extra);
    if (noise > cand[idx[q]].noise) cand[idx[q]].noise = noise;
    for (int r = extra; r < reps + extra; r++) t[r] = cand[idx[q]].median;
    cand[idx[q]].median = median(t, reps + extra);
  }
  free(times);
  return 0;
}

double cli_time_floor(int n, int reps, double call_floor) {
  const double measured = call_floor > MIN_SECONDS ? call_floor : MIN_SECONDS;
  return n <= 0 ? 0 : n * call_floor + (n + reps - 1) * measured;
}

int cli_pick(const cli_timed *cand, int n, int dflt, int *fastest, double *noise) {
  int best = -1;
  for (int c = 0; c < n; c++)
    if (!cand[c].wrong && (best < 0 || cand[c].median < cand[best].median)) best = c;
  *fastest = best;
  *noise = 0;
  if (best < 0 || dflt < 0 || dflt == best || cand[dflt].wrong) return best;
  *noise = cand[best].noise > cand[dflt].noise ? cand[best].noise : cand[dflt].noise;
  return cand[dflt].median / cand[best].median - 1 <= *noise ? dflt : best;
}

int cli_time_candidates(cli_timed *cand, int n, int reps, void (*run)(void *ud, int c),
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
  for (int c = 0; c < n; c++)
    if (!cand[c].wrong) {
      cand[c].noise = cand[c].pruned ? 0 : cli_spread(times + c * reps, reps);
      cand[c].median = median(times + c * reps, reps);
    }
  free(times);
  return playoff(cand, n, reps, run, ud);
}
