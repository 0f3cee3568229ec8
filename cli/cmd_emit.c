/* ubgen emit --out DIR: the C sources of every variant that fits the
 * budget, a registry and a header, for gcc at build time. With --tuned DB,
 * only the tuned variants and the default strategy's choices (emit_tuned.h):
 * a lean build for a known deployment. With --sample N, ug_sample_mark's
 * share of each pass and dtype and the default choices: a small build for a
 * memory checker's reduced run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "../gen/emit.h"
#include "emit_tuned.h"

int cli_cmd_emit(int argc, char **argv) {
  cli_opts o;
  const int parsed = cli_parse(argc, argv, "emit", "specs ub margin kernel dtype out tuned sample registry self-register no-kernels",
                               false, &o);
  if (parsed) return parsed < 0 ? EXIT_USAGE : EXIT_OK;
  if (!o.out) {
    cli_error("emit: --out DIR is required");
    return EXIT_USAGE;
  }
  if (o.tuned && o.sample) {
    cli_error("emit: --tuned %s and --sample %d: give one or the other", o.tuned, o.sample);
    return EXIT_USAGE;
  }
  ug_tunedb db = {0};
  cli_tuned_stats ts = {0, 0, 0};
  if (o.tuned) { /* named on purpose: missing or unusable is an error, not a warning */
    struct stat sb;
    char warn[1024];
    if (lstat(o.tuned, &sb) < 0) {
      cli_error("emit: --tuned %s: no such file (write one with `ubgen tune ... --db %s`)", o.tuned, o.tuned);
      return EXIT_USAGE;
    }
    int lr = ug_tunedb_load(o.tuned, &db, warn, sizeof warn);
    if (lr != 0) {
      cli_error("emit: --tuned %s: unusable, nothing written", lr < 0 ? "out of memory" : warn);
      return EXIT_USAGE;
    }
  }
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) {
    ug_tunedb_free(&db);
    return EXIT_USAGE;
  }
  int rc = EXIT_USAGE, considered = 0;
  bool *keep = NULL, *in_sample = NULL;
  ug_variant *all = NULL;
  int nall = 0, cap = 0;
  ug_kernel **kernels = calloc((size_t)set.n + 1, sizeof *kernels);
  int nk = 0;
  ug_diag d;
  if (!kernels) goto out;
  for (int ki = 0; ki < set.n; ki++) {
    ug_kernel *k = set.k[ki];
    bool want = o.nkernels == 0;
    for (int i = 0; i < o.nkernels; i++) want |= !strcmp(o.kernels[i], k->name);
    if (!want) continue;
    kernels[nk++] = k;
    if (o.no_kernels) continue;
    for (int pi = 0; pi < k->npasses; pi++) {
      ug_variant *vs;
      int nv;
      if (ug_enumerate(&k->passes[pi], -1, &vs, &nv, &d) < 0) {
        cli_diag(&d);
        goto out;
      }
      if (o.tuned || o.sample) { /* keep: the default choices, and with --tuned the DB's */
        free(keep);
        if (!(keep = calloc((size_t)nv + 1, sizeof *keep))) {
          free(vs);
          cli_error("emit: out of memory");
          goto out;
        }
        for (int dt = 0; dt < UG_NDTYPES; dt++) {
          int first = -1, n = 0; /* the dtype's variants are contiguous in vs */
          for (int i = 0; i < nv; i++)
            if (vs[i].pt.dtype == dt) first = first < 0 ? i : first, n++;
          if (n && cli_tuned_keep(&k->passes[pi], dt, vs + first, n, &db, &o.budget, keep + first, &ts, &d) < 0) {
            free(vs);
            cli_diag(&d);
            goto out;
          }
        }
      }
      if (nall + nv > cap) {
        cap = 2 * (nall + nv);
        ug_variant *na = realloc(all, (size_t)cap * sizeof *na);
        bool *ns = realloc(in_sample, (size_t)cap * sizeof *ns);
        if (na) all = na;
        if (ns) in_sample = ns;
        if (!na || !ns) {
          free(vs);
          cli_error("emit: out of memory");
          goto out;
        }
      }
      const int pass_start = nall;
      for (int i = 0; i < nv; i++) {
        if (o.dtype_set && !o.dtypes[vs[i].pt.dtype]) continue;
        if (!ug_fits(&vs[i], &o.budget)) continue;
        considered++;
        if (o.tuned && !keep[i]) continue;
        in_sample[nall] = keep && keep[i];
        all[nall++] = vs[i];
      }
      if (o.sample) { /* the defaults and, dtype by dtype, ug_sample_mark's share of what fits */
        for (int s = pass_start, e; s < nall; s = e) {
          for (e = s; e < nall && all[e].pt.dtype == all[s].pt.dtype; e++) continue;
          ug_sample_mark(all + s, e - s, o.sample, in_sample + s);
        }
        int kept = pass_start;
        for (int i = pass_start; i < nall; i++)
          if (in_sample[i]) all[kept++] = all[i];
        nall = kept;
      }
      free(vs);
    }
  }
  char shipped[4200];
  snprintf(shipped, sizeof shipped, "%s/templates", o.data_dir);
  ug_emit_opts eo = {o.out, o.registry, o.self_register, shipped};
  ug_emit_stats st;
  if (ug_emit(kernels, nk, all, nall, &eo, &st, &d) < 0) {
    cli_diag(&d);
    goto out;
  }
  fprintf(stderr, "ubgen emit: %d %s of %d %s into %s (%d %s written, %d unchanged, %d removed)\n", nall,
          nall == 1 ? "variant" : "variants", nk, nk == 1 ? "kernel" : "kernels", o.out, st.written,
          st.written == 1 ? "file" : "files", st.unchanged, st.removed);
  if (o.sample)
    fprintf(stderr, "ubgen emit: --sample %d and the default choices kept %d of the %d variants that fit\n", o.sample,
            nall, considered);
  if (o.tuned) {
    fprintf(stderr, "ubgen emit: --tuned %s: %d tuned %s and the default choices kept %d of the %d variants that fit",
            o.tuned, ts.tuned, ts.tuned == 1 ? "entry" : "entries", nall, considered);
    if (ts.other_ub)
      fprintf(stderr, "; %d %s tuned at another UB budget not used", ts.other_ub, ts.other_ub == 1 ? "entry" : "entries");
    if (ts.unknown)
      fprintf(stderr, "; %d %s naming variants the specs do not have not used", ts.unknown,
              ts.unknown == 1 ? "entry" : "entries");
    fprintf(stderr, "\n");
  }
  rc = EXIT_OK;
out:
  free(keep);
  free(in_sample);
  ug_tunedb_free(&db);
  free(all);
  free(kernels);
  ug_specset_free(&set);
  return rc;
}
