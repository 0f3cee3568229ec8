/* ubgen check [KERNEL.PASS|all]: every variant that fits the budget, on
 * every case of the spec's "check" section it applies to, against the
 * double-precision reference. Exit 1 when any comparison fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "check_run.h"
#include "cli.h"

static int check_pass(ubg_ctx *ctx, const cli_opts *o, const ug_pass *p, int *nrun, int *nfail) {
  const ug_kernel *k = p->kernel;
  if (!p->ncases) {
    printf("%s.%s: no \"check\" section in the spec; skipped\n", k->name, p->name);
    return 0;
  }
  const ref_entry *ref = ref_find(k->name, p->name);
  if (!ref) {
    printf("%s.%s: no reference implementation is built into ubgen; skipped\n", k->name, p->name);
    return 0;
  }
  int64_t usable = ug_budget_usable(&o->budget, k);
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  if (!env) return -1;
  int run = 0, fail = 0, variants = 0, over = 0;
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    if (!p->dtypes[dt] || (o->dtype_set && !o->dtypes[dt])) continue;
    ug_variant *vs;
    int nv;
    ug_diag d;
    if (ug_enumerate(p, dt, &vs, &nv, &d) < 0) {
      cli_diag(&d);
      free(env);
      return -1;
    }
    for (int i = 0; i < nv; i++) {
      const ug_variant *v = &vs[i];
      if (v->footprint > usable) {
        over++;
        continue;
      }
      variants++;
      cli_progress("check %s.%s %s (%d/%d)", k->name, p->name, v->name, i + 1, nv);
      ubg_status s = ubg_set_variant(ctx, k->name, p->name, v->name);
      if (s) {
        cli_progress_done();
        printf("FAIL %s: %s: %s\n", v->name, ubg_status_str(s), ubg_ctx_error(ctx));
        fail++;
        continue;
      }
      for (int c = 0; c < p->ncases; c++) {
        ug_case_env(p, &p->cases[c], env);
        int failed;
        int b = ug_bind(p, &v->pt, env, &failed, &d);
        if (b != 0) continue; /* the variant does not apply to this case's shape */
        char msg[1200];
        run++;
        int r = ck_run_case(ctx, p, ref, dt, &p->cases[c], 0x5eed0000u + (uint64_t)c, msg, sizeof msg);
        if (r != 0) {
          cli_progress_done();
          printf("FAIL %s case %d (%s:%d): %s\n", v->name, c, k->path, p->cases[c].at.line, msg);
          fail++;
        }
      }
    }
    free(vs);
  }
  ubg_set_variant(ctx, k->name, p->name, NULL);
  cli_progress_done();
  printf("%s.%s: %d variants, %d runs, %d failed%s", k->name, p->name, variants, run, fail,
         over ? "" : "\n");
  if (over) printf(" (%d variants over the UB budget not run)\n", over);
  free(env);
  *nrun += run;
  *nfail += fail;
  return 0;
}

int cmd_check(int argc, char **argv) {
  cli_opts o;
  if (cli_parse(argc, argv, "check", "specs ub margin dtype", true, &o) < 0) return EXIT_USAGE;
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) return EXIT_USAGE;
  cli_export_spec_path(&o);
  ubg_config cfg = {0};
  cfg.ub_bytes = (size_t)o.budget.ub_bytes;
  cfg.safety_margin = o.budget.margin;
  ubg_ctx *ctx;
  if (ubg_ctx_create(&cfg, &ctx) != UBG_OK) {
    cli_error("%s", ubg_ctx_error(NULL)); /* "file:line:col: what" when a spec is at fault: the file comes first */
    ug_specset_free(&set);
    return EXIT_USAGE;
  }
  int rc = EXIT_OK, run = 0, fail = 0;
  if (!o.target || !strcmp(o.target, "all")) {
    for (int i = 0; i < set.n && rc == EXIT_OK; i++)
      for (int j = 0; j < set.k[i]->npasses && rc == EXIT_OK; j++)
        if (check_pass(ctx, &o, &set.k[i]->passes[j], &run, &fail) < 0) rc = EXIT_USAGE;
  } else {
    const ug_kernel *k;
    const ug_pass *p;
    if (cli_find_pass(&set, o.target, &k, &p) < 0 || check_pass(ctx, &o, p, &run, &fail) < 0) rc = EXIT_USAGE;
  }
  if (rc == EXIT_OK) {
    printf("check: %d runs, %d failed\n", run, fail);
    if (fail) rc = EXIT_FAILED;
  }
  ubg_ctx_destroy(ctx);
  ug_specset_free(&set);
  return rc;
}
