/* The tuner's clock: how `ubgen tune` times its candidates, for spec'd
 * variants (cmd_tune.c) and for ubg_flce's chunk sizes (tune_flce.c) alike.
 *
 * The caller has already run every candidate once (verification, which is
 * also the warm-up). Then reps rounds: each round runs every good candidate
 * once, starting one later than the round before, so drift in clocks or
 * memory state favours none; a measurement repeats the call for at least
 * MIN_SECONDS and takes the mean. After the first round a candidate slower
 * than PRUNE x the fastest is not timed again (it cannot win; its first
 * time stands for every round). Then a play-off: the few candidates within
 * 10% of the fastest run twice as many rounds again among themselves. The
 * median decides. */
#ifndef CLI_TUNE_TIMING_H
#define CLI_TUNE_TIMING_H

#include <stdbool.h>

typedef struct {
  bool wrong;    /* in: not timed */
  bool pruned;   /* out: timed in the first round only */
  double median; /* out: seconds per call */
} cli_timed;

/* run(ud, c) makes one call of candidate c. progress(ud, round) may be NULL.
 * 0 ok; -1 out of memory. */
int cli_time_candidates(cli_timed *cand, int n, int reps, void (*run)(void *ud, int c),
                       void (*progress)(void *ud, int round), void *ud);

/* seconds on a monotonic clock */
double cli_now(void);

#endif
