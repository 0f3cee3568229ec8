/* libFuzzer target: the spec loader (gen/spec_load.c) and what runs on a
 * loaded spec before any template: variant enumeration, UB footprints, the
 * default strategy at the spec's check cases. Input: the spec's JSON text.
 * A bad spec must fail with a located message (file:line:col); a good one
 * must enumerate without crashing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "spec.h"
#include "strategy.h"
#include "ubplan.h"
#include "variant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ug_diag d;
  memset(&d, 0, sizeof d);
  ug_kernel *k = ug_spec_parse("fuzz.json", "/nonexistent", (const char *)data, size, &d);
  if (!k) {
    if (!d.text[0] || (d.file[0] && d.at.line < 0)) abort(); /* a refusal says why */
    return 0;
  }
  ug_budget budget = {196608, 0};
  for (int pi = 0; pi < k->npasses; pi++) {
    const ug_pass *p = &k->passes[pi];
    ug_variant *vs;
    int nv;
    if (ug_enumerate(p, -1, &vs, &nv, &d) < 0) continue;
    int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
    for (int c = 0; env && c < p->ncases && c < 4; c++) {
      for (int dt = 0; dt < UG_NDTYPES; dt++) {
        int first = -1, n = 0;
        for (int i = 0; i < nv; i++)
          if (vs[i].pt.dtype == dt) first = first < 0 ? i : first, n++;
        if (!n) continue;
        ug_case_env(p, &p->cases[c], env);
        ug_choice ch;
        (void)ug_default_strategy(p, vs + first, n, env, ug_budget_usable(&budget, k), &ch, &d);
      }
    }
    free(env);
    free(vs);
  }
  ug_spec_free(k);
  return 0;
}
