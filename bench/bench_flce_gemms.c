/* The fused loss's three GEMMs on the GEMM library ubg_flce uses (oneDNN,
 * runtime/gemm_onednn.h), as ubg_flce runs them, chunk by chunk, against
 * the same library's plain GEMMs on the whole batch: what chunking costs
 * the library (target: the chunked GEMMs at >= 90% of the whole batch's
 * throughput). The shapes of bench/python/bench_flce.py; f32 and bf16.
 *
 *   logits [m, V] = x [m, H] W^T      (f32 out)
 *   dx     [m, H] = G [m, V] W        (G, W and dx in the dtype)
 *   dW     [V, H] += G^T x            (dW in the dtype: Liger's default accumulation)
 *
 * m = BT for the whole batch, the default chunk (the flce spec's rule,
 * through the library's own choice) for the chunked run, whose dW
 * accumulates over the chunks. Each run is timed whole (all three GEMMs
 * of every chunk), interleaved with the other, medians of --reps (3).
 *
 *   bench_flce_gemms [--out FILE] [--reps N] [--quick] [--shapes BTxHxV,...] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/gemm_onednn.h"
#include "harness.h"

extern int64_t rt_composite_chunk_rows(const ubg_ctx *ctx, const char *kernel, const char *op, ubg_dtype dtype,
                                      const int64_t *shape, int64_t rows);

typedef struct {
  int64_t bt, h, v, chunk;
  ubg_dtype dt;
  int threads;
  void *x, *w, *g, *dx, *dw;
  float *logits;
  rt_dnnl_cache *cache;
  void *scratch;
  size_t scratch_bytes;
} problem;

static void gemm(problem *p, int64_t m, int64_t n, int64_t k, const void *a, bool a_t, const void *b, bool b_t, void *c,
                 ubg_dtype c_dt, bool acc) {
  const rt_dnnl_gemm g = {m, n, k, a, b, a_t, b_t, p->dt, c, c_dt, acc, NULL};
  const char *why = NULL;
  if (rt_dnnl_run(p->cache, &g, p->threads, p->scratch, p->scratch_bytes, &why) < 0) {
    fprintf(stderr, "bench_flce_gemms: %s\n", why);
    exit(1);
  }
}

/* the three GEMMs of rows [0, bt) in chunks of `rows` */
static void three(problem *p, int64_t rows) {
  const size_t es = p->dt == UBG_F32 ? 4 : 2;
  const int64_t H = p->h, V = p->v;
  for (int64_t off = 0; off < p->bt; off += rows) {
    const int64_t m = p->bt - off < rows ? p->bt - off : rows;
    const char *x = (const char *)p->x + (size_t)(off * H) * es, *g = (const char *)p->g + (size_t)(off * V) * es;
    gemm(p, m, V, H, x, false, p->w, true, p->logits, UBG_F32, false);
    gemm(p, m, H, V, g, false, p->w, false, (char *)p->dx + (size_t)(off * H) * es, p->dt, false);
    gemm(p, V, H, m, g, true, x, false, p->dw, p->dt, off > 0);
  }
}
static void whole(void *arg) { three(arg, ((problem *)arg)->bt); }
static void chunked(void *arg) { three(arg, ((problem *)arg)->chunk); }

int main(int argc, char **argv) {
  const char *out = bench_out_path(argc, argv);
  const int reps = bench_reps(argc, argv, 3);
  if (rt_dnnl_missing()) {
    printf("bench_flce_gemms: %s; nothing to measure\n", rt_dnnl_missing());
    return 0;
  }
  int64_t shapes[16][3] = {{1024, 512, 32000}, {1024, 4096, 32000}, {2048, 4096, 32000}, {4096, 4096, 32000},
                           {8192, 4096, 32000}, {1024, 4096, 128256}, {2048, 4096, 128256}, {4096, 4096, 128256},
                           {8192, 4096, 128256}};
  int nshapes = bench_flag(argc, argv, "--quick") ? 2 : 9;
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--shapes")) {
      nshapes = 0;
      for (char *s = strtok(argv[i + 1], ","); s && nshapes < 16; s = strtok(NULL, ","), nshapes++)
        if (sscanf(s, "%ldx%ldx%ld", &shapes[nshapes][0], &shapes[nshapes][1], &shapes[nshapes][2]) != 3) {
          fprintf(stderr, "bench_flce_gemms: --shapes %s: want BTxHxV\n", s);
          return 2;
        }
    }
  ubg_ctx *ctx = bench_ctx_open("bench_flce_gemms");
  problem p = {0};
  printf("bench_flce_gemms: oneDNN's three GEMMs, chunked as ubg_flce runs them against the whole batch; %s\n",
         bench_cpu_name());
  bench_json *json = bench_json_new();
  for (int d = 0; d < 2; d++) {
    p.dt = d ? UBG_BF16 : UBG_F32;
    if (!rt_dnnl_runs(p.dt)) continue;
    for (int s = 0; s < nshapes; s++) {
      p.bt = shapes[s][0], p.h = shapes[s][1], p.v = shapes[s][2];
      const int64_t shape[3] = {p.bt, p.h, p.v};
      p.chunk = rt_composite_chunk_rows(ctx, "flce", "chunk", p.dt, shape, p.bt);
      const int udt = p.dt == UBG_F32 ? 0 : 2;
      p.x = bench_uniform(p.bt * p.h, udt, 1), p.w = bench_uniform(p.v * p.h, udt, 2);
      p.g = bench_uniform(p.bt * p.v, udt, 3);
      p.dx = bench_alloc((size_t)(p.bt * p.h) * 4), p.dw = bench_alloc((size_t)(p.v * p.h) * 4);
      p.logits = bench_alloc((size_t)(p.bt * p.v) * 4);
      p.cache = rt_dnnl_cache_new();
      p.threads = omp_get_max_threads();
      p.scratch_bytes = 64 << 20;
      p.scratch = bench_alloc(p.scratch_bytes);
      bench_fn fns[2] = {whole, chunked};
      void *args[2] = {&p, &p};
      double *times[2] = {malloc((size_t)reps * sizeof(double)), malloc((size_t)reps * sizeof(double))};
      bench_interleaved(fns, args, 2, reps, 0, times);
      const bench_stats w = bench_percentiles(times[0], reps), c = bench_percentiles(times[1], reps);
      const double flop = 6.0 * (double)p.bt * (double)p.h * (double)p.v;
      printf("%-4s BT=%-5lld H=%-5lld V=%-6lld whole %8.1f ms (%6.0f GFLOP/s)  chunks of %lld %8.1f ms (%6.0f GFLOP/s): "
             "%.0f%% of the whole batch's throughput (target >= 90%%)\n",
             d ? "bf16" : "f32", (long long)p.bt, (long long)p.h, (long long)p.v, w.p50 * 1e3, flop / w.p50 * 1e-9,
             (long long)p.chunk, c.p50 * 1e3, flop / c.p50 * 1e-9, 100 * w.p50 / c.p50);
      fflush(stdout);
      char extra[200];
      snprintf(extra, sizeof extra, "{\"dtype\": \"%s\", \"H\": %lld, \"V\": %lld, \"chunk\": %lld}", d ? "bf16" : "f32",
               (long long)p.h, (long long)p.v, (long long)p.chunk);
      const double x = (double)p.bt;
      bench_stats wms = w, cms = c;
      bench_stats_ms(&wms), bench_stats_ms(&cms);
      bench_json_add(json, "fused_linear_cross_entropy_gemms", "onednn-whole", "full", "speed", "ms", "BT", "B x T", &x,
                     1, &wms, extra);
      bench_json_add(json, "fused_linear_cross_entropy_gemms", "onednn-chunked", "full", "speed", "ms", "BT", "B x T",
                     &x, 1, &cms, extra);
      free(times[0]), free(times[1]);
      free(p.x), free(p.w), free(p.g), free(p.dx), free(p.dw), free(p.logits), free(p.scratch);
      rt_dnnl_cache_free(p.cache);
    }
  }
  ubg_ctx_destroy(ctx);
  return bench_json_finish(json, out, "bench_flce_gemms");
}
