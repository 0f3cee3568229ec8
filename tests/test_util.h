/* Shared by the kernel suites: seeded inputs and the feasible variants of a
 * pass. */
#ifndef UBG_TEST_UTIL_H
#define UBG_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/spec.h"
#include "../gen/ubplan.h"
#include "../gen/variant.h"
#include "ref/ref.h"
#include "ubgen.h"

/* test timeouts are multiplied by this: make test-valgrind runs everything
 * 20-50 times slower */
#ifndef TC_TIME_SCALE
#define TC_TIME_SCALE 1
#endif

/* make test-valgrind (TC_REDUCED) leaves out the shapes whose tensors hold
 * more than TC_MAX_ELEMS elements in all: under valgrind each would take
 * minutes, and the smaller shapes run the same code paths (tiled and not,
 * vector bodies and tails, one and two threads). */
#ifdef TC_REDUCED
#define TC_MAX_ELEMS ((int64_t)1 << 20)
#else
#define TC_MAX_ELEMS INT64_MAX
#endif
#define tc_skip_if_large(elems, shape)                                                                      \
  do {                                                                                                      \
    if ((int64_t)(elems) > TC_MAX_ELEMS)                                                                    \
      cr_skip_test("%s: %lld elements, more than the %lld a reduced run takes", shape, (long long)(elems), \
                   (long long)TC_MAX_ELEMS);                                                                \
  } while (0)

static inline uint64_t tc_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline double tc_normal(uint64_t *s) {
  double u = (double)(tc_next(s) >> 11) * 0x1.0p-53 + 1e-300;
  double v = (double)(tc_next(s) >> 11) * 0x1.0p-53;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* n values of N(mean, sd) stored in dtype */
static inline void *tc_tensor(int dtype, int64_t n, double mean, double sd, uint64_t seed) {
  void *p = malloc((size_t)(n ? n : 1) * ref_dtype_bytes(dtype));
  for (int64_t i = 0; i < n; i++) ref_store(p, i, dtype, mean + sd * tc_normal(&seed));
  return p;
}

/* The feasible variants of <kernel>.<pass> for dtype at the default budget,
 * from the shipped spec. */
typedef struct {
  ug_kernel *spec;
  ug_variant *v;
  int n;
} tc_variants;

static inline tc_variants tc_kernel_variants(const char *kernel, const char *pass, int dtype) {
  tc_variants out = {0};
  ug_diag d;
  char path[512];
  snprintf(path, sizeof path, UBGEN_SRC "/specs/%s.json", kernel);
  out.spec = ug_spec_load_file(path, &d);
  if (!out.spec) return out;
  const ug_pass *p = ug_spec_pass(out.spec, pass);
  ug_variant *all;
  int n;
  if (!p || ug_enumerate(p, dtype, &all, &n, &d) < 0) return out;
  ug_budget b = {UG_DEFAULT_UB_BYTES, 0};
  out.v = calloc((size_t)n + 1, sizeof *out.v);
  for (int i = 0; i < n; i++)
    if (ug_fits(&all[i], &b)) out.v[out.n++] = all[i];
  free(all);
#ifdef TC_REDUCED
  /* make test-valgrind builds the tests with -DTC_REDUCED=N: a sweep takes
   * the sample of the variants that its build emits (ubgen emit --sample N) */
  bool *keep = calloc((size_t)out.n + 1, sizeof *keep);
  ug_sample_mark(out.v, out.n, TC_REDUCED, keep);
  int kept = 0;
  for (int i = 0; i < out.n; i++)
    if (keep[i]) out.v[kept++] = out.v[i];
  out.n = kept;
  free(keep);
#endif
  return out;
}

static inline void tc_free_variants(tc_variants *t) {
  free(t->v);
  ug_spec_free(t->spec);
}

/* Whether got, what ubg_ctx_last_variant says, names variant served by its
 * built-in kernel ("<variant>@aot"). make test-valgrind's library has only
 * a sample of the kernels built in (SAMPLE, with TC_REDUCED): there a
 * variant outside it runs on tcc's code, and "<variant>@tcc" passes too;
 * the plain build's run checks the backend. */
static inline bool tc_served_by_aot(const char *got, const char *variant) {
  const size_t n = strlen(variant);
  if (strncmp(got, variant, n) || got[n] != '@') return false;
#ifdef TC_REDUCED
  if (!strcmp(got + n, "@tcc")) return true;
#endif
  return !strcmp(got + n, "@aot");
}
#define tc_assert_aot(got, variant, what)                                                                   \
  do {                                                                                                       \
    const char *got_ = (got);                                                                                \
    cr_assert(tc_served_by_aot(got_, variant), "%s: %s ran, want %s@aot", what, got_, variant);              \
  } while (0)

/* a context with this backend and thread count (0: the defaults) */
static inline ubg_ctx *tc_ctx(ubg_backend backend, int threads) {
  ubg_config cfg = {0};
  cfg.backend = backend;
  cfg.threads = threads;
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(&cfg, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  return ctx;
}

/* a fresh, private cache directory for the gcc backend ($UBGEN_CACHE_DIR),
 * and its removal */
static char tc_cache[64];
static inline void tc_fresh_cache(void) {
  snprintf(tc_cache, sizeof tc_cache, "/tmp/ubgen_test_cache_XXXXXX");
  cr_assert_not_null(mkdtemp(tc_cache));
  setenv("UBGEN_CACHE_DIR", tc_cache, 1);
}
static inline void tc_drop_cache(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tc_cache);
  if (system(cmd) != 0) cr_log_warn("could not remove %s", tc_cache);
}

/* BLOCK_D and tiled of a variant (axis 0 is BLOCK_D) */
static inline int64_t tc_block_d(const ug_variant *v) { return v->pt.axis[0]; }
/* a non-tiled variant needs BLOCK_D >= the tiled dimension */
static inline int tc_applies(const ug_variant *v, int64_t cols) { return v->pt.tiled || tc_block_d(v) >= cols; }

#endif
