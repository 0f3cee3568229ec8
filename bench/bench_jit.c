/* The runtime JIT, measured through the public API:
 *   latency  the first call of a variant on a fresh context, minus a
 *            steady call of the same (rendering, compiling, relocating or
 *            loading): tcc; gcc with an empty cache; gcc with a warm cache
 *   run time RMSNorm fwd and bwd, bf16, 2048 x 4096, 2 threads: the code
 *            tcc compiled against the code gcc compiled, same variant
 * Liger's JSON; the targets: tcc compile <= 1 ms median, warm gcc
 * load <= 1 ms median, tcc forward within 4x of gcc.
 *   bench_jit [--out FILE] [--reps N] [--strict] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "prelude.h"
#include "ubgen.h"

static ubg_ctx *ctx_for(ubg_backend backend) {
  ubg_config cfg = {0};
  cfg.backend = backend;
  ubg_ctx *ctx;
  if (ubg_ctx_create(&cfg, &ctx) != UBG_OK) {
    fprintf(stderr, "bench_jit: %s\n", ubg_ctx_error(NULL));
    exit(2);
  }
  return ctx;
}

/* seconds of the first call beyond a steady one: fwd, cols small enough
 * for every variant of the list */
static double first_call(ubg_backend backend, const char *variant, int64_t cols) {
  static uint16_t x[2 * 16384], y[2 * 16384];
  float rstd[2];
  ubg_ctx *ctx = ctx_for(backend);
  if (ubg_set_variant(ctx, "rms_norm", "fwd", variant) != UBG_OK) {
    fprintf(stderr, "bench_jit: %s\n", ubg_ctx_error(ctx));
    exit(2);
  }
  double t0 = bench_now();
  if (ubg_rms_norm_fwd(ctx, UBG_BF16, 2, cols, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd) != UBG_OK) {
    fprintf(stderr, "bench_jit: %s\n", ubg_ctx_error(ctx));
    exit(2);
  }
  double first = bench_now() - t0;
  t0 = bench_now();
  ubg_rms_norm_fwd(ctx, UBG_BF16, 2, cols, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd);
  double steady = bench_now() - t0;
  ubg_ctx_destroy(ctx);
  return first - steady;
}

typedef struct {
  ubg_ctx *ctx;
  int bwd;
  void *x, *w, *y, *dy, *dw;
  float *rstd;
} run_args;

static void run_one(void *arg) {
  run_args *a = arg;
  if (a->bwd)
    ubg_rms_norm_bwd(a->ctx, UBG_BF16, 2048, 4096, a->dy, a->x, a->w, a->rstd, 0, UBG_CAST_LLAMA, a->y, a->dw);
  else
    ubg_rms_norm_fwd(a->ctx, UBG_BF16, 2048, 4096, a->x, a->w, 1e-6f, 0, UBG_CAST_LLAMA, a->y, a->rstd);
}

int main(int argc, char **argv) {
  const char *out = bench_out_path(argc, argv);
  int reps = bench_reps(argc, argv, 9);
  const bool strict = bench_flag(argc, argv, "--strict");
  char cache[] = "/tmp/ubgen_bench_cache_XXXXXX";
  if (!mkdtemp(cache)) return 2;
  setenv("UBGEN_CACHE_DIR", cache, 1);
  bench_json *json = bench_json_new();
  int failed = 0;

  /* latency: a spread of variants, small to large, whole-row and tiled */
  static const char *variants[] = {"rms_norm_fwd_bf16_d16_m64_n",  "rms_norm_fwd_bf16_d256_m8_n",
                                   "rms_norm_fwd_bf16_d4096_m1_n", "rms_norm_fwd_bf16_d16384_m1_n",
                                   "rms_norm_fwd_bf16_d64_m1_t",   "rms_norm_fwd_bf16_d1024_m1_t",
                                   "rms_norm_fwd_bf16_d16384_m1_t"};
  static const int64_t cols[] = {16, 256, 4096, 16384, 100, 3000, 16384};
  enum { NV = 7 };
  double tcc[NV * 16], gcc_cold[NV], gcc_warm[NV * 16];
  int ntcc = 0, nwarm = 0;
  for (int i = 0; i < NV; i++) {
    for (int r = 0; r < reps; r++) tcc[ntcc++] = first_call(UBG_BACKEND_TCC, variants[i], cols[i]);
    gcc_cold[i] = first_call(UBG_BACKEND_GCC, variants[i], cols[i]);
    for (int r = 0; r < reps; r++) gcc_warm[nwarm++] = first_call(UBG_BACKEND_GCC, variants[i], cols[i]);
  }
  bench_stats st_tcc = bench_percentiles(tcc, ntcc), st_cold = bench_percentiles(gcc_cold, NV),
              st_warm = bench_percentiles(gcc_warm, nwarm);
  printf("JIT latency per variant (%d variants; first call minus a steady call), median [p20, p80]:\n", NV);
  printf("  tcc compile        %8.3f ms [%.3f, %.3f]\n", 1e3 * st_tcc.p50, 1e3 * st_tcc.p20, 1e3 * st_tcc.p80);
  printf("  gcc, cold cache    %8.3f ms [%.3f, %.3f]\n", 1e3 * st_cold.p50, 1e3 * st_cold.p20, 1e3 * st_cold.p80);
  printf("  gcc, warm cache    %8.3f ms [%.3f, %.3f]\n", 1e3 * st_warm.p50, 1e3 * st_warm.p20, 1e3 * st_warm.p80);
  bool ok = st_tcc.p50 <= 1e-3 && st_warm.p50 <= 1e-3;
  failed += !ok;
  printf("  target (tcc <= 1 ms, warm gcc load <= 1 ms): %s\n", ok ? "met" : "NOT MET");
  bench_stats lat[3] = {st_tcc, st_cold, st_warm};
  for (int k = 0; k < 3; k++) lat[k].p20 *= 1e3, lat[k].p50 *= 1e3, lat[k].p80 *= 1e3;
  double xs[1] = {0};
  bench_json_add(json, "jit", "tcc", "compile", "latency", "ms", "variant", "first call", xs, 1, &lat[0],
                 "{\"kernel\": \"rms_norm.fwd\", \"dtype\": \"bfloat16\"}");
  bench_json_add(json, "jit", "gcc_cold", "compile", "latency", "ms", "variant", "first call", xs, 1, &lat[1],
                 "{\"kernel\": \"rms_norm.fwd\", \"dtype\": \"bfloat16\"}");
  bench_json_add(json, "jit", "gcc_warm", "load", "latency", "ms", "variant", "first call", xs, 1, &lat[2],
                 "{\"kernel\": \"rms_norm.fwd\", \"dtype\": \"bfloat16\"}");

  /* run time: tcc's code against gcc's, the variant the default strategy takes */
  const int64_t n = 2048 * 4096;
  run_args a[2];
  for (int k = 0; k < 2; k++) {
    a[k].ctx = ctx_for(k ? UBG_BACKEND_GCC : UBG_BACKEND_TCC);
    a[k].x = malloc((size_t)n * 2), a[k].y = malloc((size_t)n * 2), a[k].dy = malloc((size_t)n * 2);
    a[k].w = malloc(4096 * 2), a[k].dw = malloc(4096 * 2), a[k].rstd = malloc(2048 * 4);
    for (int64_t i = 0; i < n; i++) ((uint16_t *)a[k].x)[i] = ubg_f32_to_bf16((float)(i % 1000) / 500.0f - 1.0f);
    memcpy(a[k].dy, a[k].x, (size_t)n * 2);
    for (int i = 0; i < 4096; i++) ((uint16_t *)a[k].w)[i] = ubg_f32_to_bf16(1.0f + (float)i * 1e-4f);
  }
  printf("run time, RMSNorm bf16 2048 x 4096, 2 threads, median of %d:\n", reps);
  for (int bwd = 0; bwd < 2; bwd++) {
    for (int k = 0; k < 2; k++) {
      a[k].bwd = 0;
      run_one(&a[k]); /* rstd for the backward; compiles */
      a[k].bwd = bwd;
      run_one(&a[k]);
    }
    bench_fn fns[2] = {run_one, run_one};
    void *args[2] = {&a[0], &a[1]};
    double *times[2] = {malloc((size_t)reps * sizeof(double)), malloc((size_t)reps * sizeof(double))};
    bench_interleaved(fns, args, 2, reps, 0.05, times);
    double ratio[64];
    for (int r = 0; r < reps && r < 64; r++) ratio[r] = times[0][r] / times[1][r];
    bench_stats t_tcc = bench_percentiles(times[0], reps), t_gcc = bench_percentiles(times[1], reps);
    bench_stats rr = bench_percentiles(ratio, reps < 64 ? reps : 64);
    printf("  %s  tcc %8.3f ms   gcc %8.3f ms   tcc / gcc %.1fx  (%s)\n", bwd ? "bwd" : "fwd", 1e3 * t_tcc.p50,
           1e3 * t_gcc.p50, rr.p50, ubg_ctx_last_variant(a[0].ctx));
    if (!bwd) {
      ok = rr.p50 <= 4.0;
      failed += !ok;
      printf("  target (tcc forward within 4x of gcc): %s\n", ok ? "met" : "NOT MET");
    }
    bench_stats ms[2] = {t_tcc, t_gcc};
    for (int k = 0; k < 2; k++) ms[k].p20 *= 1e3, ms[k].p50 *= 1e3, ms[k].p80 *= 1e3;
    double x4096[1] = {4096};
    const char *mode = bwd ? "backward" : "forward";
    const char *extra = "{\"M\": 2048, \"dtype\": \"bfloat16\", \"threads\": 2}";
    bench_json_add(json, "rms_norm", "ubgen_tcc", mode, "speed", "ms", "H", "hidden size", x4096, 1, &ms[0], extra);
    bench_json_add(json, "rms_norm", "ubgen_gcc", mode, "speed", "ms", "H", "hidden size", x4096, 1, &ms[1], extra);
    bench_json_add(json, "rms_norm", "ubgen_tcc", mode, "slowdown_vs_gcc", "ratio", "H", "hidden size", x4096, 1, &rr,
                   extra);
    free(times[0]), free(times[1]);
  }
  for (int k = 0; k < 2; k++) {
    ubg_ctx_destroy(a[k].ctx);
    free(a[k].x), free(a[k].y), free(a[k].dy), free(a[k].w), free(a[k].dw), free(a[k].rstd);
  }
  if (bench_json_write(json, out) != 0) fprintf(stderr, "bench_jit: cannot write %s\n", out);
  else if (out) printf("wrote %s\n", out);
  bench_json_free(json);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  if (system(cmd) != 0) fprintf(stderr, "bench_jit: could not remove %s\n", cache);
  if (failed) printf("%d of 3 target checks not met\n", failed);
  return strict && failed ? 1 : 0;
}
