/* ubgen tune KERNEL.PASS|all: for each shape (--shape, else the spec's
 * "tune" cases) and dtype, every variant that fits the UB budget and
 * applies is verified against the reference on the tuning inputs (a wrong
 * one is reported and never chosen), then timed (tune_timing.h: rotated
 * interleaved rounds, the median decides). The fastest goes to the tuning
 * DB with the default strategy's choice and time beside it. A composite
 * op (KERNEL.OP: a spec's "composites") is tuned by the tuner registered
 * for it (tune_composite.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../gen/bind.h"
#include "../gen/fsutil.h"
#include "check_run.h"
#include "cli.h"
#include "shape_arg.h"
#include "../gen/strategy.h"
#include "tune_composite.h"
#include "tune_svg.h"
#include "tune_timing.h"
#include "../gen/tuned.h"
#include "../gen/tunedb.h"

enum { DEFAULT_REPS = 5 };
/* a bandwidth no core reaches, in cache or out: a call's floor is its bytes
 * at this rate (the sweep's announced floor, cli_time_floor) */
static const double FASTEST_BYTES_PER_CORE_S = 250e9;
static FILE *out; /* the table: stdout, or stderr when stdout carries --json */

typedef struct {
  int index;      /* into the enumerated variants */
  double median; /* seconds per call */
  bool wrong;
  bool pruned; /* timed once: over 3x the fastest */
  bool failed, ref_ok, same_bits; /* verification: the call failed; within tolerance; the default's bits */
  char msg[400];
} candidate;

/* a case from --shape: its int args and has_* flags, float args at their defaults */
static void case_from_env(const ug_pass *p, const int64_t *env, ug_case *cs) {
  memset(cs, 0, sizeof *cs);
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_INT) {
      cs->set[i] = true;
      cs->ints[i] = env[p->sym_of_arg[i]];
    } else if (a->kind == UG_ARG_TENSOR && a->optional) {
      cs->omit[i] = !env[p->sym_of_arg[i]];
    }
  }
}

typedef struct {
  cli_opts *o;
  ubg_ctx *ctx;     /* --backend's, else AUTO: the built-in code where there is some */
  ubg_ctx *ctx_gcc; /* without --backend: the gcc code the library runs for a kernel not built in */
  const char *gcc_unusable; /* why not, once found */
  char shipped[4200]; /* the shipped templates (ubgen_ref.h) */
  ug_tunedb *db;
  json_t *json; /* results, with --json */
  cli_svg *svg;  /* the chart, with --svg */
  int failures;
  int units, taken; /* units of the sweep seen, and run by this shard */
  bool counting;     /* a dry sweep that only counts the units this run takes */
  int total;         /* what the dry sweep counted */
  int candidates;    /* ... and their candidates */
  double floor;      /* ... and the least seconds they take (cli_time_floor) */
  double t0;         /* when the first unit began */
  bool estimated;    /* the estimate line was printed */
  char where[96];    /* "unit 3/40, about 2m left": the progress lines' prefix */
} tuner;

static void shape_text(const ug_pass *p, const int64_t *env, char *text, size_t n) {
  text[0] = '\0';
  for (int i = 0; i < p->kernel->nshape; i++) {
    size_t l = strlen(text);
    snprintf(text + l, n - l, "%s%s=%lld", i ? "," : "", p->kernel->shape[i],
             (long long)env[ug_pass_sym(p, p->kernel->shape[i])]);
  }
}

/* the chart panel of one tuned shape: time against the first axis, a series
 * per tiled/whole-row and other axes' values */
static int add_panel(cli_svg *svg, const ug_pass *p, const ug_variant *vs, const candidate *cand, int ncand, int best,
                     int dflt, int dtype, const char *shape, int rejected) {
  char title[256];
  const ug_variant *bv = &vs[cand[best].index];
  snprintf(title, sizeof title, "%s.%s %s %s: tuned %s", p->kernel->name, p->name, ug_dtype_name(dtype), shape,
           bv->name);
  int64_t limit = 0;
  for (int c = 0; c < ncand && rejected; c++)
    if (vs[cand[c].index].pt.axis[0] > limit) limit = vs[cand[c].index].pt.axis[0];
  if (cli_svg_panel_add(svg, title, p->naxes ? p->axes[0].name : "variant", limit) < 0) return -1;
  for (int c = 0; c < ncand; c++) {
    if (cand[c].wrong) continue;
    const ug_variant *v = &vs[cand[c].index];
    char series[96] = "";
    if (v->pt.tiled >= 0) snprintf(series, sizeof series, "%s", v->pt.tiled ? "tiled" : "whole row");
    for (int a = 1; a < p->naxes; a++) {
      size_t l = strlen(series);
      snprintf(series + l, sizeof series - l, "%s%s=%lld", l ? ", " : "", p->axes[a].name, (long long)v->pt.axis[a]);
    }
    if (cli_svg_point_add(svg, series, p->naxes ? v->pt.axis[0] : c + 1, cand[c].median * 1e6, c == best, c == dflt) < 0)
      return -1;
  }
  return 0;
}

/* what the timing callbacks need: the call, and which variant is forced now */
typedef struct {
  const char *where;
  ubg_ctx *ctx;
  cli_check_call *call;
  const ug_pass *p;
  const ug_variant *vs;
  const candidate *cand;
  int forced; /* the candidate whose variant is set, -1 none */
  int good, reps;
  const char *dtype;
} timing_ctx;

static void run_candidate(void *ud, int c) {
  timing_ctx *t = ud;
  if (t->forced != c) { /* once per measurement, not per call */
    ubg_set_variant(t->ctx, t->p->kernel->name, t->p->name, t->vs[t->cand[c].index].name);
    t->forced = c;
  }
  cli_check_call_run(t->ctx, t->call);
}

static void show_round(void *ud, int r) {
  const timing_ctx *t = ud;
  cli_progress("%s tune %s.%s %s: round %d/%d, %d candidates", t->where, t->p->kernel->name, t->p->name, t->dtype, r + 1,
               t->reps, t->good);
}

/* The context whose code the library will run for this pass: with
 * --backend, that one; else the built-in code when the kernel has some, and
 * gcc code otherwise (the library runs what the gcc JIT cache holds, which
 * timing builds), tcc's when gcc cannot be used here. */
static ubg_ctx *pick_ctx(tuner *T, const ug_pass *p, int dtype, const char *variant) {
  const char *k = p->kernel->name;
  if (T->o->backend || ubg_prepare(T->ctx, k, p->name, (ubg_dtype)dtype, variant) != UBG_OK) return T->ctx;
  const char *last = ubg_ctx_last_variant(T->ctx), *at = last ? strrchr(last, '@') : NULL;
  if (!at || !strcmp(at, "@aot") || T->gcc_unusable) return T->ctx;
  if (!T->ctx_gcc) {
    ubg_config cfg = {0};
    cfg.backend = UBG_BACKEND_GCC;
    cfg.ub_bytes = (size_t)T->o->budget.ub_bytes;
    cfg.safety_margin = T->o->budget.margin;
    cfg.tuning_db = "/nonexistent/ubgen-tune-reads-no-db";
    if (ubg_ctx_create(&cfg, &T->ctx_gcc) != UBG_OK) T->ctx_gcc = NULL;
  }
  if (T->ctx_gcc && ubg_prepare(T->ctx_gcc, k, p->name, (ubg_dtype)dtype, variant) == UBG_OK) return T->ctx_gcc;
  static char why[700];
  snprintf(why, sizeof why, "%s", T->ctx_gcc ? ubg_ctx_error(T->ctx_gcc) : ubg_ctx_error(NULL));
  T->gcc_unusable = why;
  fprintf(out, "  note: timing tcc code: the gcc JIT cannot be used here (%s)\n", why);
  return T->ctx;
}

/* "aot", "tcc" or "gcc": the code that served the last call on ctx */
static void backend_of(const ubg_ctx *ctx, char *out_, size_t n) {
  const char *last = ubg_ctx_last_variant(ctx), *at = last ? strrchr(last, '@') : NULL;
  snprintf(out_, n, "%s", at ? at + 1 : "aot");
}

/* tunes one pass at one dtype and shape; 0 ok, -1 could not run */
static int tune_one(tuner *T, const ug_pass *p, int dtype, const ug_case *cs) {
  const ug_kernel *k = p->kernel;
  int rc = -1, nv = 0, ncand = 0, rejected = 0, dflt = -1;
  ug_variant *vs = NULL;
  candidate *cand = NULL;
  cli_check_call call;
  void *saved[UG_MAX_ARGS] = {0}; /* the first candidate's outputs */
  bool have_call = false;
  ug_diag d;
  char msg[1200], shape[256];
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  if (!env || ug_enumerate(p, dtype, &vs, &nv, &d) < 0) goto out;
  ug_case_env(p, cs, env);
  shape_text(p, env, shape, sizeof shape);
  int64_t usable = ug_budget_usable(&T->o->budget, k);
  cand = calloc((size_t)nv + 1, sizeof *cand);
  if (!cand) goto out;
  if (!T->counting)
    fprintf(out, "\n%s.%s  %s  %s  (UB %lld bytes, %lld usable)\n", k->name, p->name, ug_dtype_name(dtype), shape,
            (long long)T->o->budget.ub_bytes, (long long)usable);
  for (int i = 0; i < nv; i++) {
    int failed;
    int b = ug_bind(p, &vs[i].pt, env, &failed, &d);
    if (b < 0) goto out;
    if (b == 1) continue; /* does not apply to this shape */
    if (vs[i].footprint > usable) {
      rejected++;
      if (!T->counting)
        fprintf(out, "  rejected by the UB budget: %-40s footprint %lld > %lld\n", vs[i].name, (long long)vs[i].footprint,
             (long long)usable);
      continue;
    }
    cand[ncand++].index = i;
  }
  const int reps = T->o->reps ? T->o->reps : DEFAULT_REPS;
  if (T->counting) { /* the unit's floor: no call moves its bytes faster than FASTEST_BYTES_PER_S */
    const int64_t bytes = cli_check_call_bytes(p, dtype, cs);
    T->floor += cli_time_floor(ncand, reps, bytes > 0 ? (double)bytes / (FASTEST_BYTES_PER_CORE_S * cli_cores()) : 0);
    T->candidates += ncand;
    rc = 0;
    goto out;
  }
  ug_choice ch;
  if (ug_default_strategy(p, vs, nv, env, usable, &ch, &d) < 0) goto out;
  if (ncand == 0) {
    fprintf(out, "  no variant fits and applies; nothing to tune\n");
    rc = 0;
    goto out;
  }
  cli_check_ref_fn ref = NULL;
  int has_ref = cli_check_reference(p, T->shipped, &ref, msg, sizeof msg);
  if (has_ref < 0 || (has_ref == 1 && !T->o->no_reference)) {
    cli_error("tune: %s.%s: %s%s", k->name, p->name, msg,
              has_ref == 1 ? "; or give --no-reference to verify the variants only against each other's bits" : "");
    goto out;
  }
  if (cli_check_call_make(&call, p, dtype, cs, 0x7a11eull, msg, sizeof msg) < 0) {
    cli_error("tune: %s.%s %s: %s", k->name, p->name, shape, msg);
    goto out;
  }
  have_call = true;
  const int timeout = T->o->timeout;
  if (ref && cli_check_call_reference(&call, ref, timeout, msg, sizeof msg) < 0) {
    cli_error("tune: %s.%s %s: %s", k->name, p->name, shape, msg);
    goto out;
  }

  /* Verification compiles each candidate (the JIT's, if any) and runs it in a child process.
   * Each candidate's outputs are compared with the reference within the
   * spec's tolerance, and with the default strategy's variant (run first)
   * bit for bit. Where no candidate at all is within the tolerance (which
   * is set for the spec's small check cases, and can be too tight for this
   * shape's long f32 sums), a bitwise pass accepts the candidates that give
   * the default's very bits, and says so; otherwise only what is within
   * the tolerance is accepted. */
  int good = 0, within = 0;
  for (int c = 1; c < ncand; c++)
    if (cand[c].index == ch.chosen) {
      candidate t = cand[0];
      cand[0] = cand[c];
      cand[c] = t;
    }
  ubg_ctx *ctx = pick_ctx(T, p, dtype, vs[cand[0].index].name);
  for (int c = 0; c < ncand; c++) {
    const ug_variant *v = &vs[cand[c].index];
    cli_progress("%s tune %s.%s %s: verify %d/%d %s", T->where, k->name, p->name, ug_dtype_name(dtype), c + 1, ncand,
                 v->name);
    /* compiled here (a JIT compile is the parent's to keep for the timing), run in a child process:
     * a crash or a hang fails the candidate, not the sweep, and is never timed */
    int s = ubg_set_variant(ctx, k->name, p->name, v->name);
    if (!s) s = ubg_prepare(ctx, k->name, p->name, (ubg_dtype)dtype, v->name);
    if (s) snprintf(cand[c].msg, sizeof cand[c].msg, "%s: %s", ubg_status_str((ubg_status)s), ubg_ctx_error(ctx));
    cli_check_call_reset(&call);
    if (!s) s = cli_check_call_run_isolated(ctx, &call, timeout, cand[c].msg, sizeof cand[c].msg);
    if (s) {
      cand[c].failed = true;
      continue;
    }
    cand[c].ref_ok = !ref || cli_check_call_compare(&call, cand[c].msg, sizeof cand[c].msg) == 0;
    within += cand[c].ref_ok;
    if (c == 0 && cli_check_call_save(&call, saved) < 0) goto out;
    char why[400];
    cand[c].same_bits = c == 0 || cli_check_call_same_bits(&call, saved, why, sizeof why) == 0;
    /* without a reference, a variant is right when it gives the reference variant's bits */
    if (!ref && !cand[c].same_bits) snprintf(cand[c].msg, sizeof cand[c].msg, "%s", why);
  }
  cli_progress_done();
  bool by_bits = p->bitwise && !cand[0].failed && (ref ? within == 0 && cand[0].index == ch.chosen : true);
  if (!ref && !by_bits) {
    fprintf(out, "  no reference, and the variants cannot be checked against each other (%s): nothing tuned\n",
            cand[0].failed ? "the first variant failed" : "the spec says their bits may differ");
    T->failures++;
    rc = 0;
    goto out;
  }
  if (by_bits && ref)
    fprintf(out, "  note: no variant is within the reference's tolerance here (the default %s: %s); accepted: "
                 "the variants that give the default's bits\n",
            vs[cand[0].index].name, cand[0].msg);
  for (int c = 0; c < ncand; c++) {
    cand[c].wrong = cand[c].failed || !(by_bits ? cand[c].same_bits : cand[c].ref_ok);
    if (cand[c].wrong) {
      if (by_bits && !cand[c].failed) snprintf(cand[c].msg, sizeof cand[c].msg, "its bits differ from the default's");
      fprintf(out, "  WRONG %s: %s (never chosen)\n", vs[cand[c].index].name, cand[c].msg);
      T->failures++;
      continue;
    }
    good++;
  }
  cli_timed *timed = calloc((size_t)ncand + 1, sizeof *timed);
  if (!timed) goto out;
  for (int c = 0; c < ncand; c++) timed[c].wrong = cand[c].wrong;
  timing_ctx tc = {T->where, ctx, &call, p, vs, cand, -1, good, reps, ug_dtype_name(dtype)};
  /* each right candidate once, untimed, here: its code and the tensors warm in this process */
  for (int c = 0; c < ncand; c++)
    if (!cand[c].wrong) run_candidate(&tc, c);
  int trc = cli_time_candidates(timed, ncand, reps, run_candidate, show_round, &tc);
  cli_progress_done();
  ubg_set_variant(ctx, k->name, p->name, NULL);
  for (int c = 0; c < ncand; c++) {
    cand[c].median = timed[c].median, cand[c].pruned = timed[c].pruned;
    if (!cand[c].wrong && cand[c].index == ch.chosen) dflt = c;
  }
  /* the fastest, unless its win over the default is inside the noise */
  int fastest = -1;
  double noise = 0;
  const int best = trc < 0 ? -1 : cli_pick(timed, ncand, dflt, &fastest, &noise);
  free(timed);
  if (trc < 0) goto out;
  if (best < 0) {
    fprintf(out, "  every candidate was wrong: no entry written\n");
    rc = 0;
    goto out;
  }
  double base = dflt >= 0 ? cand[dflt].median : NAN;
  fprintf(out, "  %-44s %10s %12s %9s\n", "variant", "footprint", "median us", "vs default");
  for (int c = 0; c < ncand; c++) {
    const ug_variant *v = &vs[cand[c].index];
    if (cand[c].wrong) {
      fprintf(out, "  %-44s %10lld %12s %9s  WRONG\n", v->name, (long long)v->footprint, "-", "-");
      continue;
    }
    char ratio[32] = "-";
    if (dflt >= 0) snprintf(ratio, sizeof ratio, "%.2fx", base / cand[c].median);
    fprintf(out, "  %-44s %10lld %12.1f %9s%s%s%s\n", v->name, (long long)v->footprint, cand[c].median * 1e6, ratio,
            c == fastest ? "  fastest" : "", c == dflt ? "  default" : "", cand[c].pruned ? "  (timed once)" : "");
  }
  const ug_variant *bv = &vs[cand[best].index];
  if (dflt >= 0 && best != fastest)
    fprintf(out, "  tuned %s: the default; the fastest, %s, is %.2fx it, inside the noise (+-%.1f%%)\n", bv->name,
            vs[cand[fastest].index].name, base / cand[fastest].median, 100 * noise);
  else if (dflt >= 0)
    fprintf(out, "  tuned %s: %.1f us, %.2fx the default %s (%.1f us)\n", bv->name, cand[best].median * 1e6,
           base / cand[best].median, vs[cand[dflt].index].name, base * 1e6);
  else if (ch.chosen >= 0)
    fprintf(out, "  tuned %s: %.1f us (the default, %s, is wrong)\n", bv->name, cand[best].median * 1e6,
            vs[ch.chosen].name);
  else
    fprintf(out, "  tuned %s: %.1f us (the default strategy finds no variant: %s)\n", bv->name, cand[best].median * 1e6,
            ch.why);

  if (T->svg && add_panel(T->svg, p, vs, cand, ncand, best, dflt, dtype, shape, rejected) < 0) goto out;
  ug_tune_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.kernel, sizeof e.kernel, "%s", k->name);
  snprintf(e.pass, sizeof e.pass, "%s", p->name);
  e.dtype = dtype;
  e.nshape = ug_tuned_shape(p, env, e.shape);
  for (int i = 0; i < e.nshape; i++) snprintf(e.shape_names[i], sizeof e.shape_names[i], "%s", k->shape[i]);
  e.ub_bytes = T->o->budget.ub_bytes;
  snprintf(e.variant, sizeof e.variant, "%s", bv->name);
  ubg_prepare(ctx, k->name, p->name, (ubg_dtype)dtype, bv->name);
  backend_of(ctx, e.backend, sizeof e.backend);
  e.median_us = cand[best].median * 1e6;
  if (dflt >= 0) {
    snprintf(e.default_variant, sizeof e.default_variant, "%s", vs[cand[dflt].index].name);
    e.default_median_us = base * 1e6;
  }
  e.candidates = good;
  e.rejected_ub = rejected;
  if (ug_tunedb_put(T->db, &e) < 0) goto out;
  if (T->json) {
    json_t *vars = json_array();
    for (int c = 0; c < ncand; c++)
      json_array_append_new(vars, json_pack("{s:s, s:I, s:o, s:b}", "variant", vs[cand[c].index].name, "footprint",
                                            (json_int_t)vs[cand[c].index].footprint, "median_us",
                                            cand[c].wrong ? json_null() : json_real(cand[c].median * 1e6), "wrong",
                                            cand[c].wrong));
    json_array_append_new(T->json, json_pack("{s:s, s:s, s:s, s:o, s:I, s:s, s:f, s:s?, s:o, s:I, s:o}", "kernel",
                                             k->name, "pass", p->name, "dtype", ug_dtype_name(dtype), "shape",
                                             cli_shape_json(p, env),
                                             "ub_bytes", (json_int_t)e.ub_bytes, "variant", e.variant, "median_us",
                                             e.median_us, "default_variant", dflt >= 0 ? e.default_variant : NULL,
                                             "default_median_us", dflt >= 0 ? json_real(e.default_median_us) : json_null(),
                                             "rejected_ub", (json_int_t)rejected, "variants", vars));
  }
  rc = 0;
out:
  if (rc < 0 && !have_call) cli_error("tune: %s.%s: could not enumerate or bind the variants", k->name, p->name);
  if (have_call) cli_check_call_free(&call);
  for (int i = 0; i < UG_MAX_ARGS; i++) free(saved[i]);
  free(cand);
  free(vs);
  free(env);
  return rc;
}

/* s seconds as "40s", "12m" or "2.5h" */
static void duration(double s, char *text, size_t n) {
  if (s < 90) snprintf(text, n, "%.0fs", s);
  else if (s < 5400) snprintf(text, n, "%.0fm", s / 60);
  else snprintf(text, n, "%.1fh", s / 3600);
}

/* --shard i/n: the sweep's units (pass, dtype, shape, in sweep order) are
 * dealt round-robin; this run takes unit u when u % n == i - 1.
 * Every unit this run takes begins here: the progress prefix says where the
 * sweep is and, once a unit is done, when it will end at the pace so far;
 * a sweep that will take more than a minute says so once, on its first
 * finished unit, on any output. In a dry sweep (counting) a unit only adds
 * its candidates and its floor. */
static bool take_unit(tuner *T) {
  int u = T->units++;
  bool mine = !T->o->shard_n || u % T->o->shard_n == T->o->shard_i - 1;
  if (!mine) return false;
  T->taken++;
  if (T->counting) return true; /* the unit counts itself (tune_one, a composite's tuner) */
  const double now = cli_now();
  if (T->taken == 1) T->t0 = now;
  const int done = T->taken - 1;
  char left[32] = "";
  if (done > 0) {
    const double rest = (now - T->t0) / done * (T->total - done);
    char d[16];
    duration(rest, d, sizeof d);
    snprintf(left, sizeof left, ", about %s left", d);
    if (!T->estimated && (now - T->t0) / done * T->total > 60) {
      char all[16];
      duration((now - T->t0) / done * T->total, all, sizeof all);
      cli_progress_done();
      fprintf(stderr, "ubgen: tune: %d units (pass, dtype, shape); at the first one's pace about %s in all\n", T->total,
              all);
      T->estimated = true;
    }
  }
  snprintf(T->where, sizeof T->where, "[%d/%d%s]", T->taken, T->total, left);
  return true;
}

/* the tuner of c: the generic one, for an op with a "run" */
static const cli_composite_tuner *tuner_of(const ug_composite *c) { return c->run ? &cli_composite_tuner_generic : NULL; }

/* a composite op of k at --shape's shapes (the kernel's shape names) or
 * its "tune" cases, at --dtype's dtypes or its "tune" dtypes */
static int tune_composite(tuner *T, const ug_kernel *k, const ug_composite *c) {
  const cli_composite_tuner *tu = tuner_of(c);
  if (!tu) {
    if (!T->counting) fprintf(out, "\n%s.%s: declares no \"run\", so nothing runs it; skipped\n", k->name, c->name);
    return 0;
  }
  cli_tune_sink sink = {T->o, out, T->db, T->json, T->svg, &T->failures, T->where};
  int64_t *shapes = c->tune_shapes;
  int nshapes = c->ntune, rc = 0;
  if (T->o->shape) {
    const ug_pass *p = &k->passes[0];
    int64_t *envs;
    if (cli_shape_envs(p, T->o->shape, &envs, &nshapes) < 0) return -1;
    shapes = calloc((size_t)nshapes * (size_t)k->nshape + 1, sizeof *shapes);
    for (int i = 0; shapes && i < nshapes; i++)
      for (int j = 0; j < k->nshape; j++) {
        const int sym = ug_pass_sym(p, k->shape[j]);
        shapes[(size_t)i * (size_t)k->nshape + j] = sym < 0 ? 0 : envs[(size_t)i * (size_t)(p->nsyms + 1) + sym];
      }
    free(envs);
    if (!shapes) return -1;
  } else if (!nshapes && !T->counting) {
    fprintf(out, "\n%s.%s: no \"tune\" cases in the spec and no --shape; skipped\n", k->name, c->name);
  }
  const int reps = T->o->reps ? T->o->reps : tu->reps;
  for (int dt = 0; dt < UG_NDTYPES && !rc; dt++) {
    if (T->o->dtype_set ? !T->o->dtypes[dt] : !c->tune_dtypes[dt]) continue;
    for (int i = 0; i < nshapes && !rc; i++)
      if (take_unit(T)) {
        const int64_t *sh = shapes + (size_t)i * (size_t)k->nshape;
        if (!T->counting) rc = tu->tune(&sink, k, c, dt, sh, reps);
        else T->floor += tu->floor(k, c, dt, sh, reps, cli_cores(), &T->candidates);
      }
  }
  if (shapes != c->tune_shapes) free(shapes);
  return rc;
}

static int tune_pass(tuner *T, const ug_pass *p) {
  int64_t *envs = NULL;
  int nshapes = 0;
  if (T->o->shape && cli_shape_envs(p, T->o->shape, &envs, &nshapes) < 0) return -1;
  int rc = 0;
  for (int dt = 0; dt < UG_NDTYPES && !rc; dt++) {
    if (!p->dtypes[dt] || (T->o->dtype_set && !T->o->dtypes[dt])) continue;
    if (T->o->shape) {
      for (int i = 0; i < nshapes && !rc; i++) {
        ug_case cs;
        case_from_env(p, envs + (size_t)i * (size_t)(p->nsyms + 1), &cs);
        if (take_unit(T)) rc = tune_one(T, p, dt, &cs);
      }
    } else {
      if (!p->ntune_cases && !T->counting) fprintf(out, "\n%s.%s: no \"tune\" cases in the spec and no --shape; skipped\n", p->kernel->name, p->name);
      for (int c = 0; c < p->ntune_cases && !rc; c++)
        if (take_unit(T)) rc = tune_one(T, p, dt, &p->tune_cases[c]);
    }
  }
  free(envs);
  return rc;
}

/* every pass of a kernel, then its composite ops */
static int tune_kernel(tuner *T, const ug_kernel *k) {
  for (int j = 0; j < k->npasses; j++)
    if (tune_pass(T, &k->passes[j]) < 0) return EXIT_USAGE;
  for (int j = 0; j < k->ncomposites; j++)
    if (tune_composite(T, k, &k->composites[j]) < 0) return EXIT_USAGE;
  return EXIT_OK;
}

/* what the target and --kernel name, unit by unit: all, KERNEL.PASS,
 * KERNEL.OP (a composite op), or KERNELs (as list, emit and check name
 * them) */
static int sweep(tuner *T, const ug_specset *set) {
  const char *target = T->o->target;
  if (!target || (strcmp(target, "all") && !strchr(target, '.'))) {
    if (target && !ug_specset_find(set, target)) {
      char known[1024];
      cli_error("tune: no kernel named \"%s\"%s", target, cli_known_kernels(set, target, known, sizeof known));
      return EXIT_USAGE;
    }
    for (int i = 0; i < set->n; i++) {
      bool chosen = target && !strcmp(target, set->k[i]->name);
      for (int j = 0; j < T->o->nkernels; j++) chosen |= !strcmp(T->o->kernels[j], set->k[i]->name);
      if (chosen && tune_kernel(T, set->k[i]) != EXIT_OK) return EXIT_USAGE;
    }
    return EXIT_OK;
  }
  if (!strcmp(target, "all")) {
    for (int i = 0; i < set->n; i++)
      if (tune_kernel(T, set->k[i]) != EXIT_OK) return EXIT_USAGE;
    return EXIT_OK;
  }
  const char *dot = strchr(target, '.');
  for (int i = 0; i < set->n; i++) {
    const ug_kernel *ck = set->k[i];
    const ug_composite *c = strlen(ck->name) == (size_t)(dot - target) && !strncmp(ck->name, target, dot - target)
                                ? ug_spec_composite(ck, dot + 1)
                                : NULL;
    if (!c) continue;
    if (!tuner_of(c)) {
      cli_error("tune: %s is a composite op of kernel %s that declares no \"run\" in %s: nothing runs it", target,
                ck->name, ck->path);
      return EXIT_USAGE;
    }
    return tune_composite(T, ck, c) < 0 ? EXIT_USAGE : EXIT_OK;
  }
  const ug_kernel *k;
  const ug_pass *p;
  return cli_find_pass(set, target, &k, &p) < 0 || tune_pass(T, p) < 0 ? EXIT_USAGE : EXIT_OK;
}

int cli_cmd_tune(int argc, char **argv) {
  if (argc > 0 && !strcmp(argv[0], "merge")) return cli_cmd_tune_merge(argc - 1, argv + 1);
  cli_opts o;
  const int parsed = cli_parse(argc, argv, "tune", "specs ub margin kernel dtype shape backend db reps json svg shard no-reference dry-run timeout",
                               true, &o);
  if (parsed) return parsed < 0 ? EXIT_USAGE : EXIT_OK;
  if (!o.target && !o.nkernels) {
    cli_error("tune: which KERNEL, KERNEL.PASS, or all? (for example: ubgen tune rms_norm.fwd --dtype bf16)");
    return EXIT_USAGE;
  }
  ubg_config cfg = {0};
  if (o.backend) {
    if (!strcmp(o.backend, "aot")) cfg.backend = UBG_BACKEND_AOT;
    else if (!strcmp(o.backend, "tcc")) cfg.backend = UBG_BACKEND_TCC;
    else if (!strcmp(o.backend, "gcc")) cfg.backend = UBG_BACKEND_GCC;
    else {
      cli_error("tune: --backend \"%s\" is not one of aot, tcc, gcc", o.backend);
      return EXIT_USAGE;
    }
  }
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) return EXIT_USAGE;
  if (o.target && !strcmp(o.target, "all") && o.shape) {
    cli_error("tune: --shape names one pass's shape; give KERNEL.PASS with it, not all");
    ug_specset_free(&set);
    return EXIT_USAGE;
  }
  cli_export_spec_path(&o);
  cfg.ub_bytes = (size_t)o.budget.ub_bytes;
  cfg.safety_margin = o.budget.margin;
  /* forced variants are timed; no DB is read (none may exist at that path) */
  cfg.tuning_db = "/nonexistent/ubgen-tune-reads-no-db";
  ubg_ctx *ctx;
  ubg_status st = ubg_ctx_create(&cfg, &ctx);
  if (st != UBG_OK) {
    cli_error("tune: %s", ubg_ctx_error(NULL));
    ug_specset_free(&set);
    return EXIT_USAGE;
  }
  ug_tunedb db = {0};
  ug_tune_cpu_name(db.cpu, sizeof db.cpu);
  char path[4096], err[1024];
  /* --db, else $UBGEN_TUNING_DB, else where the runtime looks; refused
   * before the sweep if the save could not succeed (not a DB this version
   * reads, another machine's timings, its lock or directory unusable) */
  const char *named = o.db ? o.db : getenv("UBGEN_TUNING_DB");
  ug_tunedb_default_path(named, getenv("UBGEN_CACHE_DIR"), path, sizeof path);
  if (!named && !o.dry_run) { /* the library's own place, the cache directory: made as the library makes it */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    ug_diag d;
    if (slash && slash != dir) *slash = '\0';
    if (slash && slash != dir && ug_mkdir_private(dir, &d) < 0) {
      cli_error("tune: %s; nothing tuned", d.text);
      ubg_ctx_destroy(ctx);
      ug_specset_free(&set);
      return EXIT_USAGE;
    }
  }
  if (!o.dry_run && ug_tunedb_check_target(path, db.cpu, err, sizeof err) != 0) {
    cli_error("tune: %s; nothing tuned", err);
    ubg_ctx_destroy(ctx);
    ug_specset_free(&set);
    return EXIT_USAGE;
  }
  out = o.json ? stderr : stdout;
  cli_svg svg = {0};
  tuner T = {.o = &o, .ctx = ctx, .db = &db, .json = o.json ? json_array() : NULL, .svg = o.svg ? &svg : NULL};
  snprintf(T.shipped, sizeof T.shipped, "%s/templates", o.data_dir);
  /* a dry sweep counts the units this run takes (for the progress and the
   * estimate), then the sweep tunes them */
  T.counting = true;
  int rc = sweep(&T, &set);
  if (rc == EXIT_OK) {
    T.total = T.taken;
    char least[16];
    duration(T.floor, least, sizeof least);
    if (o.dry_run) {
      fprintf(out, "%d %s (pass, dtype, shape), %d %s: at least %s; nothing tuned (--dry-run)\n", T.total,
              T.total == 1 ? "unit" : "units", T.candidates, T.candidates == 1 ? "candidate" : "candidates", least);
    } else {
      T.units = T.taken = 0, T.counting = false;
      if (T.floor > 60)
        fprintf(stderr, "ubgen: tune: %d %s (pass, dtype, shape), %d candidates: at least %s, likely more\n",
                T.total, T.total == 1 ? "unit" : "units", T.candidates, least);
      rc = sweep(&T, &set);
    }
  }
  if (rc == EXIT_OK && o.shard_n)
    fprintf(out, "\nshard %d/%d: %d of the sweep's %d units (pass, dtype, shape)\n", o.shard_i, o.shard_n, T.taken,
            T.units);
  /* the units that finished are saved even when a later one failed: their timings stand */
  if (db.n) {
    int saved = ug_tunedb_merge_save(path, &db, err, sizeof err);
    if (saved < 0) {
      cli_error("tune: %s", err);
      if (rc == EXIT_OK) rc = saved == -2 ? EXIT_USAGE : EXIT_FAILED;
    } else {
      fprintf(out, "\n%d %s merged into %s%s\n", db.n, db.n == 1 ? "entry" : "entries", path,
              rc == EXIT_OK ? "" : " (the units that finished before the failure)");
    }
  }
  if (rc == EXIT_OK && T.svg && svg.n) {
    if (cli_svg_write(&svg, o.svg, err, sizeof err) < 0) {
      cli_error("tune: --svg %s: %s", o.svg, err);
      rc = EXIT_FAILED;
    } else {
      fprintf(out, "chart: %s\n", o.svg);
    }
  }
  cli_svg_free(&svg);
  if (T.json) {
    char *s = json_dumps(T.json, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) puts(s);
    free(s);
    json_decref(T.json);
  }
  if (rc == EXIT_OK && T.failures) {
    fprintf(out, "%d variants gave wrong results (listed above); none was chosen\n", T.failures);
    rc = EXIT_FAILED;
  }
  ug_tunedb_free(&db);
  if (T.ctx_gcc) ubg_ctx_destroy(T.ctx_gcc);
  ubg_ctx_destroy(ctx);
  cli_check_references_free();
  ug_specset_free(&set);
  return rc;
}
