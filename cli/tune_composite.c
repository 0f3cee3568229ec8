/* `ubgen tune KERNEL.OP`: the variants of a composite op with a "run", for
 * one dtype and shape, as whole calls (ubg_launch of the op by name) on
 * one context, each candidate forced by name with ubg_set_variant. The
 * candidates: the first axis (the rows of a chunk) at its default, then
 * at powers of two from 16 to the rows (at most 4096), each with every
 * value of the named axes that runs the dtype. Every candidate is checked
 * against the default first: the same bits, or within the spec's "tune"
 * "tolerance" for a named value that computes otherwise (a library's
 * GEMMs). The calls leave out the optional tensors "omit" names; inputs
 * are uniform in [-0.05, 0.05], index tensors uniform in their range. The
 * DB entry is (kernel, op, the kernel's shape bucketed, the variant). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/composite_plan.h"
#include "../templates/ubgen_ref.h"
#include "../gen/strbuf.h"
#include "isolate.h"
#include "shape_arg.h"
#include "tune_composite.h"
#include "tune_timing.h"
#include "../gen/ckd.h"

enum { MAX_CAND = 48, MAX_ROWS_CAND = 12, MAX_CHUNK = 4096 };
static const double MAX_SCRATCH = 256.0 * 1024 * 1024; /* bytes of scratch a candidate may take */
/* a rate no core's AVX-512 GEMM reaches: the floor of a call of "flops" */
static const double FASTEST_FLOPS_PER_CORE_S = 5e11;
/* and a rate of bytes no core moves: the floor of a call without "flops" */
static const double FASTEST_BYTES_PER_CORE_S = 2.5e11;

typedef struct {
  int64_t value[RT_COMP_AXES];
  char name[UG_MAX_VARIANT_NAME + 1];
  int tol; /* the tolerance it is held to, -1: the default's bits */
  bool failed, wrong, noted; /* noted: its failure is said once for its named value */
  char msg[300];
} cand;

/* one call's tensors and values, by the op's arguments */
typedef struct {
  const ug_kernel *k;
  const ug_composite *c;
  int dtype;
  int64_t *env;
  ubg_arg args[UG_MAX_ARGS];
  int nargs;
  void *mem[UG_MAX_ARGS];     /* each tensor, NULL where left out (shared with a child that verifies) */
  size_t mem_bytes[UG_MAX_ARGS];
  void *first[UG_MAX_ARGS];   /* the outputs of the default candidate */
  int64_t bytes[UG_MAX_ARGS];
  ubg_ctx *ctx;
  cand *cd;
  int reps, good;
  const char *where;
} run;

/* the env of a call at the kernel's shape: the op's ints at their
 * defaults, its tensors there but those "omit" names */
static int64_t *shape_env(const ug_kernel *k, const ug_composite *c, const int64_t *shape) {
  const ug_pass *call = c->call;
  ug_buf b = {0};
  for (int i = 0; i < k->nshape; i++) ug_buf_printf(&b, "%s%s=%lld", i ? "," : "", k->shape[i], (long long)shape[i]);
  for (int i = 0; i < call->nargs; i++)
    if (c->tune_omit[i]) ug_buf_printf(&b, ",has_%s=0", call->args[i].name);
  int64_t *env = calloc((size_t)call->nsyms + 1, sizeof *env);
  if (env && cli_shape_env(call, ug_buf_str(&b), env) < 0) free(env), env = NULL;
  ug_buf_free(&b);
  return env;
}

/* the default first, then the rows in powers of two, each with the named values that run the dtype */
static int candidates(const ug_kernel *k, const ug_composite *c, int dtype, const int64_t *shape, const int64_t *env,
                      cand *cd) {
  int64_t rows = 1, dflt = 1;
  ug_expr_err err;
  if (ug_expr_eval(c->run->rows, env, &rows, &err) < 0 || rows < 1) rows = 1;
  if (ug_comp_default(&c->axes[0], shape, &dflt) < 0 || dflt > rows) dflt = rows;
  if (dflt < 1) dflt = 1;
  (void)k;
  int64_t chunks[MAX_ROWS_CAND];
  int nc = 0;
  chunks[nc++] = dflt;
  for (int64_t r = 16; r <= rows && r <= MAX_CHUNK && nc < MAX_ROWS_CAND; r *= 2)
    if (r != dflt && r >= c->axes[0].min && r <= c->axes[0].max) chunks[nc++] = r;
  int n = 0;
  /* the named axes at the runtime's defaults (a preferred value, oneDNN's GEMMs), as a call without a DB
   * runs: candidate 0 is what tuning must beat; then the other values of one named axis at a time */
  int64_t base[RT_COMP_AXES + 1] = {0};
  for (int i = 1; i < c->naxes; i++)
    if (c->axes[i].values) base[i] = rt_run_axis_default(c, i, (ubg_dtype)dtype);
  int named[RT_COMP_AXES * 16 + 1][2], nn = 0;
  named[nn][0] = -1, named[nn++][1] = 0;
  for (int i = 1; i < c->naxes; i++)
    for (int v = 0; c->axes[i].values && v < c->axes[i].nvalues && nn < RT_COMP_AXES * 16; v++)
      if (v != base[i] && rt_run_axis_runs(c, i, v, (ubg_dtype)dtype)) named[nn][0] = i, named[nn++][1] = v;
  for (int j = 0; j < nn; j++)
    for (int r = 0; r < nc && n < MAX_CAND; r++) {
      cand *x = &cd[n++];
      memset(x, 0, sizeof *x);
      memcpy(x->value, base, sizeof x->value < sizeof base ? sizeof x->value : sizeof base);
      x->value[0] = chunks[r];
      if (named[j][0] >= 0) x->value[named[j][0]] = named[j][1];
      ug_buf b = {0};
      ug_buf_printf(&b, "%s=%lld", c->axes[0].name, (long long)chunks[r]);
      for (int i = 1; i < c->naxes; i++)
        if (c->axes[i].values && x->value[i]) ug_buf_printf(&b, ",%s=%s", c->axes[i].name, c->axes[i].values[x->value[i]]);
      /* its bits may differ from the default's where its named value, or the default's, has a tolerance */
      x->tol = -1;
      for (int pass = 0; pass < 2 && x->tol < 0; pass++)
        for (int i = 1; i < c->naxes && x->tol < 0; i++) {
          const int64_t v = pass ? base[i] : x->value[i];
          for (int t = 0; c->axes[i].values && t < c->ntune_tol; t++)
            if (!strcmp(c->tune_tol_value[t], c->axes[i].values[v])) x->tol = t;
        }
      snprintf(x->name, sizeof x->name, "%s", ug_buf_str(&b));
      ug_buf_free(&b);
    }
  return n;
}

/* the tensors of a call: inputs filled, outputs zeroed; -1 out of memory */
static int make_call(run *r) {
  const ug_pass *call = r->c->call;
  uint64_t seed = 0x5eedf1ceull;
  for (int i = 0; i < call->nargs; i++) {
    const ug_arg *a = &call->args[i];
    ubg_arg *g = &r->args[r->nargs++];
    g->name = a->name;
    if (a->kind == UG_ARG_INT) {
      g->kind = UBG_ARG_I64, g->v.i = r->env[call->sym_of_arg[i]];
      continue;
    }
    if (a->kind == UG_ARG_FLOAT) {
      g->kind = UBG_ARG_F64, g->v.f = a->has_dflt ? a->dflt : 0.0;
      continue;
    }
    g->kind = UBG_ARG_PTR, g->v.p = NULL;
    if (!r->env[call->sym_of_arg[i]]) continue;
    const size_t es = ug_elem_bytes(a->elem, r->dtype);
    int64_t n = 1, d;
    ug_expr_err err;
    for (int j = 0; j < a->rank; j++)
      if (ug_expr_eval(a->shape[j], r->env, &d, &err) < 0 || ug_ckd_mul(&n, n, d) || n > (int64_t)(PTRDIFF_MAX / 8))
        return -1;
    r->bytes[i] = n * (int64_t)es;
    r->mem_bytes[i] = (size_t)(n > 0 ? n : 1) * es;
    if (!(r->mem[i] = cli_shared_alloc(r->mem_bytes[i]))) return -1;
    g->v.p = r->mem[i];
  }
  /* every tensor allocated before any is filled: a shape too large fails at once */
  for (int i = 0; i < call->nargs; i++) {
    const ug_arg *a = &call->args[i];
    if (!r->mem[i] || a->role == UG_ROLE_OUT) continue;
    const size_t es = ug_elem_bytes(a->elem, r->dtype);
    const int64_t n = r->bytes[i] / (int64_t)es;
    int64_t lo = 0, hi = 1;
    ug_expr_err err;
    if (a->range_lo && (ug_expr_eval(a->range_lo, r->env, &lo, &err) < 0 || ug_expr_eval(a->range_hi, r->env, &hi, &err) < 0))
      lo = 0, hi = 1;
    for (int64_t e = 0; e < n; e++) {
      seed = seed * 6364136223846793005ull + 1;
      const double u = (double)(seed >> 40) / (double)(1 << 24);
      if (a->range_lo) {
        const int64_t v = lo + (int64_t)(u * (double)(hi - lo));
        if (es == 8) ((int64_t *)r->mem[i])[e] = v;
        else if (es == 4) ((int32_t *)r->mem[i])[e] = (int32_t)v;
        else ((uint8_t *)r->mem[i])[e] = (uint8_t)v;
      } else if (ug_elem_dtype(a->elem, r->dtype) >= 0) { /* REF_F32... are ubg_dtype's values */
        ref_store(r->mem[i], e, ug_elem_dtype(a->elem, r->dtype), (u - 0.5) * 0.1);
      }
    }
  }
  return 0;
}

static ubg_status call_one(run *r, int c) {
  ubg_status s = ubg_set_variant(r->ctx, r->k->name, r->c->name, r->cd[c].name);
  return s ? s : ubg_launch(r->ctx, r->k->name, r->c->name, (ubg_dtype)r->dtype, r->args, (size_t)r->nargs);
}

static void run_one(void *ud, int c) { call_one(ud, c); }

/* candidate c's call in a child process (cli/isolate.h): its status, its
 * message or the variant that ran into said */
enum { SAID = 2048 };
typedef struct {
  run *r;
  int c;
  char *said;
} child_call;

static int call_in_child(void *arg) {
  const child_call *cc = arg;
  const ubg_status s = call_one(cc->r, cc->c);
  const char *t = s ? ubg_ctx_error(cc->r->ctx) : ubg_ctx_last_variant(cc->r->ctx);
  snprintf(cc->said, SAID, "%s", t ? t : "");
  return (int)s;
}

static void show_round(void *ud, int round) {
  const run *r = ud;
  cli_progress("%s tune %s.%s %s: round %d/%d, %d candidates", r->where, r->k->name, r->c->name,
               ug_dtype_name(r->dtype), round + 1, r->reps, r->good);
}

/* a float type's output i against the default's, within tolerance t; the first miss into msg */
static bool close_to(const run *r, int i, const ug_tol *tol, bool scaled, char *msg, size_t nmsg) {
  const ug_arg *a = &r->c->call->args[i];
  const int dt = ug_elem_dtype(a->elem, r->dtype);
  const int64_t n = r->bytes[i] / (int64_t)ug_elem_bytes(a->elem, r->dtype);
  double big = 0, atol = tol->atol;
  for (int64_t e = 0; e < n && scaled; e++) big = fmax(big, fabs(ref_load(r->first[i], e, dt)));
  if (scaled) atol *= big;
  for (int64_t e = 0; e < n; e++) {
    const double g = ref_load(r->mem[i], e, dt), w = ref_load(r->first[i], e, dt);
    if (!(fabs(g - w) <= atol + tol->rtol * fabs(w))) {
      snprintf(msg, nmsg, "%s[%lld] = %g, the default's %g", a->name, (long long)e, g, w);
      return false;
    }
  }
  return true;
}

/* candidate c's outputs against the default's (c > 0) or kept (c = 0) */
static bool verify(run *r, int c) {
  const ug_pass *call = r->c->call;
  cand *x = &r->cd[c];
  for (int i = 0; i < call->nargs; i++) {
    const ug_arg *a = &call->args[i];
    if (!r->mem[i] || a->role == UG_ROLE_IN) continue;
    if (c == 0) {
      if (!(r->first[i] = malloc((size_t)(r->bytes[i] > 0 ? r->bytes[i] : 1)))) return false;
      memcpy(r->first[i], r->mem[i], (size_t)r->bytes[i]);
      continue;
    }
    const bool floats = ug_elem_dtype(a->elem, r->dtype) >= 0;
    if (x->tol >= 0 && floats) {
      if (!close_to(r, i, &r->c->tune_tol[x->tol], r->c->tune_tol_scaled[x->tol], x->msg, sizeof x->msg)) return false;
    } else if (x->tol < 0 && memcmp(r->mem[i], r->first[i], (size_t)r->bytes[i])) {
      snprintf(x->msg, sizeof x->msg, "its bits of %s differ from the default's", a->name);
      return false;
    }
  }
  return true;
}

static double floor_of(const ug_kernel *k, const ug_composite *c, int dtype, const int64_t *shape, int reps, int cores,
                       int *ncand) {
  int64_t *env = shape_env(k, c, shape);
  if (!env) return 0;
  cand cd[MAX_CAND];
  const int n = candidates(k, c, dtype, shape, env, cd);
  *ncand += n;
  /* only the candidates at the named axes' defaults count: the others may not run here */
  int plain = 0;
  for (int i = 0; i < n; i++) {
    bool dflt = true;
    for (int a = 1; a < c->naxes; a++)
      dflt &= !c->axes[a].values || cd[i].value[a] == rt_run_axis_default(c, a, (ubg_dtype)dtype);
    plain += dflt;
  }
  double call_floor = 0;
  int64_t v;
  ug_expr_err err;
  if (c->tune_flops && ug_expr_eval(c->tune_flops, env, &v, &err) == 0) {
    call_floor = (double)v / (FASTEST_FLOPS_PER_CORE_S * cores);
  } else { /* the bytes of its tensors */
    double bytes = 0;
    for (int i = 0; i < c->call->nargs; i++) {
      const ug_arg *a = &c->call->args[i];
      if (a->kind != UG_ARG_TENSOR || !env[c->call->sym_of_arg[i]]) continue;
      double e = (double)ug_elem_bytes(a->elem, dtype);
      for (int j = 0; j < a->rank; j++) e *= ug_expr_eval(a->shape[j], env, &v, &err) < 0 ? 0 : (double)v;
      bytes += e;
    }
    call_floor = bytes / (FASTEST_BYTES_PER_CORE_S * cores);
  }
  free(env);
  return cli_time_floor(plain, reps, call_floor);
}

static int tune(const cli_tune_sink *s, const ug_kernel *k, const ug_composite *c, int dtype, const int64_t *shape,
                int reps) {
  FILE *out = s->out;
  char shape_s[300] = "";
  for (int i = 0; i < k->nshape; i++)
    snprintf(shape_s + strlen(shape_s), sizeof shape_s - strlen(shape_s), "%s%s=%lld", i ? "," : "", k->shape[i],
             (long long)shape[i]);
  fprintf(out, "\n%s.%s  %s  %s  (whole calls)\n", k->name, c->name, ug_dtype_name(dtype), shape_s);
  run r;
  memset(&r, 0, sizeof r);
  r.k = k, r.c = c, r.dtype = dtype, r.reps = reps, r.where = s->where;
  cand cd[MAX_CAND];
  r.cd = cd;
  int rc = -1;
  const int timeout = s->o->timeout;
  char *said = cli_shared_alloc(SAID);
  if (!said) {
    cli_error("tune %s.%s: out of memory", k->name, c->name);
    goto done;
  }
  if (!(r.env = shape_env(k, c, shape))) return -1;
  const int n = candidates(k, c, dtype, shape, r.env, cd);
  if (make_call(&r) < 0) {
    cli_error("tune %s.%s: out of memory for the tensors of %s", k->name, c->name, shape_s);
    goto done;
  }
  ubg_config cfg = {0};
  cfg.ub_bytes = (size_t)s->o->budget.ub_bytes;
  cfg.safety_margin = s->o->budget.margin;
  cfg.tuning_db = "/nonexistent/ubgen-tune-reads-no-db";
  if (ubg_ctx_create(&cfg, &r.ctx)) {
    cli_error("tune %s.%s: %s", k->name, c->name, ubg_ctx_error(NULL));
    goto done;
  }
  /* verification, and the warm-up */
  const rt_composite op = {k->name, c->name};
  bool missing[RT_COMP_AXES][16] = {{false}};
  char backend[16] = "aot";
  /* the default's outputs are what the others are verified against: none once it failed */
  for (int i = 0; i < n && !cd[0].failed; i++) {
    cand *x = &cd[i];
    cli_progress("%s tune %s.%s %s: verify %d/%d %s", s->where, k->name, c->name, ug_dtype_name(dtype), i + 1, n, x->name);
    int na = -1; /* its named axis not at the default */
    for (int a = 1; a < c->naxes; a++)
      if (c->axes[a].values && x->value[a]) na = a;
    if (na >= 0 && missing[na][x->value[na]]) {
      x->failed = x->noted = true;
      continue;
    }
    rt_comp_plan plan;
    if (ubg_set_variant(r.ctx, k->name, c->name, x->name) == UBG_OK &&
        rt_composite_plan(r.ctx, &op, (ubg_dtype)dtype, r.env, &plan) == UBG_OK && (double)plan.total > MAX_SCRATCH) {
      x->failed = true;
      snprintf(x->msg, sizeof x->msg, "skipped: its %lld bytes of scratch are over %.0f MiB", (long long)plan.total,
               MAX_SCRATCH / 1048576);
      continue;
    }
    /* the user's code in a child process: a crash or a hang fails the candidate, not the sweep */
    const child_call cc = {&r, i, said};
    char why[256];
    const int st = cli_isolated(call_in_child, (void *)&cc, timeout, why, sizeof why);
    if (st) {
      x->failed = true;
      snprintf(x->msg, sizeof x->msg, "%s", st < 0 ? why : said);
      if (na >= 0) { /* one note for them all: this build or CPU has no such value */
        missing[na][x->value[na]] = x->noted = true;
        fprintf(out, "  not timed: %s=%s (%s)\n", c->axes[na].name, c->axes[na].values[x->value[na]], x->msg);
      }
      continue;
    }
    if (i == 0) { /* the code that served it: "...@aot;..." */
      const char *at = strchr(said, '@');
      snprintf(backend, sizeof backend, "%.*s", at ? (int)strcspn(at + 1, ";") : 3, at ? at + 1 : "aot");
    }
    x->wrong = !verify(&r, i);
    if (i == 0 && x->wrong) {
      cli_error("tune %s.%s: out of memory", k->name, c->name);
      goto done;
    }
    r.good += !x->wrong;
  }
  cli_progress_done();
  if (cd[0].failed) {
    cli_error("tune %s.%s %s: the default fails: %s", k->name, c->name, ug_dtype_name(dtype), cd[0].msg);
    goto done;
  }
  cli_timed timed[MAX_CAND];
  memset(timed, 0, sizeof timed);
  for (int i = 0; i < n; i++) {
    timed[i].wrong = cd[i].failed || cd[i].wrong;
    if (cd[i].failed && !cd[i].noted) fprintf(out, "  not timed %s: %s\n", cd[i].name, cd[i].msg);
    else if (cd[i].wrong) fprintf(out, "  WRONG %s: %s (never chosen)\n", cd[i].name, cd[i].msg), (*s->failures)++;
  }
  /* each candidate timed runs once untimed here first: its code compiled and warm in this process */
  for (int i = 0; i < n; i++)
    if (!timed[i].wrong) run_one(&r, i);
  if (cli_time_candidates(timed, n, reps, run_one, show_round, &r) < 0) goto done;
  cli_progress_done();
  /* the fastest, unless its win over the default (candidate 0) is inside the noise */
  int fastest;
  double noise;
  int best = cli_pick(timed, n, 0, &fastest, &noise);
  if (best < 0) best = 0;
  const double base = timed[0].median;
  fprintf(out, "  %-32s %12s %9s\n", "candidate", "median ms", "vs default");
  for (int i = 0; i < n; i++) {
    if (timed[i].wrong) continue;
    fprintf(out, "  %-32s %12.3f %8.2fx%s%s%s\n", cd[i].name, timed[i].median * 1e3, base / timed[i].median,
            i == fastest ? "  fastest" : "", i == 0 ? "  default" : "", timed[i].pruned ? "  (timed once)" : "");
  }
  if (best != fastest)
    fprintf(out, "  tuned %s: the default; the fastest, %s, is %.2fx it, inside the noise (+-%.1f%%)\n", cd[best].name,
            cd[fastest].name, base / timed[fastest].median, 100 * noise);
  else
    fprintf(out, "  tuned %s: %.3f ms, %.2fx the default %s (%.3f ms)\n", cd[best].name, timed[best].median * 1e3,
            base / timed[best].median, cd[0].name, base * 1e3);
  if (s->svg) { /* time against the first axis, a series per named value */
    char title[400];
    snprintf(title, sizeof title, "%s.%s %s %s: tuned %s", k->name, c->name, ug_dtype_name(dtype), shape_s, cd[best].name);
    if (cli_svg_panel_add(s->svg, title, c->axes[0].name, 0) < 0) goto done;
    for (int i = 0; i < n; i++) {
      if (timed[i].wrong) continue;
      const char *comma = strchr(cd[i].name, ',');
      if (cli_svg_point_add(s->svg, comma ? comma + 1 : "default", cd[i].value[0], timed[i].median * 1e6, i == best,
                            i == 0) < 0)
        goto done;
    }
  }
  ug_tune_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.kernel, sizeof e.kernel, "%s", k->name);
  snprintf(e.pass, sizeof e.pass, "%s", c->name);
  e.dtype = dtype;
  e.nshape = k->nshape;
  json_t *shape_j = json_object();
  for (int i = 0; i < k->nshape; i++) {
    snprintf(e.shape_names[i], sizeof e.shape_names[i], "%s", k->shape[i]);
    e.shape[i] = ug_tune_bucket(shape[i]);
    json_object_set_new(shape_j, k->shape[i], json_integer((json_int_t)shape[i]));
  }
  e.ub_bytes = s->o->budget.ub_bytes;
  snprintf(e.variant, sizeof e.variant, "%s", cd[best].name);
  snprintf(e.backend, sizeof e.backend, "%s", backend);
  e.median_us = timed[best].median * 1e6;
  snprintf(e.default_variant, sizeof e.default_variant, "%s", cd[0].name);
  e.default_median_us = base * 1e6;
  e.candidates = r.good;
  if (ug_tunedb_put(s->db, &e) < 0) {
    json_decref(shape_j);
    goto done;
  }
  if (s->json) {
    json_t *vars = json_array();
    for (int i = 0; i < n; i++)
      json_array_append_new(vars, json_pack("{s:s, s:o, s:b}", "variant", cd[i].name, "median_us",
                                            timed[i].wrong ? json_null() : json_real(timed[i].median * 1e6), "wrong",
                                            cd[i].wrong));
    json_array_append_new(s->json, json_pack("{s:s, s:s, s:s, s:o, s:I, s:s, s:f, s:s, s:f, s:o}", "kernel", k->name,
                                             "pass", c->name, "dtype", ug_dtype_name(dtype), "shape", shape_j,
                                             "ub_bytes", (json_int_t)e.ub_bytes, "variant", e.variant, "median_us",
                                             e.median_us, "default_variant", e.default_variant, "default_median_us",
                                             e.default_median_us, "variants", vars));
  } else {
    json_decref(shape_j);
  }
  rc = 0;
done:
  if (r.ctx) ubg_ctx_destroy(r.ctx);
  for (int i = 0; i < UG_MAX_ARGS; i++) cli_shared_free(r.mem[i], r.mem_bytes[i]), free(r.first[i]);
  cli_shared_free(said, SAID);
  free(r.env);
  return rc;
}

/* a call takes 0.1 s and more: three rounds */
const cli_composite_tuner cli_composite_tuner_generic = {3, tune, floor_of};
