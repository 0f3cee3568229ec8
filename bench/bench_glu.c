/* SwiGLU and GEGLU (the gated activations of an MLP), forward and backward,
 * at Liger-Kernel's benchmark shape: LLaMA-3-8B's intermediate size I =
 * 14336, bsz 1, T = 1024..4096 tokens (Liger's sweep goes to 8192; 4096
 * keeps a backward call under 1 GiB here), bf16 and f32. Two providers,
 * interleaved repetition by repetition:
 *   ubgen          the library's automatic choice, all threads
 *   parallel_copy  OpenMP loops moving the same bytes on the same threads:
 *                    fwd  a, b read, c written: bench_copy2 over T I elements
 *                    bwd  dc, a, b read, da, db written: bench_copy2, then
 *                         bench_copy1, over T I elements each
 * in two regimes: warm (back-to-back calls) and cold (caches flushed before
 * every timed call, so both read from DRAM). The target is judged cold:
 * forward and backward >= 70% of the copy's bandwidth. (Their speed against
 * PyTorch eager is bench/python's: make bench-python.)
 * Tensors: a, b, dc uniform in [-4, 4); the outputs are checked once against
 * plain double-precision formulas (within 2% of the largest magnitude)
 * before timing.
 *   bench_glu [--out FILE] [--reps N] [--strict]
 * Writes Liger's JSON. Exit 0 after a complete run; with --strict, 1 when a
 * target is not met. */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { I = 14336, NT = 3 };
static const int64_t ts[NT] = {1024, 2048, 4096};

typedef struct {
  ubg_ctx *ctx;
  int kernel; /* 0 swiglu, 1 geglu */
  int dtype;
  int64_t rows;
  void *a, *b, *dc, *c, *da, *db;
} problem;

static void ubgen_fwd(void *arg) {
  problem *p = arg;
  ubg_status s = p->kernel ? ubg_geglu_fwd(p->ctx, p->dtype, p->rows, I, p->a, p->b, p->c)
                           : ubg_swiglu_fwd(p->ctx, p->dtype, p->rows, I, p->a, p->b, 1, 1, p->c);
  bench_must(p->ctx, s, "forward");
}

static void ubgen_bwd(void *arg) {
  problem *p = arg;
  ubg_status s = p->kernel ? ubg_geglu_bwd(p->ctx, p->dtype, p->rows, I, p->dc, p->a, p->b, p->da, p->db)
                           : ubg_swiglu_bwd(p->ctx, p->dtype, p->rows, I, p->dc, p->a, p->b, 1, 1, p->da, p->db);
  bench_must(p->ctx, s, "backward");
}

typedef struct {
  bench_copy_args two, one;
} copy_bwd_args;

static void copy_bwd(void *arg) {
  copy_bwd_args *c = arg;
  bench_copy2(&c->two);
  bench_copy1(&c->one);
}

/* the formulas in double on a sample of elements: c, da, db within 2% of the largest */
static void check(const problem *p) {
  const int64_t n = p->rows * I;
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < n; i += 997) {
    const double a = bench_load(p->a, i, p->dtype), b = bench_load(p->b, i, p->dtype), dc = bench_load(p->dc, i, p->dtype);
    double act, dact;
    if (p->kernel) {
      const double t = tanh(0.7978845608028654 * (a + 0.044715 * a * a * a));
      act = 0.5 * a * (1 + t);
      dact = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * a * a);
    } else {
      const double s = 1 / (1 + exp(-a));
      act = a * s;
      dact = s * (1 + a * (1 - s));
    }
    const double want[3] = {act * b, dc * b * dact, dc * act};
    const void *got[3] = {p->c, p->da, p->db};
    for (int k = 0; k < 3; k++) {
      worst = fmax(worst, fabs(bench_load(got[k], i, p->dtype) - want[k]));
      scale = fmax(scale, fabs(want[k]));
    }
  }
  if (worst > 0.02 * scale) {
    fprintf(stderr, "bench_glu: %s %s T=%lld: an output differs from the formula by %g (largest %g)\n",
            p->kernel ? "geglu" : "swiglu", p->dtype == UBG_F32 ? "f32" : "bf16", (long long)p->rows, worst, scale);
    exit(2);
  }
}

int main(int argc, char **argv) {
  const char *out = bench_out_path(argc, argv);
  int reps = bench_reps(argc, argv, 9);
  if (reps > 64) reps = 64;
  ubg_ctx *ctx = bench_ctx_open("bench_glu");
  const int threads = omp_get_num_procs();
  bench_json *json = bench_json_new();
  printf("SwiGLU and GEGLU, I = %d, %d threads, %s; medians of %d interleaved runs\n", I, threads, bench_cpu_name(),
         reps);
  int failed = 0, judged = 0;
  static const int dtypes[2] = {UBG_BF16, UBG_F32};
  for (int cold = 0; cold < 2; cold++) {
    printf("\n%s: %s\n", cold ? "cold" : "warm",
           cold ? "caches flushed before every timed call" : "back-to-back calls, data may stay in cache");
    printf("%-6s %-4s %-4s %5s %10s %10s %10s %10s %8s\n", "op", "mode", "type", "T", "ubgen ms", "copy ms",
           "ubgen GB/s", "copy GB/s", "vs copy");
    for (int kernel = 0; kernel < 2; kernel++)
      for (int di = 0; di < 2; di++)
        for (int mode = 0; mode < 2; mode++) {
          const int dt = dtypes[di];
          const size_t es = dt == UBG_F32 ? 4 : 2;
          bench_stats st_ubg[NT], st_copy[NT], frac[NT];
          double xs[NT];
          for (int ti = 0; ti < NT; ti++) {
            const int64_t rows = ts[ti], n = rows * I;
            const size_t bytes = (size_t)n * es;
            problem p = {ctx, kernel, dt, rows, bench_uniform(n, dt, 1), bench_uniform(n, dt, 2), bench_uniform(n, dt, 3),
                         bench_alloc(bytes), bench_alloc(bytes), bench_alloc(bytes)};
            if (!cold && !mode) {
              ubgen_fwd(&p);
              ubgen_bwd(&p);
              check(&p);
            }
            copy_bwd_args cb = {{p.dc, p.a, p.da, bytes, threads}, {p.b, NULL, p.db, bytes, threads}};
            bench_copy_args cf = {p.a, p.b, p.c, bytes, threads};
            bench_against_copy(mode ? ubgen_bwd : ubgen_fwd, &p, mode ? copy_bwd : bench_copy2, mode ? (void *)&cb : (void *)&cf,
                               reps, cold, &st_ubg[ti], &st_copy[ti], &frac[ti]);
            xs[ti] = (double)rows;
            const double moved = (double)bytes * (mode ? 5 : 3);
            printf("%-6s %-4s %-4s %5lld %10.3f %10.3f %10.1f %10.1f %7.0f%%  (%s)\n", kernel ? "geglu" : "swiglu",
                   mode ? "bwd" : "fwd", dt == UBG_F32 ? "f32" : "bf16", (long long)rows, 1e3 * st_ubg[ti].p50,
                   1e3 * st_copy[ti].p50, moved / st_ubg[ti].p50 * 1e-9, moved / st_copy[ti].p50 * 1e-9,
                   100 * frac[ti].p50, ubg_ctx_last_variant(ctx));
            if (cold) {
              judged++;
              failed += frac[ti].p50 < 0.70;
            }
            bench_stats_ms(&st_ubg[ti]), bench_stats_ms(&st_copy[ti]);
            free(p.a), free(p.b), free(p.dc), free(p.c), free(p.da), free(p.db);
          }
          char extra[160];
          snprintf(extra, sizeof extra, "{\"I\": %d, \"bsz\": 1, \"dtype\": \"%s\", \"threads\": %d, \"regime\": \"%s\"}",
                   I, dt == UBG_F32 ? "float32" : "bfloat16", threads, cold ? "cold" : "warm");
          const char *k = kernel ? "geglu" : "swiglu", *m = mode ? "backward" : "forward";
          bench_json_add_vs_copy(json, k, m, "T", "sequence length", xs, NT, st_ubg, st_copy, frac, extra);
        }
  }
  printf("\ntarget (cold, >= 70%% of the copy's bandwidth): %d of %d points met\n", judged - failed, judged);
  bench_json_finish(json, out, "bench_glu");
  ubg_ctx_destroy(ctx);
  return bench_flag(argc, argv, "--strict") && failed ? 1 : 0;
}
