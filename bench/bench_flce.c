/* Fused linear cross entropy (ubg_flce) at Liger-Kernel's benchmark family
 * scaled to this machine: H = 1024, V = 32768, BT = 1024 .. 8192 rows, f32
 * (--dtype bf16: ubgen's tensors in bf16, the baselines in f32 on the same
 * rounded values), reduction MEAN, no bias, no ignored rows. Providers,
 * measured in one run, interleaved repetition by repetition:
 *   ubgen           ubg_flce with the generated GEMMs (flce.chunk forced to gemm=generated)
 *   ubgen-openblas  ubg_flce with OpenBLAS GEMMs (gemm=openblas), when the
 *                   library was built with BLAS=openblas (probed at start);
 *                   with --dtype bf16 ubgen-onednn instead: oneDNN's GEMMs
 *                   (gemm=onednn, the library's default where it is linked;
 *                   bench_flce_gemms times them alone)
 *   openblas-gemms  the three GEMMs alone, OpenBLAS cblas_sgemm on all threads:
 *                   logits = x W^T [BT,V], dx = G W, dW = G^T x: the floor any
 *                   exact FLCE has to pay (G = the logits buffer, [BT,V] f32)
 *   naive           what one writes first: logits = x W^T materialized in a
 *                   freshly allocated BT x V f32 buffer (cblas_sgemm), a plain C
 *                   loop cross entropy (rows over the OpenMP threads) that puts
 *                   the gradient in place, then dx and dW (cblas_sgemm), then
 *                   the buffer is freed
 * Modes, as Liger's FLCE benchmark: full = the call with gradients (FLCE
 * computes them in its forward), forward = the call without (dx, dweight
 * NULL), backward = full - forward, repetition by repetition. For the two
 * baselines one full call is timed in phases: forward = logits GEMM (+ the
 * loss pass of the naive cross entropy), backward = the rest.
 * Memory: the extra peak RSS of each call. Before a call the peak is reset
 * (5 > /proc/self/clear_refs) and VmRSS read; after it, extra = VmHWM - that
 * RSS. Inputs and outputs are allocated and touched beforehand, so extra is
 * the call's own scratch (ubg_flce: its chunk of logits; naive: the BT x V
 * logits). glibc's mmap threshold is pinned at 256 KiB (mallopt) so a large
 * block freed by one call is returned to the kernel and shows again in the
 * next call's peak, instead of being recycled from a heap already resident.
 * Also shown: rt_composite_last_scratch_bytes() and rt_composite_chunk_rows() (the
 * chunk is the spec's rule, or --chunk N: both providers then force chunk=N).
 * Passes alone: the generated flce.logits, flce.dx and flce.dw passes
 * (ubg_launch) against cblas_sgemm on the same shapes, in GFLOP/s, and
 * flce.ce against the naive path's cross entropy loops, for M rows = the
 * chunks ubg_flce uses, 256 and the smallest BT (that one logits only);
 * --gemm-rows LIST for others.
 * Before timing, a BT = 256 call of every provider warms up and checks ubgen
 * against the naive path (loss within 1e-4 relative, dx and dW within 1e-3
 * of their largest value, 2e-2 for bf16); after timing every BT checks the
 * outputs of the last calls the same way. A mismatch exits 2.
 * Targets, per BT: full ubg_flce (the faster backend) <= 1.25 x the three
 * OpenBLAS GEMMs; the generated GEMM (flce.logits) >= 50% of OpenBLAS's
 * GFLOP/s; ubg_flce's extra memory <= chunk x V x 4 + the outputs in f32
 * (dx, dW), against BT x V x 4 for the naive path.
 * Writes Liger's JSON (kernel_name fused_linear_cross_entropy; speed in ms
 * and memory in MB per provider and mode; the ratio to the GEMMs; GEMM
 * throughput in GFLOP/s under fused_linear_cross_entropy_gemm, the ce pass
 * in ms under fused_linear_cross_entropy_ce).
 *   bench_flce [--out FILE] [--reps N] [--quick] [--bt LIST] [--gemm-rows LIST]
 *              [--dtype f32|bf16] [--strict]
 * --reps N: repetitions of every timing; by default 3 for BT <= 2048 and 1
 * above (one call of each of the six functions at BT = 8192 is some 1.6
 * TFLOP x 3.3, 80 s or more here), passes alone 5 for M <= 512, else 3.
 * The default run takes 4-5 minutes when ubg_flce is within 1.25 x the GEMMs
 * on an idle machine (longer otherwise); --reps 3 about twice that.
 * --quick: BT in {1024, 2048}, about half.
 * Exit 0 after a complete run; with --strict, 1 when a target is not met. */
#include <cblas.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "prelude.h"
#include "ubgen.h"

/* from libubgen.a (runtime/op_flce.c); weak so that the benchmark links and
 * runs its baselines against a library without them */
extern size_t rt_composite_last_scratch_bytes(void) __attribute__((weak));
extern int64_t rt_composite_chunk_rows(const ubg_ctx *, const char *kernel, const char *op, ubg_dtype dtype,
                                       const int64_t *shape, int64_t rows) __attribute__((weak));

enum { H = 1024, V = 32768, MAXN = 16, MAXREPS = 64, NPROV = 4, CHECK_BT = 256 };
enum { P_GEMMS, P_NAIVE, P_UBGEN, P_UBGEN_OB }; /* providers */
/* the last: ubg_flce with the dtype's other GEMMs, OpenBLAS's (f32) or oneDNN's (bf16) */
static const char *prov_names[NPROV] = {"openblas-gemms", "naive", "ubgen", "ubgen-openblas"};
static const char *other_gemm = "openblas";
static const char *const mode_names[3] = {"forward", "backward", "full"};
static const double target_full = 1.25, target_gemm = 0.50;

static ubg_dtype DT = UBG_F32;
static size_t ES = 4;

static float ld(const void *p, int64_t i) { return DT == UBG_F32 ? ubg_ld_f32(p, i) : ubg_ld_bf16(p, i); }
static void st(void *p, int64_t i, float v) {
  if (DT == UBG_F32) ubg_st_f32(p, i, v);
  else ubg_st_bf16(p, i, v);
}

static void *alloc_touched(size_t n) {
  void *p = bench_alloc(n);
  if (!p) fprintf(stderr, "bench_flce: out of memory (%zu bytes)\n", n), abort();
  memset(p, 0, n);
  return p;
}

/* ---- peak RSS ------------------------------------------------------------ */

static bool hwm_ok;
static long status_kb(const char *key) { /* a "Vm...:" line of /proc/self/status, in kB */
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, n)) {
      v = strtol(line + n, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}
static bool hwm_reset(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY);
  if (fd < 0) return false;
  bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}
typedef struct {
  long rss0;
} mem_probe;
static mem_probe mem_begin(void) {
  mem_probe m = {-1};
  if (hwm_ok && hwm_reset()) m.rss0 = status_kb("VmRSS:");
  return m;
}
/* extra peak in MB (NaN when it cannot be measured) */
static double mem_end(mem_probe m) {
  if (m.rss0 < 0) return NAN;
  long hwm = status_kb("VmHWM:");
  return hwm < 0 ? NAN : (double)(hwm - m.rss0) / 1024.0;
}

/* ---- the problem and the providers --------------------------------------- */

typedef struct {
  int64_t bt;
  const void *x, *w;      /* ubgen's inputs, in DT: [bt,H], [V,H] */
  const float *x32, *w32; /* the same values in f32, for the baselines */
  const int64_t *target;  /* [bt] */
  ubg_ctx *ctx[NPROV];    /* P_UBGEN, P_UBGEN_OB */
  float loss[NPROV];
  void *dx[NPROV], *dw[NPROV]; /* f32 for the baselines, DT for ubgen */
  float *lbuf;                 /* openblas-gemms' logits [bt,V] (also G) */
  double t_fwd;                /* the forward phase of the last baseline call, s */
  char variant[NPROV][320];    /* ubg_flce's passes in its last full call */
} problem;

static void openblas_gemms(problem *p) {
  const int64_t n = p->bt;
  double t0 = bench_now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, V, H, 1.0f, p->x32, H, p->w32, H, 0.0f, p->lbuf, V);
  p->t_fwd = bench_now() - t0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, H, V, 1.0f, p->lbuf, V, p->w32, H, 0.0f, p->dx[P_GEMMS],
              H);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, n, 1.0f, p->lbuf, V, p->x32, H, 0.0f, p->dw[P_GEMMS], H);
}

/* the plain cross entropy over n rows of logits l [n,V], rows over the
 * OpenMP threads. Forward: lse [n], returns the summed loss. */
static double ce_forward(const float *l, int64_t n, const int64_t *target, float *lse) {
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int64_t r = 0; r < n; r++) {
    const float *row = l + r * V;
    float m = -INFINITY, s = 0;
    for (int64_t v = 0; v < V; v++) m = row[v] > m ? row[v] : m;
    for (int64_t v = 0; v < V; v++) s += expf(row[v] - m);
    lse[r] = m + logf(s);
    total += lse[r] - row[target[r]];
  }
  return total;
}
/* backward: the gradient of the mean loss (scale = 1/rows), in place */
static void ce_backward(float *l, int64_t n, const int64_t *target, const float *lse, float scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; r++) {
    float *row = l + r * V;
    for (int64_t v = 0; v < V; v++) row[v] = expf(row[v] - lse[r]) * scale;
    row[target[r]] -= scale;
  }
}

/* logits materialized, softmax cross entropy in a plain loop, mean over rows */
static void naive(problem *p) {
  const int64_t n = p->bt;
  double t0 = bench_now();
  float *l = malloc((size_t)n * V * sizeof *l), *lse = malloc((size_t)n * sizeof *lse);
  if (!l || !lse) fprintf(stderr, "bench_flce: naive: out of memory\n"), abort();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, V, H, 1.0f, p->x32, H, p->w32, H, 0.0f, l, V);
  p->loss[P_NAIVE] = (float)(ce_forward(l, n, p->target, lse) / (double)(n > 0 ? n : 1));
  p->t_fwd = bench_now() - t0;
  ce_backward(l, n, p->target, lse, 1.0f / (float)(n > 0 ? n : 1));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, H, V, 1.0f, l, V, p->w32, H, 0.0f, p->dx[P_NAIVE], H);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, n, 1.0f, l, V, p->x32, H, 0.0f, p->dw[P_NAIVE], H);
  free(l), free(lse);
}

static ubg_status flce_call(problem *p, int prov, bool grad) {
  ubg_flce_out o = {.loss = &p->loss[prov], .dx = grad ? p->dx[prov] : NULL, .dweight = grad ? p->dw[prov] : NULL};
  return ubg_flce(p->ctx[prov], DT, p->bt, H, V, p->x, p->w, p->target, NULL, &o);
}
static void ubgen_call(problem *p, int prov, bool grad) {
  bench_must(p->ctx[prov], flce_call(p, prov, grad), prov == P_UBGEN ? "ubg_flce (generated)" : "ubg_flce (other GEMMs)");
  if (grad) snprintf(p->variant[prov], sizeof p->variant[prov], "%s", ubg_ctx_last_variant(p->ctx[prov]));
}

/* the timed functions of one BT: index -> provider and mode */
enum { F_GEMMS, F_NAIVE, F_UB_FWD, F_UB_FULL, F_OB_FWD, F_OB_FULL, NF };
static void run_fn(problem *p, int f) {
  switch (f) {
  case F_GEMMS: openblas_gemms(p); break;
  case F_NAIVE: naive(p); break;
  case F_UB_FWD: ubgen_call(p, P_UBGEN, false); break;
  case F_UB_FULL: ubgen_call(p, P_UBGEN, true); break;
  case F_OB_FWD: ubgen_call(p, P_UBGEN_OB, false); break;
  case F_OB_FULL: ubgen_call(p, P_UBGEN_OB, true); break;
  }
}

/* ---- checks ---------------------------------------------------------------- */

/* max |a - b| / max |b| over n elements; a in DT, b in f32 (NaN: infinite) */
static double rel_to_max(const void *a, const float *b, int64_t n) {
  double worst = 0, mx = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)ld(a, i) - (double)b[i]);
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    mx = fmax(mx, fabs((double)b[i]));
  }
  return worst / fmax(mx, 1e-30);
}
/* ubgen's last full call (prov) against the naive path's: 0 ok, 2 mismatch */
static int check(problem *p, int prov) {
  const double tol = DT == UBG_F32 ? 1e-3 : 2e-2;
  double e_loss = fabs((double)p->loss[prov] - p->loss[P_NAIVE]) / fmax(1.0, fabs(p->loss[P_NAIVE]));
  double e_dx = rel_to_max(p->dx[prov], p->dx[P_NAIVE], p->bt * H);
  double e_dw = rel_to_max(p->dw[prov], p->dw[P_NAIVE], (int64_t)V * H);
  bool ok = e_loss <= 1e-4 && e_dx <= tol && e_dw <= tol;
  printf("BT=%lld check %s vs naive %s: loss %.6f vs %.6f (rel %.1e), dx %.1e, dW %.1e of max |ref|\n",
         (long long)p->bt, prov_names[prov], ok ? "ok" : "FAILED", p->loss[prov], p->loss[P_NAIVE], e_loss, e_dx,
         e_dw);
  if (!ok) fprintf(stderr, "bench_flce: BT=%lld: %s differs from the naive path\n", (long long)p->bt, prov_names[prov]);
  return ok ? 0 : 2;
}

/* ---- inputs ---------------------------------------------------------------- */

static uint64_t lcg(uint64_t *s) { return *s = *s * 6364136223846793005ull + 1442695040888963407ull; }
static float uniform01(uint64_t *s) { return ((float)(lcg(s) >> 40) + 0.5f) / (float)(1 << 24); } /* (0,1) */
/* normal(0, sd) values in DT into *t, and the same values in f32 into *f
 * (the same buffer for f32) */
static void normal_pair(int64_t n, float sd, uint64_t seed, void **t, float **f) {
  *t = alloc_touched((size_t)n * ES);
  *f = DT == UBG_F32 ? *t : alloc_touched((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    float u1 = uniform01(&seed), u2 = uniform01(&seed);
    st(*t, i, sd * sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2));
    (*f)[i] = ld(*t, i);
  }
}

/* ---- argument lists -------------------------------------------------------- */

/* the 1-minute load average: other work on this machine skews the ratios */
static double loadavg(void) {
  double l = NAN;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fscanf(f, "%lf", &l) != 1) l = NAN;
  if (f) fclose(f);
  return l;
}

static int parse_list(const char *s, int64_t *out, int max) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0) return -1;
    out[n++] = v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}
static const char *arg_value(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) return argv[i + 1];
  return NULL;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int reps_for(int reps_arg, int64_t bt) { return reps_arg ? (reps_arg < MAXREPS ? reps_arg : MAXREPS) : bt <= 2048 ? 3 : 1; }
static int greps_for(int reps_arg, int64_t m) { return reps_arg ? (reps_arg < MAXREPS ? reps_arg : MAXREPS) : m <= 512 ? 5 : 3; }

static int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}
/* ubg_flce's rows per chunk, or Liger's rule (a stand-in) when the library cannot say */
static int64_t chunk_rows(const ubg_ctx *ctx, int64_t bt) {
  if (rt_composite_chunk_rows) return rt_composite_chunk_rows(ctx, "flce", "chunk", UBG_F32, (const int64_t[3]){bt, H, V}, bt);
  int64_t ratio = (V + H - 1) / H;
  return next_pow2((bt + ratio - 1) / ratio);
}

static bench_stats stats_of(const double *t, int n, double scale) {
  double c[MAXREPS];
  for (int i = 0; i < n; i++) c[i] = t[i] * scale;
  return bench_percentiles(c, n);
}
static double max_of(const double *t, int n) {
  double m = -INFINITY;
  for (int i = 0; i < n; i++) m = isnan(t[i]) ? m : fmax(m, t[i]);
  return m;
}

/* bench_json_add over the x whose median is finite (jansson has no NaN) */
static void json_add_finite(bench_json *j, const char *kernel, const char *provider, const char *mode,
                            const char *metric, const char *unit, const char *x_name, const char *x_label,
                            const double *x, int n, const bench_stats *y, const char *extra) {
  double xs[MAXN];
  bench_stats ys[MAXN];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(y[i].p50) && isfinite(y[i].p20) && isfinite(y[i].p80)) xs[k] = x[i], ys[k++] = y[i];
  if (k) bench_json_add(j, kernel, provider, mode, metric, unit, x_name, x_label, xs, k, ys, extra);
}

/* ---- passes alone -------------------------------------------------------------- */

enum { G_LOGITS, G_CE, G_DX, G_DW, NG }; /* in ubg_flce's order */
static const char *const gemm_names[NG] = {"logits", "ce", "dx", "dw"};
typedef struct {
  ubg_ctx *ctx;
  int64_t m;
  const void *x, *w;
  const float *x32, *w32;
  float *lbuf;       /* logits out, then dlogits in [m,V] */
  void *dx_gen;      /* [m,H] DT */
  float *dx_blas;    /* [m,H] */
  float *dw_gen;     /* [V,H] f32 accumulator */
  float *dw_blas;    /* [V,H] */
  const int64_t *target; /* [m] */
  float *loss_rows, *lse; /* [m] */
  char variant[NG][128];
} gemm_problem;

static ubg_status gemm_gen_try(gemm_problem *g, int which) {
  ubg_arg a[8];
  size_t n = 0;
  const ubg_arg sizes[3] = {{"bt", UBG_ARG_I64, {.i = g->m}}, {"hidden", UBG_ARG_I64, {.i = H}},
                            {"vocab", UBG_ARG_I64, {.i = V}}};
  if (which == G_LOGITS) {
    a[n++] = (ubg_arg){"x", UBG_ARG_PTR, {.p = (void *)g->x}};
    a[n++] = (ubg_arg){"weight", UBG_ARG_PTR, {.p = (void *)g->w}};
    a[n++] = (ubg_arg){"logits", UBG_ARG_PTR, {.p = g->lbuf}};
  } else if (which == G_CE) { /* the gradient of the mean over the m rows */
    a[n++] = (ubg_arg){"logits", UBG_ARG_PTR, {.p = g->lbuf}};
    a[n++] = (ubg_arg){"target", UBG_ARG_PTR, {.p = (void *)g->target}};
    a[n++] = (ubg_arg){"loss", UBG_ARG_PTR, {.p = g->loss_rows}};
    a[n++] = (ubg_arg){"grad", UBG_ARG_I64, {.i = 1}};
    a[n++] = (ubg_arg){"scale_n", UBG_ARG_F64, {.f = 1.0 / (double)g->m}};
  } else if (which == G_DX) {
    a[n++] = (ubg_arg){"dlogits", UBG_ARG_PTR, {.p = g->lbuf}};
    a[n++] = (ubg_arg){"weight", UBG_ARG_PTR, {.p = (void *)g->w}};
    a[n++] = (ubg_arg){"dx", UBG_ARG_PTR, {.p = g->dx_gen}};
  } else {
    a[n++] = (ubg_arg){"dlogits", UBG_ARG_PTR, {.p = g->lbuf}};
    a[n++] = (ubg_arg){"x", UBG_ARG_PTR, {.p = (void *)g->x}};
    a[n++] = (ubg_arg){"dw_acc", UBG_ARG_PTR, {.p = g->dw_gen}};
  }
  for (int i = 0; i < 3; i++) a[n++] = sizes[i];
  ubg_status s = ubg_launch(g->ctx, "flce", gemm_names[which], DT, a, n);
  if (s == UBG_OK) snprintf(g->variant[which], sizeof g->variant[which], "%s", ubg_ctx_last_variant(g->ctx));
  return s;
}
static void gemm_gen(gemm_problem *g, int which) {
  char what[64];
  snprintf(what, sizeof what, "ubg_launch(flce.%s)", gemm_names[which]);
  bench_must(g->ctx, gemm_gen_try(g, which), what);
}
static void gemm_blas(gemm_problem *g, int which) {
  const int64_t m = g->m;
  if (which == G_LOGITS)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, V, H, 1.0f, g->x32, H, g->w32, H, 0.0f, g->lbuf, V);
  else if (which == G_CE) /* the naive path's loops */
    ce_forward(g->lbuf, m, g->target, g->lse), ce_backward(g->lbuf, m, g->target, g->lse, 1.0f / (float)m);
  else if (which == G_DX)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, H, V, 1.0f, g->lbuf, V, g->w32, H, 0.0f, g->dx_blas, H);
  else /* accumulates, as flce.dw does */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, m, 1.0f, g->lbuf, V, g->x32, H, 1.0f, g->dw_blas, H);
}

/* ---------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  const double t_start = bench_now();
  const char *out = bench_out_path(argc, argv);
  /* repetitions: --reps N for everything, else by cost (reps_for) */
  const int reps_arg = arg_value(argc, argv, "--reps") ? bench_reps(argc, argv, 3) : 0;
  const bool strict = bench_flag(argc, argv, "--strict"), quick = bench_flag(argc, argv, "--quick");
  const char *dts = arg_value(argc, argv, "--dtype");
  if (dts && !strcmp(dts, "bf16")) DT = UBG_BF16, ES = 2;
  else if (dts && strcmp(dts, "f32")) return fprintf(stderr, "bench_flce: --dtype f32 or bf16\n"), 2;
  int64_t bts[MAXN] = {1024, 2048, 4096, 8192}, grows[MAXN];
  int nbt = quick ? 2 : 4, ngr = -1;
  const char *s;
  if ((s = arg_value(argc, argv, "--bt")) && (nbt = parse_list(s, bts, MAXN)) <= 0)
    return fprintf(stderr, "bench_flce: --bt takes a list of positive sizes, as 1024,2048\n"), 2;
  if ((s = arg_value(argc, argv, "--gemm-rows")) && (ngr = parse_list(s, grows, MAXN)) <= 0)
    return fprintf(stderr, "bench_flce: --gemm-rows takes a list of positive sizes, as 256,1024\n"), 2;
  int64_t forced_chunk = 0;
  if ((s = arg_value(argc, argv, "--chunk")) && parse_list(s, &forced_chunk, 1) != 1)
    return fprintf(stderr, "bench_flce: --chunk takes one positive number of rows\n"), 2;
  int64_t bt_max = CHECK_BT;
  for (int i = 0; i < nbt; i++) bt_max = bts[i] > bt_max ? bts[i] : bt_max;

  /* large blocks come from mmap and go back on free: a call's peak is its own */
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
  hwm_ok = hwm_reset() && status_kb("VmHWM:") >= 0;
  if (!hwm_ok) fprintf(stderr, "bench_flce: cannot reset the peak RSS (/proc/self/clear_refs): no memory figures\n");

  const int threads = omp_get_num_procs();
  openblas_set_num_threads(threads);

  /* two contexts: the generated GEMMs and the dtype's other ones (if there) */
  if (DT == UBG_BF16) other_gemm = "onednn", prov_names[P_UBGEN_OB] = "ubgen-onednn";
  ubg_ctx *ctx = NULL, *ctx_ob = NULL;
  char variant[64], variant_ob[64];
  if (forced_chunk) {
    snprintf(variant, sizeof variant, "chunk=%lld", (long long)forced_chunk);
    snprintf(variant_ob, sizeof variant_ob, "chunk=%lld,gemm=%s", (long long)forced_chunk, other_gemm);
  } else {
    snprintf(variant, sizeof variant, "gemm=generated");
    snprintf(variant_ob, sizeof variant_ob, "gemm=%s", other_gemm);
  }
  if (ubg_ctx_create(NULL, &ctx) != UBG_OK) return fprintf(stderr, "bench_flce: %s\n", ubg_ctx_error(NULL)), 2;
  bench_must(ctx, ubg_set_variant(ctx, "flce", "chunk", variant), "ubg_set_variant");
  if (ubg_ctx_create(NULL, &ctx_ob) != UBG_OK) return fprintf(stderr, "bench_flce: %s\n", ubg_ctx_error(NULL)), 2;
  if (ubg_set_variant(ctx_ob, "flce", "chunk", variant_ob) != UBG_OK) {
    printf("%s: not measured: %s\n", prov_names[P_UBGEN_OB], ubg_ctx_error(ctx_ob));
    ubg_ctx_destroy(ctx_ob);
    ctx_ob = NULL;
  }

  printf("Fused linear cross entropy, H = %d, V = %d, %s, reduction mean, %d threads, %s\n", H, V,
         DT == UBG_F32 ? "f32" : "bf16 (baselines in f32 on the same values)", threads, bench_cpu_name());
  printf("OpenBLAS: %s (%d threads); load average %.2f at the start\n", openblas_get_config(),
         openblas_get_num_threads(), loadavg());

  /* inputs for the largest BT; smaller ones use the first rows */
  void *x, *w;
  float *x32, *w32;
  normal_pair(bt_max * H, 1.0f, 1, &x, &x32);
  normal_pair((int64_t)V * H, 1.0f / sqrtf((float)H), 2, &w, &w32); /* logits ~ N(0,1) */
  int64_t *target = alloc_touched((size_t)bt_max * sizeof *target);
  uint64_t seed = 3;
  for (int64_t i = 0; i < bt_max; i++) target[i] = (int64_t)((lcg(&seed) >> 33) % V);
  problem p = {0};
  p.x = x, p.w = w, p.x32 = x32, p.w32 = w32, p.target = target;
  p.ctx[P_UBGEN] = ctx, p.ctx[P_UBGEN_OB] = ctx_ob;
  for (int q = 0; q < NPROV; q++) {
    size_t es = q >= P_UBGEN ? ES : 4;
    p.dx[q] = alloc_touched((size_t)bt_max * H * es);
    p.dw[q] = alloc_touched((size_t)V * H * es);
  }
  p.lbuf = alloc_touched((size_t)bt_max * V * 4);

  /* warm-up and first check at BT = 256; which ubg_flce backends exist */
  bool avail[NPROV] = {true, true, false, false};
  int rc = 0;
  p.bt = CHECK_BT;
  openblas_gemms(&p);
  naive(&p);
  for (int q = P_UBGEN; q <= P_UBGEN_OB && !rc; q++) {
    if (!p.ctx[q]) continue;
    ubg_status st_ = flce_call(&p, q, true);
    if (st_ == UBG_OK && q == P_UBGEN_OB && strncmp(ubg_ctx_last_variant(p.ctx[q]), other_gemm, strlen(other_gemm))) {
      printf("%s: not measured: gemm=%s ran the generated GEMMs (%s)\n", prov_names[q], other_gemm,
             ubg_ctx_last_variant(p.ctx[q]));
    } else if (st_ == UBG_OK) {
      avail[q] = true;
      bench_must(p.ctx[q], flce_call(&p, q, false), "ubg_flce (forward)");
      bench_must(p.ctx[q], flce_call(&p, q, true), "ubg_flce");
      rc = check(&p, q);
    } else {
      printf("%s: not measured: %s: %s\n", prov_names[q], ubg_status_str(st_), ubg_ctx_error(p.ctx[q]));
      if (st_ != UBG_ENOTFOUND && !(q == P_UBGEN_OB && strstr(ubg_ctx_error(p.ctx[q]), other_gemm))) rc = 2;
    }
  }
  if (rc) return rc;

  bench_json *json = bench_json_new();
  char extra[256];
  char reps_desc[64] = "";
  for (int i = 0; i < nbt; i++) {
    size_t len = strlen(reps_desc);
    snprintf(reps_desc + len, sizeof reps_desc - len, "%s%d", i ? "," : "", reps_for(reps_arg, bts[i]));
  }
  snprintf(extra, sizeof extra,
           "{\"H\": %d, \"V\": %d, \"dtype\": \"%s\", \"reduction\": \"mean\", \"threads\": %d, \"reps\": \"%s\"}",
           H, V, DT == UBG_F32 ? "float32" : "bfloat16", threads, reps_desc);
  int failed = 0, checks = 0;

  /* ---- (a) the GEMMs alone --------------------------------------------------- */
  if (ngr < 0) { /* the chunks ubg_flce uses, 256, and the smallest full BT */
    ngr = 0;
    grows[ngr++] = 256;
    int64_t bt_min = bts[0];
    for (int i = 0; i < nbt && ngr < MAXN; i++) {
      grows[ngr++] = chunk_rows(ctx, bts[i]);
      bt_min = bts[i] < bt_min ? bts[i] : bt_min;
    }
    if (ngr < MAXN) grows[ngr++] = bt_min;
  }
  qsort(grows, (size_t)ngr, sizeof *grows, cmp_i64);
  int k = 0;
  for (int i = 0; i < ngr; i++)
    if ((i == 0 || grows[i] != grows[i - 1]) && grows[i] <= bt_max) grows[k++] = grows[i];
  ngr = k;
  printf("\nPasses alone: the generated flce passes (ubg_launch, M rows = one chunk) against the baseline on\n"
         "the same buffers, medians of interleaved runs (%d; %d for M > 512, logits only). GEMMs against\n"
         "cblas_sgemm: logits [M,V] = x W^T, dx [M,H] = G W, dW [V,H] += G^T x, 2 M V H flop each; ce (loss\n"
         "and gradient in place over [M,V]) against the naive path's loops on all threads.\n"
         "gen/base = baseline time / generated time (GEMMs: the ratio of GFLOP/s)\n",
         greps_for(reps_arg, 1), greps_for(reps_arg, 1024));
  printf("%6s %-7s %10s %10s %12s %12s %8s  %-12s  %s\n", "M", "pass", "gen ms", "base ms", "gen GFLOP/s",
         "blas GFLOP/s", "gen/base", "target", "variant");
  bench_stats g_gen[NG][MAXN], g_blas[NG][MAXN];
  double gx[MAXN];
  float *dw_gen_acc = alloc_touched((size_t)V * H * 4), *loss_rows = alloc_touched((size_t)bt_max * 4),
        *lse_rows = alloc_touched((size_t)bt_max * 4);
  bench_stats ce_gen[MAXN], ce_base[MAXN];
  { /* is there a generated GEMM at all? */
    gemm_problem g = {.ctx = ctx, .m = 1, .x = x, .w = w, .lbuf = p.lbuf};
    ubg_status st_ = gemm_gen_try(&g, G_LOGITS);
    if (st_ != UBG_OK) {
      printf("not measured: ubg_launch(flce.logits): %s: %s\n", ubg_status_str(st_), ubg_ctx_error(ctx));
      if (st_ != UBG_ENOTFOUND) return 2;
      ngr = 0;
    }
  }
  for (int gi = 0; gi < ngr; gi++) {
    gemm_problem g = {.ctx = ctx, .m = grows[gi], .x = x, .w = w, .x32 = x32, .w32 = w32, .lbuf = p.lbuf,
                      .dx_gen = p.dx[P_UBGEN], .dx_blas = p.dx[P_GEMMS], .dw_gen = dw_gen_acc, .dw_blas = p.dw[P_NAIVE],
                      .target = target, .loss_rows = loss_rows, .lse = lse_rows};
    const double flop = 2.0 * (double)g.m * V * H;
    gx[gi] = (double)g.m;
    const int greps = greps_for(reps_arg, g.m);
    for (int which = 0; which < NG; which++) {
      if (which != G_LOGITS && g.m > 512) { /* not asked for; saves time */
        g_gen[which][gi] = g_blas[which][gi] = (bench_stats){NAN, NAN, NAN};
        if (which == G_CE) ce_gen[gi] = ce_base[gi] = (bench_stats){NAN, NAN, NAN};
        continue;
      }
      double tg[MAXREPS], tb[MAXREPS], ratio[MAXREPS];
      gemm_gen(&g, which), gemm_blas(&g, which); /* warm-up */
      for (int r = 0; r < greps; r++) {
        double t0 = bench_now();
        gemm_gen(&g, which);
        double t1 = bench_now();
        gemm_blas(&g, which);
        double t2 = bench_now();
        tg[r] = t1 - t0, tb[r] = t2 - t1, ratio[r] = tb[r] / tg[r];
      }
      bench_stats sg = stats_of(tg, greps, 1e3), sb = stats_of(tb, greps, 1e3), sr = stats_of(ratio, greps, 1);
      /* throughput, GFLOP/s: the percentiles of the time, inverted */
      g_gen[which][gi] = (bench_stats){flop / sg.p80 * 1e-6, flop / sg.p50 * 1e-6, flop / sg.p20 * 1e-6};
      g_blas[which][gi] = (bench_stats){flop / sb.p80 * 1e-6, flop / sb.p50 * 1e-6, flop / sb.p20 * 1e-6};
      const char *verdict = "-";
      if (which == G_LOGITS) {
        bool met = sr.p50 >= target_gemm;
        failed += !met, checks++;
        verdict = met ? ">=50%: met" : ">=50%: NOT MET";
      }
      if (which == G_CE) {
        ce_gen[gi] = sg, ce_base[gi] = sb;
        g_gen[which][gi] = g_blas[which][gi] = (bench_stats){NAN, NAN, NAN};
        printf("%6lld %-7s %10.2f %10.2f %12s %12s %7.0f%%  %-12s  %s\n", (long long)g.m, gemm_names[which], sg.p50,
               sb.p50, "-", "-", 100 * sr.p50, verdict, g.variant[which]);
      } else {
        printf("%6lld %-7s %10.2f %10.2f %12.1f %12.1f %7.0f%%  %-12s  %s\n", (long long)g.m, gemm_names[which],
               sg.p50, sb.p50, g_gen[which][gi].p50, g_blas[which][gi].p50, 100 * sr.p50, verdict, g.variant[which]);
      }
      fflush(stdout);
    }
  }
  free(dw_gen_acc), free(loss_rows), free(lse_rows);
  if (ngr > 0) {
    json_add_finite(json, "fused_linear_cross_entropy_ce", "ubgen-generated", "ce", "speed", "ms", "M", "rows", gx,
                    ngr, ce_gen, extra);
    json_add_finite(json, "fused_linear_cross_entropy_ce", "naive", "ce", "speed", "ms", "M", "rows", gx, ngr,
                    ce_base, extra);
  }
  for (int which = 0; which < NG && ngr > 0; which++) {
    if (which == G_CE) continue;
    json_add_finite(json, "fused_linear_cross_entropy_gemm", "ubgen-generated", gemm_names[which], "throughput",
                   "GFLOP/s", "M", "rows", gx, ngr, g_gen[which], extra);
    json_add_finite(json, "fused_linear_cross_entropy_gemm", "openblas", gemm_names[which], "throughput", "GFLOP/s",
                   "M", "rows", gx, ngr, g_blas[which], extra);
  }

  /* ---- (b) the whole op, per BT ------------------------------------------------ */
  bench_stats sp[NPROV][3][MAXN], mem[NPROV][2][MAXN], vs_gemms[MAXN]; /* mem: forward, full */
  double xs[MAXN];
  int best_of[MAXN];
  printf("\nWhole op: ms are medians of interleaved runs; extra MB = peak RSS growth of one call (max over runs)\n");
  for (int bi = 0; bi < nbt && !rc; bi++) {
    const int64_t bt = bts[bi], chunk = chunk_rows(ctx, bt);
    const int reps = reps_for(reps_arg, bt);
    p.bt = bt;
    xs[bi] = (double)bt;
    bool fn_on[NF] = {true, true, avail[P_UBGEN], avail[P_UBGEN], avail[P_UBGEN_OB], avail[P_UBGEN_OB]};
    static double t[NF][MAXREPS], tf[NF][MAXREPS], mb[NF][MAXREPS], held[NF][MAXREPS];
    double scratch[NF] = {0};
    for (int r = 0; r < reps; r++)
      for (int f = 0; f < NF; f++) {
        if (!fn_on[f]) continue;
        mem_probe m = mem_begin();
        double t0 = bench_now();
        run_fn(&p, f);
        t[f][r] = bench_now() - t0;
        mb[f][r] = mem_end(m);
        held[f][r] = m.rss0 >= 0 ? (double)(status_kb("VmRSS:") - m.rss0) / 1024.0 : NAN;
        tf[f][r] = f <= F_NAIVE ? p.t_fwd : NAN;
        if (f >= F_UB_FWD && rt_composite_last_scratch_bytes)
          scratch[f] = fmax(scratch[f], (double)rt_composite_last_scratch_bytes() / (1 << 20));
      }
    const double flop3 = 3 * 2.0 * (double)bt * V * H;
    printf("\nBT=%lld  chunk %lld rows; naive logits BT x V x 4 = %.0f MB; 3 GEMMs = %.0f GFLOP; %d run%s\n",
           (long long)bt, (long long)chunk, (double)bt * V * 4 / (1 << 20), flop3 * 1e-9, reps, reps > 1 ? "s" : "");
    printf("%-15s %11s %11s %11s %10s %11s %11s %11s %s\n", "provider", "forward ms", "backward ms", "full ms",
           "GFLOP/s", "extra MB fw", "extra MB fl", "scratch MB", "vs gemms");
    /* provider -> (forward fn, full fn) */
    const int fw_fn[NPROV] = {F_GEMMS, F_NAIVE, F_UB_FWD, F_OB_FWD}, fl_fn[NPROV] = {F_GEMMS, F_NAIVE, F_UB_FULL,
                                                                                     F_OB_FULL};
    for (int q = 0; q < NPROV; q++) {
      if (!avail[q]) continue;
      const int ff = fw_fn[q], fl = fl_fn[q];
      double fwd[MAXREPS], bwd[MAXREPS], ratio[MAXREPS];
      for (int r = 0; r < reps; r++) {
        fwd[r] = q <= P_NAIVE ? tf[fl][r] : t[ff][r];
        bwd[r] = t[fl][r] - fwd[r];
        ratio[r] = t[fl][r] / t[F_GEMMS][r];
      }
      sp[q][0][bi] = stats_of(fwd, reps, 1e3), sp[q][1][bi] = stats_of(bwd, reps, 1e3);
      sp[q][2][bi] = stats_of(t[fl], reps, 1e3);
      double mfw = q <= P_NAIVE ? max_of(mb[fl], reps) : max_of(mb[ff], reps), mfl = max_of(mb[fl], reps);
      mem[q][0][bi] = (bench_stats){mfw, mfw, mfw}, mem[q][1][bi] = (bench_stats){mfl, mfl, mfl};
      bench_stats rs = stats_of(ratio, reps, 1);
      char scr[32] = "-";
      if (q >= P_UBGEN && rt_composite_last_scratch_bytes) snprintf(scr, sizeof scr, "%.1f", scratch[fl]);
      printf("%-15s %11.1f %11.1f %11.1f %10.1f %11.1f %11.1f %11s %7.2fx\n", prov_names[q], sp[q][0][bi].p50,
             sp[q][1][bi].p50, sp[q][2][bi].p50, flop3 / (sp[q][2][bi].p50 * 1e-3) * 1e-9, mfw, mfl, scr, rs.p50);
      double h = max_of(held[fl], reps);
      if (h > 1.0) printf("%-15s   (RSS held after the call: %.1f MB)\n", "", h);
      if (q >= P_UBGEN) printf("%-15s   variants logits;ce;dx;dw: %s\n", "", p.variant[q]);
    }
    /* targets: the faster ubg_flce backend against the three GEMMs */
    int best = -1;
    for (int q = P_UBGEN; q <= P_UBGEN_OB; q++)
      if (avail[q] && (best < 0 || sp[q][2][bi].p50 < sp[best][2][bi].p50)) best = q;
    best_of[bi] = best;
    if (best >= 0) {
      const int bf = fl_fn[best];
      double ratio[MAXREPS];
      for (int r = 0; r < reps; r++) ratio[r] = t[bf][r] / t[F_GEMMS][r];
      vs_gemms[bi] = stats_of(ratio, reps, 1);
      bool met = vs_gemms[bi].p50 <= target_full;
      failed += !met, checks++;
      printf("target: full ubg_flce (%s) / 3 OpenBLAS GEMMs = %.2f (p20 %.2f, p80 %.2f), <= %.2f: %s\n",
             prov_names[best], vs_gemms[bi].p50, vs_gemms[bi].p20, vs_gemms[bi].p80, target_full,
             met ? "target met" : "target NOT MET");
      const double allow = (double)chunk * V * 4 / (1 << 20) + ((double)bt * H + (double)V * H) * 4 / (1 << 20);
      for (int q = P_UBGEN; q <= P_UBGEN_OB; q++) {
        if (!avail[q] || isnan(mem[q][1][bi].p50)) continue;
        bool mmet = mem[q][1][bi].p50 <= allow;
        failed += !mmet, checks++;
        printf("target: %s extra memory %.1f MB <= chunk x V x 4 + dx, dW in f32 = %.1f MB: %s (naive: %.1f MB, "
               "%.1f%% of it)\n",
               prov_names[q], mem[q][1][bi].p50, allow, mmet ? "target met" : "target NOT MET",
               mem[P_NAIVE][1][bi].p50, 100 * mem[q][1][bi].p50 / fmax(mem[P_NAIVE][1][bi].p50, 1e-9));
      }
    } else {
      vs_gemms[bi] = (bench_stats){NAN, NAN, NAN};
      printf("target: full ubg_flce / 3 OpenBLAS GEMMs: not measured (no ubg_flce)\n");
    }
    for (int q = P_UBGEN; q <= P_UBGEN_OB && !rc; q++)
      if (avail[q]) rc = check(&p, q);
    fflush(stdout);
  }

  if (!rc) {
    const char *K = "fused_linear_cross_entropy", *xl = "B x T";
    for (int q = 0; q < NPROV; q++) {
      if (!avail[q]) continue;
      for (int m = 0; m < 3; m++) json_add_finite(json, K, prov_names[q], mode_names[m], "speed", "ms", "BT", xl, xs, nbt,
                                                 sp[q][m], extra);
      if (q >= P_UBGEN) json_add_finite(json, K, prov_names[q], "forward", "memory", "MB", "BT", xl, xs, nbt, mem[q][0],
                                       extra);
      json_add_finite(json, K, prov_names[q], "full", "memory", "MB", "BT", xl, xs, nbt, mem[q][1], extra);
    }
    if (avail[P_UBGEN] || avail[P_UBGEN_OB])
      json_add_finite(json, K, "ubgen-best", "full", "ratio_to_openblas_gemms", "ratio", "BT", xl, xs, nbt, vs_gemms,
                     extra);
    printf("\nsummary (full, ms; ratio of the faster ubg_flce to the 3 OpenBLAS GEMMs, target <= %.2f):\n", target_full);
    for (int bi = 0; bi < nbt; bi++) {
      printf("  BT=%-5lld gemms %9.1f  naive %9.1f", (long long)xs[bi], sp[P_GEMMS][2][bi].p50, sp[P_NAIVE][2][bi].p50);
      for (int q = P_UBGEN; q <= P_UBGEN_OB; q++)
        if (avail[q]) printf("  %s %9.1f", prov_names[q], sp[q][2][bi].p50);
      if (best_of[bi] >= 0) printf("  ratio %.2f (%s)", vs_gemms[bi].p50, vs_gemms[bi].p50 <= target_full ? "met" : "NOT MET");
      printf("\n");
    }
    if (failed) printf("%d of %d target checks NOT MET\n", failed, checks);
    else printf("all %d target checks met\n", checks);
    if (bench_json_write(json, out) != 0) fprintf(stderr, "bench_flce: cannot write %s\n", out), rc = 2;
    else if (out) printf("wrote %s\n", out);
  }
  printf("elapsed %.0f s; load average %.2f at the end (above ~0.5, other work shared the cores: a single run's\n"
         "ratios can be off by 2x; --reps 3 gives paired medians)\n", bench_now() - t_start, loadavg());
  bench_json_free(json);
  ubg_ctx_destroy(ctx);
  ubg_ctx_destroy(ctx_ob);
  free(x), free(w);
  if (DT != UBG_F32) free(x32), free(w32);
  free(target), free(p.lbuf);
  for (int q = 0; q < NPROV; q++) free(p.dx[q]), free(p.dw[q]);
  return rc ? rc : strict && failed ? 1 : 0;
}
