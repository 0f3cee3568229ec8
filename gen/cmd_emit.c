/* ubgen emit --out DIR: the C sources of every variant that fits the
 * budget, a registry and a header, for gcc at build time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "emit.h"

int cmd_emit(int argc, char **argv) {
  cli_opts o;
  if (cli_parse(argc, argv, "emit", "specs ub margin kernel dtype out tuned registry self-register no-kernels", false,
                &o) < 0)
    return EXIT_USAGE;
  if (!o.out) {
    cli_error("emit: --out DIR is required");
    return EXIT_USAGE;
  }
  if (o.tuned) {
    cli_error("emit: --tuned %s: emitting from a tuning DB needs `ubgen tune`, which this build does not have yet", o.tuned);
    return EXIT_USAGE;
  }
  ug_specset set;
  if (cli_load_specs(&o, &set) < 0) return EXIT_USAGE;
  int rc = EXIT_USAGE;
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
      for (int i = 0; i < nv; i++) {
        if (o.dtype_set && !o.dtypes[vs[i].pt.dtype]) continue;
        if (!ug_fits(&vs[i], &o.budget)) continue;
        if (nall == cap) {
          cap = cap ? cap * 2 : 256;
          ug_variant *na = realloc(all, (size_t)cap * sizeof *na);
          if (!na) {
            free(vs);
            cli_error("emit: out of memory");
            goto out;
          }
          all = na;
        }
        all[nall++] = vs[i];
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
  fprintf(stderr, "ubgen emit: %d variants of %d kernels into %s (%d files written, %d unchanged, %d removed)\n", nall,
          nk, o.out, st.written, st.unchanged, st.removed);
  rc = EXIT_OK;
out:
  free(all);
  free(kernels);
  ug_specset_free(&set);
  return rc;
}
