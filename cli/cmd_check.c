/* ubgen check [KERNEL.PASS|all]: every variant that fits the budget is
 * compiled (a compile error fails it), then run on every case of the spec's
 * "check" section it applies to: against the kernel's reference (the C file
 * beside the spec, double precision, within the spec's tolerance) and, where
 * the spec says every variant gives the same bits, against the reference
 * variant (the default strategy's choice for the case) bit for bit. A kernel
 * without a reference fails unless --no-reference. Exit 1 on any failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/bind.h"
#include "check_ref.h"
#include "check_run.h"
#include "cli.h"
#include "../gen/strategy.h"

typedef struct {
  ubg_ctx *ctx;
  const cli_opts *o;
  char shipped[4200]; /* the shipped templates (ubgen_ref.h) */
  int runs, failures;
} checker;

static void fail(checker *C, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(checker *C, const char *fmt, ...) {
  cli_progress_done();
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  C->failures++;
}

/* msg with the variant's name taken out: what two variants' errors share */
static void same_error(const char *msg, const char *variant, char *out, size_t n) {
  size_t used = 0, vlen = strlen(variant);
  out[0] = '\0';
  for (const char *p = msg; *p && used + 1 < n;) {
    if (vlen && !strncmp(p, variant, vlen)) {
      p += vlen;
      continue;
    }
    out[used++] = *p++;
  }
  out[used] = '\0';
}

/* the variants of one dtype that fit the budget, each compiled now; broken[i]
 * when variant i does not compile */
static void compile_all(checker *C, const ug_pass *p, int dt, const ug_variant *vs, int nv, int64_t usable, bool *broken,
                       int *nfit) {
  const ug_kernel *k = p->kernel;
  *nfit = 0;
  /* a template's error is every variant's: said once, then counted */
  char first[2048] = "", first_name[200] = "";
  int same = 0;
  for (int i = 0; i < nv; i++) {
    broken[i] = vs[i].footprint > usable;
    if (broken[i]) continue;
    (*nfit)++;
    cli_progress("check %s.%s: compile %d/%d %s", k->name, p->name, i + 1, nv, vs[i].name);
    if (ubg_prepare(C->ctx, k->name, p->name, (ubg_dtype)dt, vs[i].name) != UBG_OK) {
      broken[i] = true;
      char msg[2048];
      same_error(ubg_ctx_error(C->ctx), vs[i].name, msg, sizeof msg);
      if (first[0] && !strcmp(msg, first)) {
        same++;
        C->failures++;
        continue;
      }
      fail(C, "FAIL %s: %s\n", vs[i].name, ubg_ctx_error(C->ctx));
      snprintf(first, sizeof first, "%s", msg);
      snprintf(first_name, sizeof first_name, "%s", vs[i].name);
    }
  }
  if (same) printf("FAIL %d more %s of %s.%s: the same error as %s\n", same, same == 1 ? "variant" : "variants", k->name,
                   p->name, first_name);
}

/* one case at one dtype: the reference variant first, then every other one */
static int check_case(checker *C, const ug_pass *p, int dt, const ug_variant *vs, int nv, const bool *broken,
                      int64_t usable, cli_check_ref_fn ref, int c) {
  const ug_kernel *k = p->kernel;
  const ug_case *cs = &p->cases[c];
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  int *order = calloc((size_t)nv + 1, sizeof *order);
  void *saved[UG_MAX_ARGS] = {0};
  cli_check_call call;
  char msg[1600], where[600];
  ug_diag d;
  int rc = -1, n = 0, base = -1;
  if (!env || !order) goto out;
  snprintf(where, sizeof where, "case %d (%s:%d)", c, k->path, cs->at.line);
  /* the reference variant: what the library runs for this shape untuned */
  ug_case_env(p, cs, env);
  ug_choice ch;
  if (ug_default_strategy(p, vs, nv, env, usable, &ch, &d) < 0) ch.chosen = -1;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < nv; i++) {
      if (broken[i] || (pass == 0) != (i == ch.chosen)) continue;
      int failed;
      ug_case_env(p, cs, env);
      if (ug_bind(p, &vs[i].pt, env, &failed, &d) == 0) order[n++] = i; /* applies to this case's shape */
    }
  if (n == 0) {
    rc = 0;
    goto out;
  }
  if (cli_check_call_make(&call, p, dt, cs, 0x5eed0000u + (uint64_t)c, msg, sizeof msg) < 0) {
    fail(C, "FAIL %s: %s\n", where, msg);
    goto out;
  }
  if (ref && cli_check_call_reference(&call, ref, C->o->timeout, msg, sizeof msg) < 0) {
    fail(C, "FAIL %s: %s\n", where, msg);
    rc = 0; /* a failure of the user's code, counted: the check goes on */
    goto free_call;
  }
  for (int j = 0; j < n; j++) {
    const ug_variant *v = &vs[order[j]];
    cli_progress("check %s.%s %s: %s", k->name, p->name, where, v->name);
    int s = ubg_set_variant(C->ctx, k->name, p->name, v->name);
    if (s) snprintf(msg, sizeof msg, "%s: %s", ubg_status_str((ubg_status)s), ubg_ctx_error(C->ctx));
    cli_check_call_reset(&call);
    if (!s) s = cli_check_call_run_isolated(C->ctx, &call, C->o->timeout, msg, sizeof msg);
    C->runs++;
    char head[800];
    snprintf(head, sizeof head, "%s %s", v->name, where);
    if (s) {
      fail(C, "FAIL %s: %s\n", head, msg);
      continue;
    }
    if (ref && cli_check_call_compare(&call, msg, sizeof msg) != 0) {
      fail(C, "FAIL %s: %s\n", head, msg);
      continue;
    }
    /* the bits to match: the first variant that is right, the reference variant unless it is not */
    if (base < 0) {
      if (cli_check_call_save(&call, saved) < 0) goto free_call;
      base = order[j];
    } else if (p->bitwise && cli_check_call_same_bits(&call, saved, msg, sizeof msg) != 0) {
      fail(C, "FAIL %s: %s (%s), but the spec says every variant gives the same bits\n", head, msg, vs[base].name);
    }
  }
  rc = 0;
free_call:
  cli_check_call_free(&call);
out:
  for (int i = 0; i < UG_MAX_ARGS; i++) free(saved[i]);
  free(order);
  free(env);
  return rc;
}

static int check_pass(checker *C, const ug_pass *p) {
  const ug_kernel *k = p->kernel;
  const int failures0 = C->failures, runs0 = C->runs;
  cli_check_ref_fn ref = NULL;
  char msg[1600];
  int has = cli_check_reference(p, C->shipped, &ref, msg, sizeof msg);
  if (has < 0) {
    fail(C, "FAIL %s.%s: %s\n", k->name, p->name, msg);
  } else if (has == 1 && !C->o->no_reference) {
    fail(C, "FAIL %s.%s: no reference: %s; or run with --no-reference to check the variants only against each other\n",
         k->name, p->name, msg);
  }
  if (!p->ncases) printf("%s.%s: no \"check\" section in the spec: variants compiled, none run\n", k->name, p->name);
  int64_t usable = ug_budget_usable(&C->o->budget, k);
  int variants = 0, over = 0;
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    if (!p->dtypes[dt] || (C->o->dtype_set && !C->o->dtypes[dt])) continue;
    ug_variant *vs;
    int nv, nfit;
    ug_diag d;
    if (ug_enumerate(p, dt, &vs, &nv, &d) < 0) {
      cli_diag(&d);
      return -1;
    }
    bool *broken = calloc((size_t)nv + 1, sizeof *broken);
    int rc = broken ? 0 : -1;
    if (broken) compile_all(C, p, dt, vs, nv, usable, broken, &nfit);
    for (int c = 0; c < p->ncases && rc == 0; c++) rc = check_case(C, p, dt, vs, nv, broken, usable, ref, c);
    if (rc == 0) variants += nfit, over += nv - nfit;
    free(broken);
    free(vs);
    if (rc < 0) return -1;
  }
  ubg_set_variant(C->ctx, k->name, p->name, NULL);
  cli_progress_done();
  printf("%s.%s: %d variants, %d runs, %d failed; checked against %s%s", k->name, p->name, variants, C->runs - runs0,
         C->failures - failures0,
         ref ? "the reference and the reference variant's bits" : p->bitwise ? "the reference variant's bits only" : "nothing but each other's success",
         over ? "" : "\n");
  if (over) printf(" (%d variants over the UB budget not run)\n", over);
  return 0;
}

int cli_cmd_check(int argc, char **argv) {
  cli_opts o;
  const int parsed = cli_parse(argc, argv, "check", "specs ub margin kernel dtype no-reference timeout", true, &o);
  if (parsed) return parsed < 0 ? EXIT_USAGE : EXIT_OK;
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) return EXIT_USAGE;
  cli_export_spec_path(&o);
  ubg_config cfg = {0};
  cfg.ub_bytes = (size_t)o.budget.ub_bytes;
  cfg.safety_margin = o.budget.margin;
  checker C = {.o = &o};
  snprintf(C.shipped, sizeof C.shipped, "%s/templates", o.data_dir);
  if (ubg_ctx_create(&cfg, &C.ctx) != UBG_OK) {
    cli_error("%s", ubg_ctx_error(NULL)); /* "file:line:col: what" when a spec is at fault: the file comes first */
    ug_specset_free(&set);
    return EXIT_USAGE;
  }
  int rc = EXIT_OK;
  /* what to check: KERNEL.PASS, a KERNEL's passes (as the target or
   * --kernel, which cli_load_specs checked), or every kernel */
  const bool all = (!o.target || !strcmp(o.target, "all")) && !o.nkernels;
  const ug_kernel *k;
  const ug_pass *p;
  if (o.target && strchr(o.target, '.')) {
    if (cli_find_pass(&set, o.target, &k, &p) < 0 || check_pass(&C, p) < 0) rc = EXIT_USAGE;
  } else if (o.target && strcmp(o.target, "all") && !ug_specset_find(&set, o.target)) {
    char known[1024];
    cli_error("check: no kernel named \"%s\"%s", o.target, cli_known_kernels(&set, o.target, known, sizeof known));
    rc = EXIT_USAGE;
  }
  for (int i = 0; i < set.n && rc == EXIT_OK && !(o.target && strchr(o.target, '.')); i++) {
    bool chosen = all || (o.target && !strcmp(o.target, set.k[i]->name));
    for (int j = 0; j < o.nkernels; j++) chosen |= !strcmp(o.kernels[j], set.k[i]->name);
    for (int j = 0; j < set.k[i]->npasses && rc == EXIT_OK && chosen; j++)
      if (check_pass(&C, &set.k[i]->passes[j]) < 0) rc = EXIT_USAGE;
  }
  if (rc == EXIT_OK) {
    printf("check: %d %s, %d failed\n", C.runs, C.runs == 1 ? "run" : "runs", C.failures);
    if (C.failures) rc = EXIT_FAILED;
  }
  ubg_ctx_destroy(C.ctx);
  cli_check_references_free();
  ug_specset_free(&set);
  return rc;
}
