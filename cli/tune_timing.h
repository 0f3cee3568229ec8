/* The tuner's clock: how `ubgen tune` times its candidates, for spec'd
 * variants (cmd_tune.c) and for composite ops' variants (tune_composite.c) alike.
 *
 * The caller has already run every candidate once (verification, which is
 * also the warm-up). Then reps rounds: each round runs every good candidate
 * once, starting one later than the round before, so drift in clocks or
 * memory state favours none; a measurement repeats the call for at least
 * MIN_SECONDS and takes the mean. After the first round a candidate slower
 * than PRUNE x the fastest is not timed again (it cannot win; its first
 * time stands for every round). Then a play-off: the few candidates within
 * 10% of the fastest run twice as many rounds again among themselves. The
 * median decides.
 *
 * The noise of a candidate is the spread of its own measurements: their
 * interquartile range over their median ((p75 - p25) / p50), over its main
 * rounds and, for a play-off candidate, over its play-off rounds too (the
 * larger). A difference between two candidates smaller than the larger of
 * their noises is not a difference the tuner can see. */
#ifndef CLI_TUNE_TIMING_H
#define CLI_TUNE_TIMING_H

#include <stdbool.h>

typedef struct {
  bool wrong;    /* in: not timed */
  bool pruned;   /* out: timed in the first round only */
  double median; /* out: seconds per call */
  double noise;  /* out: (p75 - p25) / p50 of its measurements; 0 when pruned */
} cli_timed;

/* run(ud, c) makes one call of candidate c. progress(ud, round) may be NULL.
 * 0 ok; -1 out of memory. */
int cli_time_candidates(cli_timed *cand, int n, int reps, void (*run)(void *ud, int c),
                       void (*progress)(void *ud, int round), void *ud);

/* The least seconds verification (one call each) and cli_time_candidates
 * can take for n candidates and reps rounds when no call is faster than
 * call_floor seconds: every candidate runs twice (verified, then measured
 * once), the fastest reps rounds. A floor, not a forecast: what a sweep
 * announces before it starts (cmd_tune.c). */
double cli_time_floor(int n, int reps, double call_floor);

/* (p75 - p25) / p50 of t[0, n), quantiles linearly interpolated; t is
 * sorted in place */
double cli_spread(double *t, int n);

/* the candidate to keep: the fastest that is not wrong, unless dflt (the
 * default's index, or -1) is within the noise of it, then dflt. *fastest
 * gets the fastest, *noise the noise the comparison had (the larger of the
 * two candidates'). -1 when every candidate is wrong. */
int cli_pick(const cli_timed *cand, int n, int dflt, int *fastest, double *noise);

/* seconds on a monotonic clock */
double cli_now(void);

#endif
