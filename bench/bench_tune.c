/* How good is `ubgen tune`'s choice? (issue 6's targets)
 *
 *   1. `ubgen tune TARGET --json` as make run does it (default rounds);
 *   2. the same sweep again with many more rounds (--recheck-reps, default
 *      11): the re-measurement. Every candidate is timed again; those over
 *      3x the fastest after the first round keep that one time (they cannot
 *      be the best, nor within 5% of it).
 * For each tuned (pass, dtype, shape): the re-measured median of the first
 * run's choice over the best re-measured median (target <= 1.05), and the
 * re-measured speed-up of the tuned over the default strategy's choice,
 * summarised per kernel (geometric mean and range). Liger's JSON with --out.
 *
 *   bench_tune [--target all|KERNEL.PASS] [--recheck-reps N] [--out FILE]
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* build/bench/bench_tune -> build/bin/ubgen */
static void ubgen_path(char *out, size_t n) { /* n: PATH_MAX + 16 */
  char exe[PATH_MAX - 16];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) {
    snprintf(out, n, "build/bin/ubgen");
    return;
  }
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  snprintf(out, n, "%s/../bin/ubgen", exe);
}

/* runs one tune sweep and returns its --json array */
static json_t *tune(const char *ubgen, const char *target, int reps, const char *dir, const char *name) {
  char cmd[2 * PATH_MAX + 256], reps_arg[32] = "";
  if (reps) snprintf(reps_arg, sizeof reps_arg, "--reps %d", reps);
  snprintf(cmd, sizeof cmd, "'%s' tune %s %s --db '%s/%s.json' --json > '%s/%s.out' 2> '%s/%s.log'", ubgen, target,
           reps_arg, dir, name, dir, name, dir, name);
  fprintf(stderr, "bench_tune: %s\n", cmd);
  double t0 = bench_now();
  int st = system(cmd);
  fprintf(stderr, "bench_tune: %.0f s\n", bench_now() - t0);
  if (st != 0) {
    fprintf(stderr, "bench_tune: the sweep failed (status %d); see %s/%s.log\n", st, dir, name);
    exit(1);
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s.out", dir, name);
  json_error_t e;
  json_t *j = json_load_file(path, 0, &e);
  if (!json_is_array(j)) {
    fprintf(stderr, "bench_tune: %s: %s\n", path, e.text);
    exit(1);
  }
  return j;
}

static const char *str(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static bool same_key(const json_t *a, const json_t *b) {
  return !strcmp(str(a, "kernel"), str(b, "kernel")) && !strcmp(str(a, "pass"), str(b, "pass")) &&
         !strcmp(str(a, "dtype"), str(b, "dtype")) && !strcmp(str(a, "shape"), str(b, "shape"));
}

/* the median of variant in a result's "variants" (NAN if wrong or absent), and the best */
static double median_of(const json_t *res, const char *variant, double *best) {
  size_t i;
  json_t *v;
  double m = NAN;
  *best = INFINITY;
  json_array_foreach(json_object_get(res, "variants"), i, v) {
    json_t *t = json_object_get(v, "median_us");
    if (!json_is_number(t)) continue;
    double x = json_number_value(t);
    if (x < *best) *best = x;
    if (!strcmp(str(v, "variant"), variant)) m = x;
  }
  return m;
}

int main(int argc, char **argv) {
  const char *target = "all", *out = bench_out_path(argc, argv);
  int recheck = 11;
  for (int i = 1; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--target")) target = argv[++i];
    else if (!strcmp(argv[i], "--recheck-reps")) recheck = atoi(argv[++i]);
  }
  if (recheck < 3) {
    fprintf(stderr, "bench_tune: --recheck-reps must be at least 3\n");
    return 2;
  }
  char ubgen[PATH_MAX + 16], dir[] = "/tmp/bench_tune_XXXXXX";
  ubgen_path(ubgen, sizeof ubgen);
  if (!mkdtemp(dir)) {
    perror("bench_tune: mkdtemp");
    return 2;
  }
  json_t *first = tune(ubgen, target, 0, dir, "first");
  json_t *second = tune(ubgen, target, recheck, dir, "recheck");

  printf("%-14s %-5s %-38s %-42s %8s %8s\n", "pass", "dtype", "shape", "tuned (first run)", "/best", "speedup");
  size_t i, j;
  json_t *a, *b;
  int n = 0, within = 0;
  double worst = 1, ratios[512], xs[512];
  /* per kernel: sum of log speed-ups, count, range */
  struct {
    char kernel[32];
    double logsum, lo, hi;
    int n;
  } per[16];
  int nk = 0;
  json_array_foreach(first, i, a) {
    json_t *match = NULL;
    json_array_foreach(second, j, b) if (same_key(a, b)) match = b;
    if (!match || n == 512) continue;
    double best, t = median_of(match, str(a, "variant"), &best);
    double ratio = t / best;
    double dflt = json_number_value(json_object_get(match, "default_median_us"));
    double speedup = dflt / json_number_value(json_object_get(match, "median_us"));
    char pass[64];
    snprintf(pass, sizeof pass, "%s.%s", str(a, "kernel"), str(a, "pass"));
    printf("%-14s %-5s %-38s %-42s %8.3f %7.2fx%s\n", pass, str(a, "dtype"), str(a, "shape"), str(a, "variant"), ratio,
           speedup, ratio <= 1.05 ? "" : "  over 5%");
    ratios[n] = ratio;
    xs[n] = n;
    n++;
    within += ratio <= 1.05;
    if (ratio > worst || isnan(ratio)) worst = ratio;
    int k = 0;
    while (k < nk && strcmp(per[k].kernel, str(a, "kernel"))) k++;
    if (k == nk && nk < 16) {
      snprintf(per[nk].kernel, sizeof per[nk].kernel, "%s", str(a, "kernel"));
      per[nk].logsum = 0, per[nk].n = 0, per[nk].lo = INFINITY, per[nk].hi = 0;
      nk++;
    }
    if (k < nk && speedup > 0) {
      per[k].logsum += log(speedup), per[k].n++;
      if (speedup < per[k].lo) per[k].lo = speedup;
      if (speedup > per[k].hi) per[k].hi = speedup;
    }
  }
  printf("\ntuned choice within 5%% of the best re-measured (%d rounds): %d of %d; worst %.3f\n", recheck, within, n,
         worst);
  printf("speed-up of the tuned over the default strategy's choice, re-measured:\n");
  for (int k = 0; k < nk; k++)
    printf("  %-10s geometric mean %.2fx over %d entries (%.2fx to %.2fx)\n", per[k].kernel,
           exp(per[k].logsum / per[k].n), per[k].n, per[k].lo, per[k].hi);
  if (out) {
    bench_json *bj = bench_json_new();
    bench_stats *y = calloc((size_t)n + 1, sizeof *y);
    for (int k = 0; k < n; k++) y[k].p20 = y[k].p50 = y[k].p80 = ratios[k];
    char extra[96];
    snprintf(extra, sizeof extra, "{\"target\": \"%s\", \"recheck_reps\": %d}", target, recheck);
    bench_json_add(bj, "tune", "ubgen", "full", "tuned_over_best_remeasured", "ratio", "entry",
                   "tuned (pass, dtype, shape), in sweep order", xs, n, y, extra);
    if (bench_json_write(bj, out)) fprintf(stderr, "bench_tune: cannot write %s\n", out);
    bench_json_free(bj);
    free(y);
  }
  json_decref(first);
  json_decref(second);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_tune: could not remove %s\n", dir);
  return 0;
}
