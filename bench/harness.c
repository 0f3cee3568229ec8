#include "harness.h"

#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(const double *t, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)pos;
  int hi = lo + 1 < n ? lo + 1 : lo;
  return t[lo] + (t[hi] - t[lo]) * (pos - lo);
}

bench_stats bench_percentiles(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  bench_stats s = {quantile(t, n, 0.2), quantile(t, n, 0.5), quantile(t, n, 0.8)};
  return s;
}

void bench_interleaved(bench_fn *fns, void **args, int nfn, int reps, double min_seconds, double **times) {
  int inner[16];
  for (int f = 0; f < nfn; f++) {
    /* warm up (page faults, caches, OpenMP team) and size the inner loop */
    double t0 = bench_now();
    fns[f](args[f]);
    fns[f](args[f]);
    double one = (bench_now() - t0) / 2;
    inner[f] = one >= min_seconds ? 1 : (int)(min_seconds / (one > 1e-9 ? one : 1e-9)) + 1;
    if (inner[f] > 10000) inner[f] = 10000;
  }
  for (int r = 0; r < reps; r++) {
    for (int f = 0; f < nfn; f++) {
      double t0 = bench_now();
      for (int k = 0; k < inner[f]; k++) fns[f](args[f]);
      times[f][r] = (bench_now() - t0) / inner[f];
    }
  }
}

/* this CPU's last-level cache as sysfs shows it; sysconf answers the
 * host's whole L3 (384 MiB) on this virtual machine */
static size_t llc_bytes(void) {
  size_t best = 0;
  for (int idx = 0; idx < 8; idx++) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
    FILE *f = fopen(path, "r");
    if (!f) break;
    long kb = 0;
    char unit = 'K';
    if (fscanf(f, "%ld%c", &kb, &unit) >= 1) {
      size_t b = unit == 'M' ? (size_t)kb << 20 : (size_t)kb << 10;
      if (b > best) best = b;
    }
    fclose(f);
  }
  return best ? best : (size_t)32 << 20;
}

static void flush_caches(void) {
  static unsigned char *junk;
  static size_t size;
  if (!junk) {
    size = 4 * llc_bytes();
    junk = malloc(size);
    if (!junk) return;
  }
  int64_t n = (int64_t)(size / 64);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) junk[i * 64] += 1;
}

void bench_interleaved_cold(bench_fn *fns, void **args, int nfn, int reps, double **times) {
  for (int f = 0; f < nfn; f++) fns[f](args[f]); /* page faults, OpenMP team */
  for (int r = 0; r < reps; r++) {
    for (int f = 0; f < nfn; f++) {
      flush_caches();
      double t0 = bench_now();
      fns[f](args[f]);
      times[f][r] = bench_now() - t0;
    }
  }
}

void bench_copy1(void *arg) {
  bench_copy_args *c = arg;
  const uint64_t *src = c->a;
  uint64_t *dst = c->dst;
  int64_t n = (int64_t)(c->n / 8);
#pragma omp parallel for num_threads(c->nthreads) schedule(static)
  for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

static volatile uint64_t read_sink; /* keeps the folded reads from being elided */
void bench_read1(void *arg) {
  bench_copy_args *c = arg;
  const uint64_t *src = c->a;
  int64_t n = (int64_t)(c->n / 8);
  uint64_t acc = 0;
#pragma omp parallel for num_threads(c->nthreads) schedule(static) reduction(^ : acc)
  for (int64_t i = 0; i < n; i++) acc ^= src[i];
  read_sink = acc;
}

void bench_copy2(void *arg) {
  bench_copy_args *c = arg;
  const uint64_t *a = c->a, *b = c->b;
  uint64_t *dst = c->dst;
  int64_t n = (int64_t)(c->n / 8);
#pragma omp parallel for num_threads(c->nthreads) schedule(static)
  for (int64_t i = 0; i < n; i++) dst[i] = a[i] ^ b[i];
}

struct bench_json {
  json_t *arr;
};

bench_json *bench_json_new(void) {
  bench_json *j = malloc(sizeof *j);
  if (j) j->arr = json_array();
  return j;
}

const char *bench_cpu_name(void) {
  static char name[256];
  if (name[0]) return name;
  snprintf(name, sizeof name, "cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return name;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *colon = strchr(line, ':');
      if (colon) {
        snprintf(name, sizeof name, "%s", colon + 2);
        name[strcspn(name, "\n")] = '\0';
      }
      break;
    }
  }
  fclose(f);
  size_t len = strlen(name);
  snprintf(name + len, sizeof name - len, " (%d threads)", omp_get_max_threads());
  return name;
}

void bench_json_add(bench_json *j, const char *kernel, const char *provider, const char *mode, const char *metric,
                    const char *unit, const char *x_name, const char *x_label, const double *x, int n,
                    const bench_stats *y, const char *extra_config) {
  json_t *xs = json_array(), *y50 = json_array(), *y20 = json_array(), *y80 = json_array();
  for (int i = 0; i < n; i++) {
    json_array_append_new(xs, json_real(x[i]));
    json_array_append_new(y50, json_real(y[i].p50));
    json_array_append_new(y20, json_real(y[i].p20));
    json_array_append_new(y80, json_real(y[i].p80));
  }
  char stamp[64];
  time_t now = time(NULL);
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", gmtime(&now));
  json_array_append_new(
      j->arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:s, s:s, s:s}", "kernel_name",
                        kernel, "kernel_provider", provider, "kernel_operation_mode", mode, "metric_name", metric,
                        "metric_unit", unit, "gpu_name", bench_cpu_name(), "x_name", x_name, "x_label", x_label,
                        "x_values", xs, "y_values_50", y50, "y_values_20", y20, "y_values_80", y80,
                        "extra_benchmark_config_str", extra_config, "timestamp", stamp, "liger_version",
                        "ubgen-0.1.0"));
}

int bench_json_write(bench_json *j, const char *path) {
  if (!path) return 0;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (json_dump_file(j->arr, tmp, JSON_INDENT(2)) != 0) return -1;
  return rename(tmp, path);
}

void bench_json_free(bench_json *j) {
  if (!j) return;
  json_decref(j->arr);
  free(j);
}

const char *bench_out_path(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--out")) return argv[i + 1];
  return NULL;
}

int bench_reps(int argc, char **argv, int dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--reps")) return atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : dflt;
  return dflt;
}

bool bench_flag(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], flag)) return true;
  return false;
}

ubg_ctx *bench_ctx_open(const char *prog) {
  ubg_ctx *ctx;
  if (ubg_ctx_create(NULL, &ctx) != UBG_OK) {
    fprintf(stderr, "%s: %s\n", prog, ubg_ctx_error(NULL));
    exit(2);
  }
  return ctx;
}

void bench_stats_ms(bench_stats *s) { s->p20 *= 1e3, s->p50 *= 1e3, s->p80 *= 1e3; }

void bench_json_add_vs_copy(bench_json *j, const char *kernel, const char *mode, const char *x_name,
                            const char *x_label, const double *x, int n, const bench_stats *ubgen,
                            const bench_stats *copy, const bench_stats *fraction, const char *extra_config) {
  bench_json_add(j, kernel, "ubgen", mode, "speed", "ms", x_name, x_label, x, n, ubgen, extra_config);
  bench_json_add(j, kernel, "parallel_copy", mode, "speed", "ms", x_name, x_label, x, n, copy, extra_config);
  bench_json_add(j, kernel, "ubgen", mode, "fraction_of_copy_bandwidth", "ratio", x_name, x_label, x, n, fraction,
                 extra_config);
}

int bench_json_finish(bench_json *j, const char *out, const char *prog) {
  int rc = 0;
  if (bench_json_write(j, out) != 0) fprintf(stderr, "%s: cannot write %s\n", prog, out), rc = 2;
  else if (out) printf("wrote %s\n", out);
  bench_json_free(j);
  return rc;
}

void *bench_alloc(size_t n) {
  void *p = NULL;
  return posix_memalign(&p, 64, n ? n : 64) == 0 ? p : NULL;
}

void bench_must(ubg_ctx *ctx, ubg_status s, const char *what) {
  if (s == UBG_OK) return;
  fprintf(stderr, "%s failed: %s: %s\n", what, ubg_status_str(s), ubg_ctx_error(ctx));
  abort();
}

float bench_load(const void *p, int64_t i, int dtype) {
  if (dtype == UBG_F32) return ((const float *)p)[i];
  uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void *bench_uniform(int64_t n, int dtype, uint64_t seed) {
  void *p = bench_alloc((size_t)n * (dtype == UBG_F32 ? 4 : 2));
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    float f = (float)((int64_t)(seed >> 40) - (1 << 23)) / (float)(1 << 21);
    if (dtype == UBG_F32) {
      ((float *)p)[i] = f;
    } else {
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t *)p)[i] = (uint16_t)(u >> 16); /* truncation is fine for inputs */
    }
  }
  return p;
}

void bench_against_copy(bench_fn ubgen, void *ubgen_arg, bench_fn copy, void *copy_arg, int reps, int cold,
                        bench_stats *ubgen_s, bench_stats *copy_s, bench_stats *fraction) {
  bench_fn fns[2] = {ubgen, copy};
  void *args[2] = {ubgen_arg, copy_arg};
  double t0[64], t1[64], ratio[64], *times[2] = {t0, t1};
  if (reps > 64) reps = 64;
  if (cold) bench_interleaved_cold(fns, args, 2, reps, times);
  else bench_interleaved(fns, args, 2, reps, BENCH_WARM_SECONDS, times);
  for (int r = 0; r < reps; r++) ratio[r] = t1[r] / t0[r];
  *ubgen_s = bench_percentiles(t0, reps);
  *copy_s = bench_percentiles(t1, reps);
  *fraction = bench_percentiles(ratio, reps);
}
