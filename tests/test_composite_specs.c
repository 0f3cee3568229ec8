/* A user's composite spec is checked, not trusted (tests/specs/scale_rows.json,
 * each case changed by one string): a binding that sizes a pass past the
 * op's tensors, a step that writes an input, a routine without the tensor
 * it reads, rows that are not the tensors' — each refused with a message
 * that names it, and nothing written: every chunk's steps are checked
 * before the first runs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ubgen.h"

enum { M = 37, N = 10 };

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

static void write_all(const char *path, const char *s) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  fputs(s, f);
  fclose(f);
}

/* scale_rows.json with `from` replaced by `to` (once; it must be there),
 * and its template, in a fresh directory: a context on it, or NULL with the
 * creation's message in why */
static char *replaced(char *spec, const char *from, const char *to) {
  char *at = strstr(spec, from);
  cr_assert_not_null(at, "the spec has no \"%s\"", from);
  char *out = malloc(strlen(spec) + strlen(to) + 1);
  sprintf(out, "%.*s%s%s", (int)(at - spec), spec, to, at + strlen(from));
  free(spec);
  return out;
}

/* ... with a second change (from2 NULL: none) */
static ubg_ctx *changed_spec2(const char *from, const char *to, const char *from2, const char *to2, char *dir, char *why,
                              size_t n) {
  strcpy(dir, "/tmp/ubgen-composite-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  char *out = replaced(read_all(UBGEN_SRC "/tests/specs/scale_rows.json"), from, to), path[512];
  if (from2) out = replaced(out, from2, to2);
  snprintf(path, sizeof path, "%s/scale_rows.json", dir);
  write_all(path, out);
  char *tmpl = read_all(UBGEN_SRC "/tests/specs/scale_rows.c.tmpl");
  snprintf(path, sizeof path, "%s/scale_rows.c.tmpl", dir);
  write_all(path, tmpl);
  free(out), free(tmpl);
  ubg_config cfg = {0};
  cfg.spec_path = dir;
  cfg.tuning_db = "/nonexistent/ubgen-test-no-db";
  cfg.threads = 2;
  ubg_ctx *c = NULL;
  why[0] = '\0';
  if (ubg_ctx_create(&cfg, &c) != UBG_OK) snprintf(why, n, "%s", ubg_ctx_error(NULL));
  return c;
}

static ubg_ctx *changed_spec(const char *from, const char *to, char *dir, char *why, size_t n) {
  return changed_spec2(from, to, NULL, NULL, dir, why, n);
}

static void remove_dir(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/scale_rows.json", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/scale_rows.c.tmpl", dir);
  unlink(path);
  rmdir(dir);
}

static ubg_status run_rows(ubg_ctx *c, int64_t m, float *x, float *y, float *z) {
  const ubg_arg args[] = {{"x", UBG_ARG_PTR, {.p = x}}, {"y", UBG_ARG_PTR, {.p = y}}, {"z", UBG_ARG_PTR, {.p = z}},
                          {"m", UBG_ARG_I64, {.i = m}}, {"n", UBG_ARG_I64, {.i = N}}, {"a", UBG_ARG_F64, {.f = 0.5}}};
  return ubg_launch(c, "scale_rows", "rows", UBG_F32, args, 6);
}

static ubg_status run(ubg_ctx *c, float *x, float *y, float *z) { return run_rows(c, M, x, y, z); }

/* the spec loads; the call is refused with `says` and writes nothing */
static void refused_at_run2(const char *from, const char *to, const char *from2, const char *to2, const char *says) {
  char dir[64], why[1024];
  ubg_ctx *c = changed_spec2(from, to, from2, to2, dir, why, sizeof why);
  cr_assert_not_null(c, "the spec should load: %s", why);
  float x[M * N], y[M * N], z[M * N];
  for (int i = 0; i < M * N; i++) x[i] = (float)i, y[i] = z[i] = -1.0f;
  cr_assert_eq(run(c, x, y, z), UBG_EINVAL, "%s -> %s: %s", from, to, ubg_ctx_error(c));
  cr_assert(strstr(ubg_ctx_error(c), says), "%s", ubg_ctx_error(c));
  for (int i = 0; i < M * N; i++)
    cr_assert(x[i] == (float)i && y[i] == -1.0f && z[i] == -1.0f, "a refused call wrote [%d]", i);
  ubg_ctx_destroy(c);
  remove_dir(dir);
}

static void refused_at_run(const char *from, const char *to, const char *says) {
  refused_at_run2(from, to, NULL, NULL, says);
}

/* the spec does not load, and says why */
static void refused_at_load(const char *from, const char *to, const char *says) {
  char dir[64], why[1024];
  ubg_ctx *c = changed_spec(from, to, dir, why, sizeof why);
  if (c) {
    float x[M * N] = {0}, y[M * N], z[M * N];
    cr_assert_neq(run(c, x, y, z), UBG_OK, "%s -> %s ran", from, to);
    snprintf(why, sizeof why, "%s", ubg_ctx_error(c));
    ubg_ctx_destroy(c);
  }
  cr_assert(strstr(why, says), "%s -> %s: %s", from, to, why);
  remove_dir(dir);
}

Test(composite_specs, the_unchanged_spec_runs) {
  char dir[64], why[1024];
  ubg_ctx *c = changed_spec("\"rows\": \"m\"", "\"rows\": \"m\"", dir, why, sizeof why);
  cr_assert_not_null(c, "%s", why);
  float x[M * N], y[M * N], z[M * N];
  for (int i = 0; i < M * N; i++) x[i] = (float)i;
  cr_assert_eq(run(c, x, y, z), UBG_OK, "%s", ubg_ctx_error(c));
  for (int i = 0; i < M * N; i++) cr_assert(y[i] == 0.5f * x[i] && z[i] == 2.0f * x[i]);
  ubg_ctx_destroy(c);
  remove_dir(dir);
}

/* the last chunk's pass would read and write a row past x and y (SIGSEGV once) */
Test(composite_specs, a_binding_past_the_tensors_is_refused_before_any_chunk) {
  refused_at_run("\"y\": \"y[off]\", \"m\": \"rows\"", "\"y\": \"y[off]\", \"m\": \"rows + 1\"", "is a buffer of");
}

/* a pass's output on a scratch buffer narrower than the chunk's rows */
Test(composite_specs, a_scratch_too_small_is_refused) {
  char dir[64], why[1024];
  ubg_ctx *c = changed_spec("\"y\": \"z[off]\"", "\"y\": \"spare\"", dir, why, sizeof why);
  cr_assert_not_null(c, "%s", why);
  float x[M * N], y[M * N], z[M * N];
  cr_assert_eq(run(c, x, y, z), UBG_OK, "a scratch of chunk x n rows holds a chunk: %s", ubg_ctx_error(c));
  ubg_ctx_destroy(c);
  remove_dir(dir);
  refused_at_run2("\"y\": \"z[off]\"", "\"y\": \"spare\"", "\"count\": \"chunk * n\"", "\"count\": \"chunk * n - 1\"",
                  "scale_rows.scale: y is a buffer of 396 bytes");
}

/* a pass output or a routine's target on one of the op's inputs */
Test(composite_specs, a_step_that_writes_an_input_is_refused) {
  refused_at_load("\"y\": \"z[off]\"", "\"y\": \"x[off]\"", "pass scale writes its \"y\", bound here to \"x\", an input");
  refused_at_run("\"args\": {\"dst\": \"z\"}", "\"args\": {\"dst\": \"x\"}", "routine zero would write x, an input");
}

/* a routine bound without what it reads (ce_rows without target: NULL read once) */
Test(composite_specs, a_routine_without_its_tensors_is_refused) {
  refused_at_run("{\"routine\": \"zero\", \"when\": \"has_z\", \"args\": {\"dst\": \"z\"}}",
                 "{\"routine\": \"ce_rows\", \"pass\": \"scale\", \"when\": \"has_z\", \"args\": {\"logits\": \"z\", "
                 "\"bt\": \"m\", \"vocab\": \"n\", \"rows\": \"m\", \"loss\": \"z\"}}",
                 "routine ce_rows: target is not bound");
  refused_at_run("{\"routine\": \"zero\", \"when\": \"has_z\", \"args\": {\"dst\": \"z\"}}",
                 "{\"routine\": \"convert\", \"when\": \"has_z\", \"args\": {\"dst\": \"z\", \"src\": \"x\", "
                 "\"n\": \"m * n + 1\"}}",
                 "routine convert: dst holds");
}

/* rows that are not the tensors' first dimension: 0 and -5 once returned OK having written nothing */
Test(composite_specs, rows_that_are_not_the_tensors_are_refused) {
  refused_at_load("\"rows\": \"m\"", "\"rows\": \"0\"", "is not the first dimension of any tensor argument");
  refused_at_load("\"rows\": \"m\"", "\"rows\": \"-5\"", "is not the first dimension of any tensor argument");
}

/* an axis default as deep as it is long (m+0+0+...: 47,450 frames of recursion once) */
Test(composite_specs, an_expression_too_deep_is_refused) {
  char deep[2048] = "\"default\": \"cdiv(m, 4)";
  for (int i = 0; i < 400; i++) strcat(deep, "+0");
  strcat(deep, "\"");
  refused_at_load("\"default\": \"cdiv(m, 4)\"", deep, "nested too deeply");
}

/* found by fuzz/fuzz_composite: with no rows at all no chunk was checked,
 * yet the chunk steps ran once on no rows (to pick their variants), so a
 * binding that does not follow the rows ran past the tensors; and a store
 * or convert between overlapping parts of one buffer (memcpy's undefined
 * behaviour) */
Test(composite_specs, the_steps_run_on_no_rows_are_checked_and_copies_do_not_overlap) {
  char dir[64], why[1024];
  ubg_ctx *c = changed_spec("{\"pass\": \"scale\", \"args\": {\"x\": \"x[off]\"",
                            "{\"routine\": \"convert\", \"args\": {\"dst\": \"y\", \"src\": \"x\", \"n\": \"m * n + 1\"}}, "
                            "{\"pass\": \"scale\", \"args\": {\"x\": \"x[off]\"",
                            dir, why, sizeof why);
  cr_assert_not_null(c, "%s", why);
  float x[M * N], y[M * N], z[M * N];
  cr_assert_eq(run_rows(c, 0, x, y, z), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(c), "routine convert: dst holds 0 bytes"), "%s", ubg_ctx_error(c));
  ubg_ctx_destroy(c);
  remove_dir(dir);
  /* the second chunk (off = 10) copies z[0, 10 n] over z[10 n, 20 n + 1) */
  refused_at_run("{\"pass\": \"scale\", \"args\": {\"x\": \"x[off]\"",
                 "{\"routine\": \"convert\", \"args\": {\"dst\": \"z[off]\", \"src\": \"z\", \"n\": \"off * n + 1\"}}, "
                 "{\"pass\": \"scale\", \"args\": {\"x\": \"x[off]\"",
                 "routine convert: dst and src overlap");
}
