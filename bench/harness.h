/* Benchmark plumbing: timing with warm-up and interleaved repetitions,
 * percentiles, the parallel-copy baseline, and Liger-Kernel's benchmark JSON
 * (kernel_name, kernel_provider, metric_name, metric_unit, x_name, x_values,
 * y_values_50/20/80, extra_benchmark_config_str, ...). */
#ifndef UBG_BENCH_HARNESS_H
#define UBG_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ubgen.h"

double bench_now(void); /* seconds, monotonic */

/* The percentiles of a set of times (sorted in place). */
typedef struct {
  double p20, p50, p80;
} bench_stats;
bench_stats bench_percentiles(double *t, int n);

/* Runs each of nfn functions reps times, interleaved (f0 f1 f2 f0 f1 f2 ...)
 * after warm-up, so drift in clock or memory state does not favour one of
 * them; times[f][r] in seconds. Each repetition lasts at least min_seconds
 * (the function is repeated inside it and the mean taken). */
typedef void (*bench_fn)(void *arg);
#define BENCH_WARM_SECONDS 0.05
void bench_interleaved(bench_fn *fns, void **args, int nfn, int reps, double min_seconds, double **times);
/* The same, but every timed call starts with cold caches: before each call
 * (untimed) both cores stream through a buffer of four times the last-level
 * cache, so the call's data comes from DRAM as a fresh tensor would. */
void bench_interleaved_cold(bench_fn *fns, void **args, int nfn, int reps, double **times);

/* ubgen against a copy of the bytes it moves, interleaved, warm (each
 * repetition BENCH_WARM_SECONDS at least, so the clock's resolution does
 * not count) or cold: their times in seconds and ubgen's fraction
 * of the copy's bandwidth (the copy's time over ubgen's), repetition by
 * repetition; reps at most 64. */
void bench_against_copy(bench_fn ubgen, void *ubgen_arg, bench_fn copy, void *copy_arg, int reps, int cold,
                        bench_stats *ubgen_s, bench_stats *copy_s, bench_stats *fraction);

/* The same bytes a kernel moves, moved by a plain OpenMP loop:
 * dst[i] = src[i] (1 read stream, 1 write) or dst[i] = a[i] ^ b[i]
 * (2 reads, 1 write), over n bytes per stream, on nthreads threads. */
typedef struct {
  const void *a, *b;
  void *dst;
  size_t n;
  int nthreads;
} bench_copy_args;
void bench_copy1(void *arg);
void bench_copy2(void *arg);
/* n bytes of a read and folded (no write): what reading alone attains, the
 * ceiling of a kernel that mostly reads (dst unused) */
void bench_read1(void *arg);

/* Liger-Kernel benchmark data (benchmark/scripts/utils.py BenchmarkData) */
typedef struct bench_json bench_json;
bench_json *bench_json_new(void);
void bench_json_add(bench_json *j, const char *kernel, const char *provider, const char *mode, const char *metric,
                    const char *unit, const char *x_name, const char *x_label, const double *x, int n,
                    const bench_stats *y, const char *extra_config);
int bench_json_write(bench_json *j, const char *path); /* 0 ok */
void bench_json_free(bench_json *j);

const char *bench_cpu_name(void);
/* a failed library call is a broken benchmark: say which and why, then stop */
void bench_must(ubg_ctx *ctx, ubg_status s, const char *what);
/* n bytes aligned to 64, as a framework's tensors are (PyTorch aligns its
 * allocations far more); free() releases it. A 16-byte offset, what malloc
 * gives large blocks, costs the AttnRes forward time in split loads. */
void *bench_alloc(size_t n);
/* n elements of dtype (UBG_F32 or UBG_BF16) uniform in [-4, 4), from seed,
 * in a bench_alloc block; and element i of such a tensor as float */
void *bench_uniform(int64_t n, int dtype, uint64_t seed);
float bench_load(const void *p, int64_t i, int dtype);
/* --out FILE from argv, or NULL */
const char *bench_out_path(int argc, char **argv);
int bench_reps(int argc, char **argv, int dflt); /* --reps N */
bool bench_flag(int argc, char **argv, const char *flag); /* --strict, --quick */
/* a context with the library's defaults, or the reason on stderr and exit 2 */
ubg_ctx *bench_ctx_open(const char *prog);
/* p20, p50, p80 from seconds to milliseconds, for the JSON */
void bench_stats_ms(bench_stats *s);
/* ubgen against the copy at n points: the two speeds (ms) and ubgen's
 * fraction of the copy's bandwidth, three series of one kernel and mode */
void bench_json_add_vs_copy(bench_json *j, const char *kernel, const char *mode, const char *x_name,
                            const char *x_label, const double *x, int n, const bench_stats *ubgen,
                            const bench_stats *copy, const bench_stats *fraction, const char *extra_config);
/* writes the JSON to out (NULL: nowhere) and frees it; 0, or 2 after
 * saying on stderr that out cannot be written */
int bench_json_finish(bench_json *j, const char *out, const char *prog);

#endif
