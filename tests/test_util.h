/* Shared by the kernel suites: seeded inputs, the feasible variants of a
 * pass, outputs against the double reference (tc_assert_close) and the
 * sweep of every variant on 1 and 2 threads (tc_sweep_variants). */
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
 * more than TC_MAX_ELEMS elements in all (the test is skipped), and a
 * variant sweep its cases of more than TC_SWEEP_MAX_ELEMS (the sweep goes
 * on with the next): under valgrind each would take minutes, and the
 * smaller shapes run the same code paths (tiled and not, vector bodies and
 * tails, one and two threads). The sweeps at 2^16 rather than 2^20 took
 * the stage's row-wise suites 2-6 times less time (test_kl_div 157 s -> 45). */
#ifdef TC_REDUCED
#define TC_MAX_ELEMS ((int64_t)1 << 20)
#define TC_SWEEP_MAX_ELEMS ((int64_t)1 << 16)
#else
#define TC_MAX_ELEMS INT64_MAX
#define TC_SWEEP_MAX_ELEMS INT64_MAX
#endif
static inline bool tc_sweep_leaves_out(int64_t elems) { return elems > TC_SWEEP_MAX_ELEMS; }
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

/* Asserts got (n values in dtype dt) within atol + rtol |want| of the
 * double reference want, ref_compare's test; on failure the message is the
 * case the trailing printf format and values describe, ending in the
 * output's name, then the worst element's index, value and reference:
 * tc_assert_close(y, dt, y_ref, n, 1e-5, 1e-5, "%s %s: y", variant, dtype)
 * reports "... : y[17] = 0.25, reference 0.26". */
#define tc_assert_close(got, dt, want, n, atol, rtol, ...)                                                    \
  do {                                                                                                        \
    const void *tc_got_ = (got);                                                                              \
    const int tc_dt_ = (dt);                                                                                  \
    const double *tc_want_ = (want);                                                                          \
    double tc_err_;                                                                                           \
    const int64_t tc_bad_ = ref_compare(tc_got_, tc_dt_, tc_want_, (n), (atol), (rtol), &tc_err_);            \
    char tc_case_[256] = "";                                                                                  \
    if (tc_bad_ >= 0) snprintf(tc_case_, sizeof tc_case_, __VA_ARGS__);                                       \
    /* the message's values are read only where one failed (--full-stats formats it on passing too) */        \
    cr_assert(tc_bad_ < 0, "%s[%lld] = %.9g, reference %.9g", tc_case_, (long long)tc_bad_,                   \
              tc_bad_ < 0 ? 0.0 : ref_load(tc_got_, tc_bad_, tc_dt_), tc_bad_ < 0 ? 0.0 : tc_want_[tc_bad_]); \
  } while (0)

/* An output of the op a sweep runs: where it is and how many bytes. */
typedef struct {
  void *p;
  size_t bytes;
} tc_out;

/* Calls the op's typed entry point on ctx with the inputs and outputs that
 * state holds. */
typedef ubg_status (*tc_run_fn)(ubg_ctx *ctx, void *state);
/* Asserts the outputs of the first call against the reference; variant
 * names the variant that ran, for the messages. */
typedef void (*tc_check_fn)(void *state, const char *variant);

/* Every feasible variant of <kernel>.<pass> for dtype dt, forced, on a
 * 1-thread and a 2-thread context: each call's outputs are filled with 0xff
 * first; the first call's (the first variant, 1 thread) are checked against
 * the reference by check, and every other call must give their bits.
 * A variant that is not tiled (tiled 0, or -1 in a pass without a tiled
 * axis) and whose BLOCK_D is below cols is left out (cols 0: none is), and
 * at least one must run. shape describes the case (its dtype included) in
 * the messages. On return the outputs hold the bits every call gave. */
static inline void tc_sweep_variants(const char *kernel, const char *pass, int dt, int64_t cols, tc_run_fn run,
                                     tc_check_fn check, void *state, const tc_out *outs, int nout,
                                     const char *shape) {
  void *first[8];
  cr_assert(nout <= 8, "%s.%s: %d outputs, more than a sweep keeps", kernel, pass, nout);
  for (int o = 0; o < nout; o++) first[o] = malloc(outs[o].bytes ? outs[o].bytes : 1);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  tc_variants vs = tc_kernel_variants(kernel, pass, dt);
  int ran = 0;
  const char *first_name = "";
  for (int v = 0; v < vs.n; v++) {
    if (vs.v[v].pt.tiled <= 0 && tc_block_d(&vs.v[v]) < cols) continue;
    const char *name = vs.v[v].name;
    for (int k = 0; k < 2; k++) {
      cr_assert_eq(ubg_set_variant(ctxs[k], kernel, pass, name), UBG_OK, "%s.%s %s: %s", kernel, pass, name,
                   ubg_ctx_error(ctxs[k]));
      for (int o = 0; o < nout; o++) memset(outs[o].p, 0xff, outs[o].bytes);
      const ubg_status s = run(ctxs[k], state);
      cr_assert_eq(s, UBG_OK, "%s (%d threads) %s: %s", name, k + 1, shape, ubg_ctx_error(ctxs[k]));
      if (ran == 0 && k == 0) {
        first_name = name;
        check(state, name);
        for (int o = 0; o < nout; o++) memcpy(first[o], outs[o].p, outs[o].bytes);
      } else {
        for (int o = 0; o < nout; o++)
          cr_assert(!memcmp(outs[o].p, first[o], outs[o].bytes),
                    "%s.%s %s (%d threads) %s: output %d's bits differ from %s's (1 thread)", kernel, pass, name, k + 1,
                    shape, o, first_name);
      }
    }
    ran++;
  }
  cr_assert_gt(ran, 0, "no %s.%s variant applies to %s", kernel, pass, shape);
  tc_free_variants(&vs);
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  for (int o = 0; o < nout; o++) free(first[o]);
}

#endif
