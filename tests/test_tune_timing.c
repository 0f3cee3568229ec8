/* The tuner's noise and its choice (cli/tune_timing.c), on given
 * times: a win inside the noise keeps the default, a clear win is taken,
 * a wrong candidate is never chosen; and, on the clock, the floor a sweep
 * announces. (The tuner end to end runs in test_cli's
 * tune tests.) */
#include <criterion/criterion.h>
#include <math.h>

#include "../cli/tune_timing.h"

Test(tune_timing, the_noise_is_the_interquartile_range_over_the_median) {
  double t[5] = {5, 1, 4, 2, 3}; /* p25 2, p50 3, p75 4 */
  cr_assert_float_eq(cli_spread(t, 5), 2.0 / 3.0, 1e-12);
  double same[4] = {7, 7, 7, 7};
  cr_assert_float_eq(cli_spread(same, 4), 0.0, 1e-12);
  double two[2] = {1, 3}; /* p25 1.5, p50 2, p75 2.5 */
  cr_assert_float_eq(cli_spread(two, 2), 0.5, 1e-12);
}

Test(tune_timing, a_win_inside_the_noise_keeps_the_default) {
  /* the fastest is 2% faster than the default, whose times spread 5% */
  cli_timed cand[3] = {{.median = 100e-6, .noise = 0.05}, {.median = 98e-6, .noise = 0.01}, {.median = 150e-6}};
  int fastest;
  double noise;
  cr_assert_eq(cli_pick(cand, 3, 0, &fastest, &noise), 0);
  cr_assert_eq(fastest, 1);
  cr_assert_float_eq(noise, 0.05, 1e-12);
  /* the same win with quiet measurements is a win */
  cand[0].noise = 0.005;
  cr_assert_eq(cli_pick(cand, 3, 0, &fastest, &noise), 1);
  cr_assert_float_eq(noise, 0.01, 1e-12);
}

Test(tune_timing, a_clear_win_is_taken_and_wrong_ones_never) {
  cli_timed cand[3] = {{.median = 300e-6, .noise = 0.2}, {.median = 50e-6, .wrong = true}, {.median = 100e-6, .noise = 0.2}};
  int fastest;
  double noise;
  cr_assert_eq(cli_pick(cand, 3, 0, &fastest, &noise), 2);
  cr_assert_eq(fastest, 2);
  /* no default (it is wrong, or the strategy found none): the fastest */
  cr_assert_eq(cli_pick(cand, 3, -1, &fastest, &noise), 2);
  cand[0].wrong = true;
  cr_assert_eq(cli_pick(cand, 3, 0, &fastest, &noise), 2);
  cand[2].wrong = true;
  cr_assert_eq(cli_pick(cand, 3, 0, &fastest, &noise), -1);
}

/* a call that spins for its candidate's seconds */
static void spin(void *ud, int c) {
  const double *secs = ud, t0 = cli_now();
  while (cli_now() - t0 < secs[c]) {
  }
}

/* the floor a sweep announces is one: verifying and timing candidates
 * never take less, however the pruning and the play-off go */
Test(tune_timing, verifying_and_timing_never_take_less_than_the_floor) {
  double secs[4] = {0.002, 0.0021, 0.009, 0.002}; /* one pruned, three close */
  cli_timed cand[4] = {{0}};
  const double t0 = cli_now();
  for (int c = 0; c < 4; c++) spin(secs, c); /* verification */
  cr_assert_eq(cli_time_candidates(cand, 4, 3, spin, NULL, secs), 0);
  const double took = cli_now() - t0, floor = cli_time_floor(4, 3, 0.002);
  cr_assert(took >= floor, "took %g s, under the floor %g s", took, floor);
  cr_assert(floor >= 4 * 0.002 + 6 * 0.002, "every candidate twice, the fastest every round: %g", floor);
  cr_assert_float_eq(cli_time_floor(0, 3, 1.0), 0.0, 1e-12);
}
