/* Attention residuals forward, backward and both (full) at Liger-Kernel's
 * benchmark shapes (N = 8 blocks, bsz = 1, hidden D = 4096, T = 1024..8192
 * tokens, bf16, eps 1e-6), four providers:
 *   ubgen         the library's automatic choice, all threads
 *   naive_c       straightforward single-threaded C loops in float (gcc -O3,
 *                 same semantics, the one rounding rnd(v * rstd) included)
 *   parallel_copy an OpenMP copy (bench_copy1) between two buffers of their
 *                 own, each half the bytes the kernel must move, so it moves
 *                 the same number of bytes on the same threads:
 *                   fwd   v read, out written, alpha and rstd written
 *                         N T D 2 + T D 2 + 2 T N 4 (+ w_query, w_norm)
 *                   bwd   v read, dv written, dout read, alpha and rstd read
 *                         2 N T D 2 + T D 2 + 2 T N 4 (+ w_*, dw_* [D])
 *                   full  fwd + bwd
 *   parallel_read (forward, cold only; no target) an OpenMP read of as many
 *                 bytes (bench_read1): the forward reads 8 of every 9 bytes
 *                 it moves, so this, not the copy, is what bounds it
 *                 (docs/performance.md compares the two)
 * ubgen and the copy are interleaved with each other. So is the naive loop,
 * unless one naive call takes more than NAIVE_SLOW seconds: then it is timed
 * after them with at most NAIVE_REPS repetitions (marked "*"), and its
 * speed-up is taken against ubgen's median instead of repetition by
 * repetition.
 * Tensors: v [N,T,D] and dout [T,D] uniform in [-1,1); w_query [D] ~ 0.02 *
 * normal; w_norm [D] = 1; out [T,D]; alpha, rstd f32 [T,N]; dv [N,T,D];
 * dw_query, dw_norm [D]. The backward reads the alpha and rstd of one ubgen
 * forward call made beforehand; full runs forward then backward.
 * Two regimes for ubgen and the copy: warm (back-to-back calls; v alone is
 * 64 MiB at T = 1024, but part of the copy's buffers may stay in this
 * machine's 32 MiB L3) and cold (caches flushed before every timed call, so
 * both read from DRAM); the naive loop (compute-bound) is timed warm only.
 * Bandwidth targets are judged in each regime, the speed-up once.
 * Before timing, every shape checks ubgen against the naive loop and exits
 * 2 on a mismatch: out and dv within 0.05, alpha within 2e-3 (the naive
 * loop sums in float, one term after another, so it is the less accurate
 * of the two), dw_query and dw_norm within 2% of their largest value.
 * Writes Liger's JSON (speed in ms per provider, plus ubgen's fraction of
 * the copy bandwidth and its speed-up over the naive loop) and prints the
 * targets per shape: forward and backward >= 60% of the copy bandwidth and
 * >= 3x naive (full: no target).
 *   bench_attn_res [--out FILE] [--reps N] [--strict]
 * Exit 0 after a complete run; with --strict, 1 when a target is not met. */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "prelude.h"
#include "ubgen.h"

enum { NB = 8, BSZ = 1, D = 4096, NT = 4, ES = 2, NAIVE_REPS = 3 };
static const ubg_dtype DT = UBG_BF16;
static const int64_t ts[NT] = {1024, 2048, 4096, 8192};
static const float EPS = 1e-6f;
static const double NAIVE_SLOW = 0.25; /* seconds per naive call */
static const double target_frac = 0.60, target_speedup = 3.0;
static const char *const mode_names[3] = {"forward", "backward", "full"};

typedef struct {
  ubg_ctx *ctx;
  int64_t N, T, D;
  const void *v, *dout, *wq, *wn; /* [N,T,D], [T,D], [D], [D] */
  /* ubgen's outputs */
  void *out, *dv, *dwq, *dwn; /* [T,D], [N,T,D], [D], [D] */
  float *alpha, *rstd;        /* [T,N] */
  /* the naive loop's, same shapes */
  void *out_n, *dv_n, *dwq_n, *dwn_n;
  float *alpha_n, *rstd_n;
} problem;

static float ld(const void *p, int64_t i) { return DT == UBG_F32 ? ubg_ld_f32(p, i) : ubg_ld_bf16(p, i); }
static void st(void *p, int64_t i, float v) {
  if (DT == UBG_F32) ubg_st_f32(p, i, v);
  else ubg_st_bf16(p, i, v);
}
static float rnd(float v) { return DT == UBG_F32 ? v : ubg_rnd_bf16(v); }


static void ubgen_fwd(void *a) {
  problem *p = a;
  bench_must(p->ctx, ubg_attn_res_fwd(p->ctx, DT, p->N, p->T, p->D, p->v, p->wq, p->wn, EPS, p->out, p->alpha, p->rstd),
       "ubg_attn_res_fwd");
}
static void ubgen_bwd(void *a) {
  problem *p = a;
  bench_must(p->ctx,
       ubg_attn_res_bwd(p->ctx, DT, p->N, p->T, p->D, p->dout, p->v, p->wq, p->wn, p->alpha, p->rstd, p->dv, p->dwq,
                        p->dwn),
       "ubg_attn_res_bwd");
}
static void ubgen_full(void *a) { ubgen_fwd(a), ubgen_bwd(a); }

/* the naive loops: what one would write first, in float */
static void naive_fwd(void *a) {
  problem *p = a;
  const int64_t N = p->N, T = p->T, D_ = p->D;
  float s[NB];
  for (int64_t t = 0; t < T; t++) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < N; i++) {
      const int64_t base = (i * T + t) * D_;
      float ss = 0, sc = 0;
      for (int64_t d = 0; d < D_; d++) ss += ld(p->v, base + d) * ld(p->v, base + d);
      float r = 1.0f / sqrtf(ss / (float)D_ + EPS);
      for (int64_t d = 0; d < D_; d++) sc += ld(p->wq, d) * (rnd(ld(p->v, base + d) * r) * ld(p->wn, d));
      p->rstd_n[t * N + i] = r;
      s[i] = sc;
      if (sc > mx) mx = sc;
    }
    float sum = 0;
    for (int64_t i = 0; i < N; i++) sum += s[i] = expf(s[i] - mx);
    for (int64_t i = 0; i < N; i++) p->alpha_n[t * N + i] = s[i] / sum;
    for (int64_t d = 0; d < D_; d++) {
      float h = 0;
      for (int64_t i = 0; i < N; i++) h += p->alpha_n[t * N + i] * ld(p->v, (i * T + t) * D_ + d);
      st(p->out_n, t * D_ + d, h);
    }
  }
}

static void naive_bwd_from(problem *p, const float *alpha, const float *rstd) {
  const int64_t N = p->N, T = p->T, D_ = p->D;
  float *dwq = calloc((size_t)D_, sizeof *dwq), *dwn = calloc((size_t)D_, sizeof *dwn), da[NB];
  for (int64_t t = 0; t < T; t++) {
    float sum_a_da = 0;
    for (int64_t i = 0; i < N; i++) {
      const int64_t base = (i * T + t) * D_;
      float x = 0;
      for (int64_t d = 0; d < D_; d++) x += ld(p->dout, t * D_ + d) * ld(p->v, base + d);
      da[i] = x;
      sum_a_da += alpha[t * N + i] * x;
    }
    for (int64_t i = 0; i < N; i++) {
      const int64_t base = (i * T + t) * D_;
      const float al = alpha[t * N + i], r = rstd[t * N + i], ds = al * (da[i] - sum_a_da);
      float sdv = 0;
      for (int64_t d = 0; d < D_; d++) sdv += ds * ld(p->wq, d) * ld(p->wn, d) * ld(p->v, base + d);
      const float c = r * r * r * (sdv / (float)D_);
      for (int64_t d = 0; d < D_; d++) {
        float vd = ld(p->v, base + d), q = ld(p->wq, d), w = ld(p->wn, d), dk = ds * q * w;
        st(p->dv_n, base + d, al * ld(p->dout, t * D_ + d) + r * dk - c * vd);
        dwq[d] += ds * vd * r * w;
        dwn[d] += ds * q * vd * r;
      }
    }
  }
  for (int64_t d = 0; d < D_; d++) st(p->dwq_n, d, dwq[d]), st(p->dwn_n, d, dwn[d]);
  free(dwq), free(dwn);
}
/* backward from ubgen's forward (as ubgen's backward), full from its own */
static void naive_bwd(void *a) {
  problem *p = a;
  naive_bwd_from(p, p->alpha, p->rstd);
}
static void naive_full(void *a) {
  problem *p = a;
  naive_fwd(p);
  naive_bwd_from(p, p->alpha_n, p->rstd_n);
}

static uint64_t lcg(uint64_t *s) { return *s = *s * 6364136223846793005ull + 1442695040888963407ull; }
static float uniform(uint64_t *s) { return (float)((int64_t)(lcg(s) >> 40) - (1 << 23)) / (float)(1 << 23); }

static void *filled(int64_t n, uint64_t seed) { /* uniform in [-1,1) */
  void *p = bench_alloc((size_t)n * ES);
  for (int64_t i = 0; i < n; i++) st(p, i, uniform(&seed));
  return p;
}

static void *normal(int64_t n, float scale, uint64_t seed) { /* Box-Muller */
  void *p = bench_alloc((size_t)n * ES);
  for (int64_t i = 0; i < n; i++) {
    float u1 = 0.5f * (uniform(&seed) + 1.0f), u2 = 0.5f * (uniform(&seed) + 1.0f);
    st(p, i, scale * sqrtf(-2.0f * logf(u1 > 1e-12f ? u1 : 1e-12f)) * cosf(6.2831853f * u2));
  }
  return p;
}

/* the largest |a - b| over n elements (a NaN counts as infinite) */
static double max_diff(const void *a, const void *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)ld(a, i) - (double)ld(b, i));
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}
static double max_diff_f32(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - (double)b[i]);
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}
static double max_abs(const void *a, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)ld(a, i)));
  return m;
}

/* Checks ubgen against the naive loop on this shape (2 on a mismatch, else
 * 0) and measures one naive call of each pass. */
static int check(problem *p, double *naive_s) {
  char fwd_variant[160];
  ubgen_fwd(p);
  snprintf(fwd_variant, sizeof fwd_variant, "%s", ubg_ctx_last_variant(p->ctx));
  double t0 = bench_now();
  naive_fwd(p);
  naive_s[0] = bench_now() - t0;
  ubgen_bwd(p);
  t0 = bench_now();
  naive_bwd(p); /* same alpha and rstd as ubgen's backward */
  naive_s[1] = bench_now() - t0;
  naive_s[2] = naive_s[0] + naive_s[1];
  const int64_t N = p->N, T = p->T, D_ = p->D;
  double e_out = max_diff(p->out, p->out_n, T * D_), e_alpha = max_diff_f32(p->alpha, p->alpha_n, T * N),
         e_dv = max_diff(p->dv, p->dv_n, N * T * D_),
         e_dwq = max_diff(p->dwq, p->dwq_n, D_) / fmax(max_abs(p->dwq_n, D_), 1e-30),
         e_dwn = max_diff(p->dwn, p->dwn_n, D_) / fmax(max_abs(p->dwn_n, D_), 1e-30);
  bool ok = e_out <= 0.05 && e_alpha <= 2e-3 && e_dv <= 0.05 && e_dwq <= 0.02 && e_dwn <= 0.02;
  printf("T=%lld check %s: max |diff| out %.2g, alpha %.2g, dv %.2g; dw_query %.2g, dw_norm %.2g of max |dw|\n",
         (long long)T, ok ? "ok" : "FAILED", e_out, e_alpha, e_dv, e_dwq, e_dwn);
  if (!ok) {
    fprintf(stderr, "bench_attn_res: T=%lld: ubgen (%s, %s) differs from the naive loop\n", (long long)T,
            fwd_variant, ubg_ctx_last_variant(p->ctx));
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *out = bench_out_path(argc, argv);
  int reps = bench_reps(argc, argv, 7);
  if (reps > 64) reps = 64;
  const bool strict = bench_flag(argc, argv, "--strict");
  ubg_ctx *ctx = bench_ctx_open("bench_attn_res");
  int threads = omp_get_num_procs();
  bench_json *json = bench_json_new();
  printf("Attention residuals, N = %d blocks, bsz = %d, D = %d, bf16, %d threads, %s\n", NB, BSZ, D, threads,
         bench_cpu_name());
  printf("times are medians of %d interleaved runs (* naive: at most %d, timed apart); each mode warm (back-to-back\n"
         "calls), then (cold) with caches flushed before every timed call\n",
         reps, NAIVE_REPS);
  bench_stats st_ubg[3][NT], st_naive[3][NT], st_copy[3][NT], frac[3][NT], speedup[3][NT];
  bench_stats st_ubg_c[3][NT], st_copy_c[3][NT], frac_c[3][NT]; /* cold */
  bench_stats st_read_c[NT], frac_read_c[NT];                      /* cold, forward: the read-only stream */
  double xs[NT];
  int failed_targets = 0, checks = 0, rc = 0;
  for (int ti = 0; ti < NT && !rc; ti++) {
    const int64_t T = ts[ti], nv = NB * T * D, nh = T * D;
    problem p = {ctx, NB, T, D, filled(nv, 1), filled(nh, 2), normal(D, 0.02f, 3), bench_alloc(D * ES),
                 bench_alloc((size_t)nh * ES), bench_alloc((size_t)nv * ES), bench_alloc(D * ES), bench_alloc(D * ES),
                 bench_alloc((size_t)(T * NB) * 4), bench_alloc((size_t)(T * NB) * 4),
                 bench_alloc((size_t)nh * ES), bench_alloc((size_t)nv * ES), bench_alloc(D * ES), bench_alloc(D * ES),
                 bench_alloc((size_t)(T * NB) * 4), bench_alloc((size_t)(T * NB) * 4)};
    for (int64_t d = 0; d < D; d++) st((void *)p.wn, d, 1.0f);
    xs[ti] = (double)T;
    double naive_s[3];
    rc = check(&p, naive_s);

    /* the bytes each mode must move, and copies moving as many */
    const double small = 2.0 * T * NB * 4; /* alpha and rstd */
    double bytes[3];
    bytes[0] = (double)nv * ES + (double)nh * ES + small + 2.0 * D * ES;
    bytes[1] = 2.0 * nv * ES + (double)nh * ES + small + 4.0 * D * ES;
    bytes[2] = bytes[0] + bytes[1];
    size_t half_max = (size_t)(bytes[2] / 2) & ~(size_t)63;
    void *csrc = rc ? NULL : bench_alloc(half_max), *cdst = rc ? NULL : bench_alloc(half_max);
    if (!rc) memset(csrc, 1, half_max), memset(cdst, 0, half_max); /* fault the pages in */
    if (!rc) printf("%6s %-8s %10s %11s %10s %10s %9s %8s %9s  %-7s  %s\n", "T", "mode", "ubgen ms", "naive ms",
                    "copy ms", "ubgen GB/s", "copy GB/s", "vs copy", "vs naive", "target", "variant");
    for (int mode = 0; mode < 3 && !rc; mode++) {
      size_t half = (size_t)(bytes[mode] / 2) & ~(size_t)63;
      bench_copy_args copy = {csrc, NULL, cdst, half, threads};
      double copy_scale = bytes[mode] / (2.0 * (double)half); /* kernel bytes / copy bytes, ~1 */
      static bench_fn const ubg_fns[3] = {ubgen_fwd, ubgen_bwd, ubgen_full};
      static bench_fn const naive_fns[3] = {naive_fwd, naive_bwd, naive_full};
      bool apart = naive_s[mode] > NAIVE_SLOW;
      int nreps = apart && reps > NAIVE_REPS ? NAIVE_REPS : reps;
      bench_fn fns[3] = {ubg_fns[mode], bench_copy1, naive_fns[mode]};
      void *args[3] = {&p, &copy, &p};
      double *times[3];
      for (int f = 0; f < 3; f++) times[f] = bench_alloc((size_t)reps * sizeof(double));
      if (apart) {
        bench_interleaved(fns, args, 2, reps, 0.02, times);
        bench_interleaved(fns + 2, args + 2, 1, nreps, 0.02, times + 2);
      } else {
        bench_interleaved(fns, args, 3, reps, 0.02, times);
      }
      char variant[320];
      snprintf(variant, sizeof variant, "%s%s", mode == 2 ? "last: " : "", ubg_ctx_last_variant(ctx));
      double ratio_copy[64], ratio_naive[64];
      for (int r = 0; r < reps; r++) ratio_copy[r] = times[1][r] / times[0][r] * copy_scale;
      st_ubg[mode][ti] = bench_percentiles(times[0], reps);
      st_copy[mode][ti] = bench_percentiles(times[1], reps);
      for (int r = 0; r < nreps; r++) /* repetition by repetition, or against ubgen's median */
        ratio_naive[r] = times[2][r] / (apart ? st_ubg[mode][ti].p50 : times[0][r]);
      st_naive[mode][ti] = bench_percentiles(times[2], nreps);
      frac[mode][ti] = bench_percentiles(ratio_copy, reps);
      speedup[mode][ti] = bench_percentiles(ratio_naive, nreps);
      /* cold: ubgen and the copy again, each call from DRAM; the forward
       * (8 of its 9 parts read) also against a read of as many bytes */
      bench_copy_args read = {csrc, NULL, NULL, 2 * half, threads};
      bench_fn fns_c[3] = {ubg_fns[mode], bench_copy1, bench_read1};
      void *args_c[3] = {&p, &copy, &read};
      const int nfn_c = mode == 0 ? 3 : 2;
      double *cold[3];
      for (int f = 0; f < nfn_c; f++) cold[f] = bench_alloc((size_t)reps * sizeof(double));
      bench_interleaved_cold(fns_c, args_c, nfn_c, reps, cold);
      double ratio_cold[64], ratio_read[64];
      for (int r = 0; r < reps; r++) ratio_cold[r] = cold[1][r] / cold[0][r] * copy_scale;
      st_ubg_c[mode][ti] = bench_percentiles(cold[0], reps);
      st_copy_c[mode][ti] = bench_percentiles(cold[1], reps);
      frac_c[mode][ti] = bench_percentiles(ratio_cold, reps);
      if (mode == 0) {
        for (int r = 0; r < reps; r++) ratio_read[r] = cold[2][r] / cold[0][r] * copy_scale;
        st_read_c[ti] = bench_percentiles(cold[2], reps);
        frac_read_c[ti] = bench_percentiles(ratio_read, reps);
      }
      for (int f = 0; f < nfn_c; f++) free(cold[f]);
      const char *verdict = "-", *verdict_c = "-";
      if (mode < 2) {
        bool bw = frac[mode][ti].p50 >= target_frac, bw_c = frac_c[mode][ti].p50 >= target_frac;
        bool fast = speedup[mode][ti].p50 >= target_speedup;
        failed_targets += !bw + !bw_c + !fast, checks += 3;
        verdict = bw ? (fast ? "bw+3x met" : "bw met, 3x NOT") : (fast ? "bw NOT, 3x met" : "NOT MET");
        verdict_c = bw_c ? "bw met" : "bw NOT MET";
      }
      printf("%6lld %-8s %10.3f %10.3f%s %10.3f %10.1f %9.1f %7.0f%% %8.1fx  %-7s  %s\n", (long long)T,
             mode_names[mode], 1e3 * st_ubg[mode][ti].p50, 1e3 * st_naive[mode][ti].p50, apart ? "*" : " ",
             1e3 * st_copy[mode][ti].p50, bytes[mode] / st_ubg[mode][ti].p50 * 1e-9,
             2.0 * (double)half / st_copy[mode][ti].p50 * 1e-9, 100 * frac[mode][ti].p50, speedup[mode][ti].p50,
             verdict, variant);
      printf("%6lld %-8s %10.3f %10s  %10.3f %10.1f %9.1f %7.0f%% %9s  %-7s\n", (long long)T, "  (cold)",
             1e3 * st_ubg_c[mode][ti].p50, "", 1e3 * st_copy_c[mode][ti].p50, bytes[mode] / st_ubg_c[mode][ti].p50 * 1e-9,
             2.0 * (double)half / st_copy_c[mode][ti].p50 * 1e-9, 100 * frac_c[mode][ti].p50, "", verdict_c);
      if (mode == 0)
        printf("%6lld %-8s %10s %10s  %10.3f %10s %9.1f %7.0f%%  (a read of as many bytes, no write: not a target)\n",
               (long long)T, "  (read)", "", "", 1e3 * st_read_c[ti].p50, "", 2.0 * (double)half / st_read_c[ti].p50 * 1e-9,
               100 * frac_read_c[ti].p50);
      fflush(stdout);
      bench_stats *to_ms_c[3] = {&st_ubg_c[mode][ti], &st_copy_c[mode][ti], &st_read_c[ti]};
      for (int s2 = 0; s2 < nfn_c; s2++) to_ms_c[s2]->p20 *= 1e3, to_ms_c[s2]->p50 *= 1e3, to_ms_c[s2]->p80 *= 1e3;
      bench_stats_ms(&st_ubg[mode][ti]), bench_stats_ms(&st_naive[mode][ti]), bench_stats_ms(&st_copy[mode][ti]);
      for (int f = 0; f < 3; f++) free(times[f]);
    }
    free(csrc), free(cdst);
    free((void *)p.v), free((void *)p.dout), free((void *)p.wq), free((void *)p.wn);
    free(p.out), free(p.dv), free(p.dwq), free(p.dwn), free(p.alpha), free(p.rstd);
    free(p.out_n), free(p.dv_n), free(p.dwq_n), free(p.dwn_n), free(p.alpha_n), free(p.rstd_n);
  }
  if (!rc) {
    char extra[200], extra_c[200];
    snprintf(extra, sizeof extra,
             "{\"N\": %d, \"bsz\": %d, \"hidden_size\": %d, \"dtype\": \"bfloat16\", \"threads\": %d, \"regime\": \"warm\"}",
             NB, BSZ, D, threads);
    snprintf(extra_c, sizeof extra_c,
             "{\"N\": %d, \"bsz\": %d, \"hidden_size\": %d, \"dtype\": \"bfloat16\", \"threads\": %d, \"regime\": \"cold\"}",
             NB, BSZ, D, threads);
    const char *xl = "sequence length";
    for (int mode = 0; mode < 3; mode++) {
      const char *m = mode_names[mode];
      bench_json_add(json, "attn_res", "ubgen", m, "speed", "ms", "T", xl, xs, NT, st_ubg[mode], extra);
      bench_json_add(json, "attn_res", "naive_c", m, "speed", "ms", "T", xl, xs, NT, st_naive[mode], extra);
      bench_json_add(json, "attn_res", "parallel_copy", m, "speed", "ms", "T", xl, xs, NT, st_copy[mode], extra);
      bench_json_add(json, "attn_res", "ubgen", m, "fraction_of_copy_bandwidth", "ratio", "T", xl, xs, NT,
                     frac[mode], extra);
      bench_json_add(json, "attn_res", "ubgen", m, "speedup_vs_naive_c", "ratio", "T", xl, xs, NT, speedup[mode],
                     extra);
      bench_json_add(json, "attn_res", "ubgen", m, "speed", "ms", "T", xl, xs, NT, st_ubg_c[mode], extra_c);
      bench_json_add(json, "attn_res", "parallel_copy", m, "speed", "ms", "T", xl, xs, NT, st_copy_c[mode], extra_c);
      bench_json_add(json, "attn_res", "ubgen", m, "fraction_of_copy_bandwidth", "ratio", "T", xl, xs, NT,
                     frac_c[mode], extra_c);
      if (mode == 0) {
        bench_json_add(json, "attn_res", "parallel_read", m, "speed", "ms", "T", xl, xs, NT, st_read_c, extra_c);
        bench_json_add(json, "attn_res", "ubgen", m, "fraction_of_read_bandwidth", "ratio", "T", xl, xs, NT,
                       frac_read_c, extra_c);
      }
    }
    printf("targets: forward and backward >= %.0f%% of copy bandwidth and >= %.0fx naive (full: none)\n",
           100 * target_frac, target_speedup);
    if (failed_targets) printf("%d of %d target checks NOT MET\n", failed_targets, checks);
    else printf("all %d target checks met\n", checks);
    if (bench_json_write(json, out) != 0) fprintf(stderr, "bench_attn_res: cannot write %s\n", out), rc = 2;
    else if (out) printf("wrote %s\n", out);
  }
  bench_json_free(json);
  ubg_ctx_destroy(ctx);
  return rc ? rc : strict && failed_targets ? 1 : 0;
}
