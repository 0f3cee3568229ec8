/* `ubgen tune flce.chunk`: ubg_flce's rows per chunk and who runs its GEMMs
 * (OpenBLAS in f32 in a build with it, AMX tiles in bf16 on a CPU with
 * them), for one dtype and shape, as whole ubg_flce calls on one context,
 * each candidate forced by name with ubg_set_variant(ctx, "flce", "chunk",
 * "chunk=N[,gemm=openblas|amx]"). The DB entry is kernel "flce", op
 * "chunk", the kernel's shape (bt, hidden, vocab) bucketed; ubg_flce
 * follows it (op_flce.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../templates/ubgen_ref.h"
#include "tune_composite.h"
#include "tune_timing.h"
#include "../../runtime/include/ubgen.h"
/* the spec's chunk rule (rt_flce_rule_rows) and the GEMM backends' names,
 * as ubg_flce has them (op_flce.c), as plan_flce.c reads them */
#include "../../runtime/internal.h"

typedef struct {
  int64_t bt, hidden, vocab;
} flce_shape;

enum { MAX_CAND = 24, MAX_CHUNK = 4096 };
static const double MAX_SCRATCH = 256.0 * 1024 * 1024; /* bytes of logits per chunk */
/* a rate no core's AVX-512 GEMM reaches: a call's floor with the generated GEMMs */
static const double FASTEST_FLOPS_PER_CORE_S = 5e11;

/* the picture's series, by rt_gemm */
static const char *const GEMM_SERIES[3] = {"generated GEMMs", "OpenBLAS GEMMs", "AMX GEMMs"};

typedef struct {
  int64_t chunk;
  rt_gemm gemm;
  char name[48];
  bool failed, wrong;
  char msg[300];
} flce_cand;

typedef struct {
  ubg_ctx *ctx;
  flce_cand *c;
  int dtype;
  flce_shape sh;
  const void *x, *w;
  const int64_t *t;
  ubg_flce_opts opts;
  ubg_flce_out out;
  int reps, good;
  const char *where; /* the sink's */
} flce_run;

/* candidate c's call; 0 or the failure */
static ubg_status call_one(flce_run *r, int c) {
  ubg_status s = ubg_set_variant(r->ctx, "flce", "chunk", r->c[c].name);
  return s ? s : ubg_flce(r->ctx, (ubg_dtype)r->dtype, r->sh.bt, r->sh.hidden, r->sh.vocab, r->x, r->w, r->t, &r->opts,
                              &r->out);
}

static void run_one(void *ud, int c) { call_one(ud, c); }

static void show_round(void *ud, int round) {
  const flce_run *r = ud;
  cli_progress("%s tune flce.chunk %s: round %d/%d, %d candidates", r->where, ug_dtype_name(r->dtype), round + 1, r->reps,
               r->good);
}

/* the context the candidates run on, each forced by name in turn
 * (ubg_set_variant: flce.chunk is a composite op of the runtime's) */
static ubg_status make_ctx(const cli_opts *o, ubg_ctx **ctx) {
  ubg_config cfg = {0};
  cfg.ub_bytes = (size_t)o->budget.ub_bytes;
  cfg.safety_margin = o->budget.margin;
  cfg.tuning_db = "/nonexistent/ubgen-tune-reads-no-db";
  return ubg_ctx_create(&cfg, ctx);
}

/* |got - want| <= atol + rtol |want| everywhere, atol times max |want|
 * when scaled; the first miss into msg */
static bool close_to(const void *got, const void *want, int dtype, int64_t n, double atol, double rtol, bool scaled,
                     char *msg, size_t nmsg, const char *what) {
  double big = 0;
  for (int64_t i = 0; i < n && scaled; i++) big = fmax(big, fabs(ref_load(want, i, dtype)));
  if (scaled) atol *= big;
  for (int64_t i = 0; i < n; i++) {
    double g = ref_load(got, i, dtype), w = ref_load(want, i, dtype);
    if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
      snprintf(msg, nmsg, "%s[%lld] = %g, the default chunk's %g", what, (long long)i, g, w);
      return false;
    }
  }
  return true;
}

/* the default first (Liger's rule), then powers of two up to bt, then the
 * same with the dtype's other GEMMs (OpenBLAS in f32, AMX in bf16); their
 * count */
static int candidates(const ug_kernel *flce, flce_cand *cand, int dtype, flce_shape sh) {
  int n = 0;
  memset(cand, 0, MAX_CAND * sizeof *cand);
  const int64_t liger = rt_flce_rule_rows(flce, sh.bt, sh.hidden, sh.vocab);
  cand[n++].chunk = liger;
  for (int64_t c = 16; c <= sh.bt && c <= MAX_CHUNK && n < MAX_CAND / 2; c *= 2)
    if (c != liger) cand[n++].chunk = c;
  const rt_gemm other = dtype == 0 ? RT_GEMM_OPENBLAS : dtype == 2 ? RT_GEMM_AMX : RT_GEMM_GENERATED;
  for (int i = 0, m = n; other != RT_GEMM_GENERATED && i < m; i++)
    cand[n].chunk = cand[i].chunk, cand[n++].gemm = other;
  return n;
}

/* the kernel's shape, in its order, as bt, hidden, vocab */
static flce_shape shape_of(const ug_kernel *k, const int64_t *shape) {
  flce_shape sh = {0, 0, 0};
  for (int i = 0; i < k->nshape; i++) {
    if (!strcmp(k->shape[i], "bt")) sh.bt = shape[i];
    if (!strcmp(k->shape[i], "hidden")) sh.hidden = shape[i];
    if (!strcmp(k->shape[i], "vocab")) sh.vocab = shape[i];
  }
  return sh;
}

static double chunk_floor(const ug_kernel *flce, const ug_composite *comp, int dtype, const int64_t *shape, int reps,
                          int cores, int *ncand) {
  (void)comp;
  const flce_shape sh = shape_of(flce, shape);
  flce_cand cand[MAX_CAND];
  const int n = candidates(flce, cand, dtype, sh);
  *ncand += n;
  /* only the generated GEMMs' candidates count: the others do not run in a
   * build or on a CPU without their GEMMs */
  int generated = 0;
  for (int c = 0; c < n; c++) generated += cand[c].gemm == RT_GEMM_GENERATED;
  /* the three GEMMs of a call (logits, dx, dW) */
  const double flops = 6.0 * (double)sh.bt * (double)sh.hidden * (double)sh.vocab;
  return cli_time_floor(generated, reps, flops / (FASTEST_FLOPS_PER_CORE_S * cores));
}

static int tune_chunk(const cli_tune_sink *s, const ug_kernel *flce, const ug_composite *comp, int dtype,
                      const int64_t *shape, int reps) {
  FILE *out = s->out;
  const flce_shape sh = shape_of(flce, shape);
  const int64_t bt = sh.bt, h = sh.hidden, v = sh.vocab, es = dtype == 0 ? 4 : 2;
  fprintf(out, "\nflce.chunk  %s  bt=%lld,hidden=%lld,vocab=%lld  (whole ubg_flce calls, MEAN, with dx and dweight)\n",
          ug_dtype_name(dtype), (long long)bt, (long long)h, (long long)v);
  flce_cand cand[MAX_CAND];
  int rc = -1;
  const int n = candidates(flce, cand, dtype, sh);

  flce_run r;
  memset(&r, 0, sizeof r);
  void *x = malloc((size_t)(bt * h * es)), *w = malloc((size_t)(v * h * es));
  int64_t *t = malloc((size_t)bt * sizeof *t);
  float loss = 0, loss0 = 0;
  void *dx = malloc((size_t)(bt * h * es)), *dw = malloc((size_t)(v * h * es));
  void *dx0 = malloc((size_t)(bt * h * es)), *dw0 = malloc((size_t)(v * h * es));
  if (!x || !w || !t || !dx || !dw || !dx0 || !dw0) {
    cli_error("tune flce.chunk: out of memory for bt=%lld hidden=%lld vocab=%lld", (long long)bt, (long long)h,
              (long long)v);
    goto done;
  }
  uint64_t seed = 0x5eedf1ceull;
  for (int64_t i = 0; i < bt * h; i++) ref_store(x, i, dtype, (double)((seed = seed * 6364136223846793005ull + 1) >> 40) / (1 << 24) - 0.5);
  for (int64_t i = 0; i < v * h; i++) ref_store(w, i, dtype, ((double)((seed = seed * 6364136223846793005ull + 1) >> 40) / (1 << 24) - 0.5) * 0.1);
  for (int64_t i = 0; i < bt; i++) t[i] = (int64_t)((seed = seed * 6364136223846793005ull + 1) >> 33) % v;
  r.c = cand, r.dtype = dtype, r.sh = sh, r.x = x, r.w = w, r.t = t, r.reps = reps, r.where = s->where;
  if (make_ctx(s->o, &r.ctx)) {
    cli_error("tune flce.chunk: %s", ubg_ctx_error(NULL));
    goto done;
  }
  ubg_flce_opts_init(&r.opts);
  r.out = (ubg_flce_out){&loss, NULL, NULL, dx, dw, NULL, NULL};

  /* verification, and the warm-up: the generated GEMMs give the same bits
   * at every chunk size; OpenBLAS is held to Liger's f32 tolerance, AMX
   * (which rounds the logits' gradient to bf16, as Liger does) to 2% */
  int good = 0;
  bool missing[3] = {false, false, false};
  for (int c = 0; c < n; c++) {
    flce_cand *cd = &cand[c];
    snprintf(cd->name, sizeof cd->name, "chunk=%lld%s%s", (long long)cd->chunk, cd->gemm ? ",gemm=" : "",
             cd->gemm ? rt_gemm_names[cd->gemm] : "");
    cli_progress("%s tune flce.chunk %s: verify %d/%d %s", s->where, ug_dtype_name(dtype), c + 1, n, cd->name);
    if ((double)cd->chunk * (double)v * 4 > MAX_SCRATCH) {
      cd->failed = true;
      snprintf(cd->msg, sizeof cd->msg, "skipped: %lld rows x vocab of logits is over %.0f MiB of scratch",
               (long long)cd->chunk, MAX_SCRATCH / 1048576);
      continue;
    }
    if (missing[cd->gemm]) {
      cd->failed = true;
      continue;
    }
    if (call_one(&r, c)) {
      cd->failed = true;
      snprintf(cd->msg, sizeof cd->msg, "%s", ubg_ctx_error(r.ctx));
      if (cd->gemm) { /* one note for them all: the build or the CPU has no such GEMMs */
        missing[cd->gemm] = true;
        fprintf(out, "  not timed: the %s (%s)\n", GEMM_SERIES[cd->gemm], cd->msg);
      }
      continue;
    }
    if (c == 0) {
      loss0 = loss;
      memcpy(dx0, dx, (size_t)(bt * h * es));
      memcpy(dw0, dw, (size_t)(v * h * es));
    } else if (!cd->gemm) {
      cd->wrong = memcmp(&loss, &loss0, 4) || memcmp(dx, dx0, (size_t)(bt * h * es)) ||
                  memcmp(dw, dw0, (size_t)(v * h * es));
      if (cd->wrong) snprintf(cd->msg, sizeof cd->msg, "its bits differ from the default chunk's");
    } else {
      const bool amx = cd->gemm == RT_GEMM_AMX;
      const double atol = amx ? 2e-2 : 1e-5, rtol = amx ? 2e-2 : 5e-4;
      cd->wrong = !close_to(&loss, &loss0, 0, 1, 1e-5, amx ? 1e-3 : 5e-4, false, cd->msg, sizeof cd->msg, "loss") ||
                  !close_to(dx, dx0, dtype, bt * h, atol, rtol, amx, cd->msg, sizeof cd->msg, "dx") ||
                  !close_to(dw, dw0, dtype, v * h, atol, rtol, amx, cd->msg, sizeof cd->msg, "dweight");
    }
    good += !cd->wrong;
  }
  cli_progress_done();
  if (cand[0].failed) {
    cli_error("tune flce.chunk %s: the default chunk fails: %s", ug_dtype_name(dtype), cand[0].msg);
    goto done;
  }
  cli_timed timed[MAX_CAND];
  memset(timed, 0, sizeof timed);
  for (int c = 0; c < n; c++) {
    timed[c].wrong = cand[c].failed || cand[c].wrong;
    if (cand[c].failed && !cand[c].gemm) fprintf(out, "  not timed %s: %s\n", cand[c].name, cand[c].msg);
    else if (cand[c].wrong) fprintf(out, "  WRONG %s: %s (never chosen)\n", cand[c].name, cand[c].msg), (*s->failures)++;
  }
  r.good = good;
  if (cli_time_candidates(timed, n, reps, run_one, show_round, &r) < 0) goto done;
  cli_progress_done();
  /* the fastest, unless its win over Liger's rule (candidate 0) is inside the noise */
  int fastest;
  double noise;
  int best = cli_pick(timed, n, 0, &fastest, &noise);
  if (best < 0) best = 0;
  const double base = timed[0].median;
  fprintf(out, "  %-28s %14s %12s %9s\n", "candidate", "scratch bytes", "median ms", "vs default");
  for (int c = 0; c < n; c++) {
    if (timed[c].wrong) continue;
    fprintf(out, "  %-28s %14lld %12.1f %8.2fx%s%s%s\n", cand[c].name, (long long)(cand[c].chunk * v * 4),
            timed[c].median * 1e3, base / timed[c].median, c == fastest ? "  fastest" : "", c == 0 ? "  default" : "",
            timed[c].pruned ? "  (timed once)" : "");
  }
  if (best != fastest)
    fprintf(out, "  tuned %s: the default (Liger's rule); the fastest, %s, is %.2fx it, inside the noise (+-%.1f%%)\n",
            cand[best].name, cand[fastest].name, base / timed[fastest].median, 100 * noise);
  else
    fprintf(out, "  tuned %s: %.1f ms, %.2fx the default %s (Liger's rule, %.1f ms)\n", cand[best].name,
            timed[best].median * 1e3, base / timed[best].median, cand[0].name, base * 1e3);

  if (s->svg) { /* time against the chunk, a series per GEMM backend */
    char title[200];
    snprintf(title, sizeof title, "flce.chunk %s bt=%lld,hidden=%lld,vocab=%lld: tuned %s", ug_dtype_name(dtype),
             (long long)bt, (long long)h, (long long)v, cand[best].name);
    if (cli_svg_panel_add(s->svg, title, "rows per chunk", 0) < 0) goto done;
    for (int c = 0; c < n; c++)
      if (!timed[c].wrong &&
          cli_svg_point_add(s->svg, GEMM_SERIES[cand[c].gemm], cand[c].chunk,
                           timed[c].median * 1e6, c == best, c == 0) < 0)
        goto done;
  }
  ug_tune_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.kernel, sizeof e.kernel, "%s", flce->name);
  snprintf(e.pass, sizeof e.pass, "%s", comp->name);
  e.dtype = dtype;
  e.nshape = flce->nshape;
  for (int i = 0; i < flce->nshape; i++) {
    snprintf(e.shape_names[i], sizeof e.shape_names[i], "%s", flce->shape[i]);
    e.shape[i] = ug_tune_bucket(shape[i]);
  }
  e.ub_bytes = s->o->budget.ub_bytes;
  snprintf(e.variant, sizeof e.variant, "%s", cand[best].name);
  snprintf(e.backend, sizeof e.backend, "aot");
  e.median_us = timed[best].median * 1e6;
  snprintf(e.default_variant, sizeof e.default_variant, "%s", cand[0].name);
  e.default_median_us = base * 1e6;
  e.candidates = good;
  if (ug_tunedb_put(s->db, &e) < 0) goto done;
  if (s->json) {
    json_t *vars = json_array();
    for (int c = 0; c < n; c++)
      json_array_append_new(vars, json_pack("{s:s, s:I, s:o, s:b}", "variant", cand[c].name, "scratch_bytes",
                                            (json_int_t)(cand[c].chunk * v * 4),
                                            "median_us", timed[c].wrong ? json_null() : json_real(timed[c].median * 1e6),
                                            "wrong", cand[c].wrong));
    json_array_append_new(s->json, json_pack("{s:s, s:s, s:s, s:{s:I, s:I, s:I}, s:I, s:s, s:f, s:s, s:f, s:o}", "kernel",
                                             "flce", "pass", "chunk", "dtype", ug_dtype_name(dtype), "shape", "bt",
                                             (json_int_t)bt, "hidden", (json_int_t)h, "vocab", (json_int_t)v, "ub_bytes",
                                             (json_int_t)e.ub_bytes, "variant", e.variant, "median_us", e.median_us,
                                             "default_variant", e.default_variant, "default_median_us",
                                             e.default_median_us, "variants", vars));
  }
  rc = 0;
done:
  if (r.ctx) ubg_ctx_destroy(r.ctx);
  free(x), free(w), free(t), free(dx), free(dw), free(dx0), free(dw0);
  return rc;
}

static cli_composite_tuner tuner = {"flce", "chunk", 3 /* a call takes 0.1 s and more */, tune_chunk, chunk_floor, NULL};
__attribute__((constructor)) static void register_tuner(void) { cli_register_tuner(&tuner); }
