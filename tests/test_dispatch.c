/* Dispatch from the tuning DB: a context loads the DB once; a call whose
 * shape bucket has an entry runs the tuned variant, else the default
 * strategy's; unusable entries and files fall back to the default, and
 * `ubgen plan --db` says which and why. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gen/tunedb.h"
#include "test_util.h"

static char dir[64], db_path[128];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/ubgen-dispatch-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(db_path, sizeof db_path, "%s/tuning.json", dir);
  setenv("UBGEN_TUNING_DB", db_path, 1);
}
static void teardown(void) {
  unsetenv("UBGEN_TUNING_DB");
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

/* rms_norm.fwd bf16 at rows x 4096 (bucketed) -> variant, in a DB tuned on
 * cpu ("": a DB that names none) */
static void write_entry_on(int64_t rows, const char *variant, const char *cpu) {
  ug_tunedb db = {0};
  snprintf(db.cpu, sizeof db.cpu, "%s", cpu);
  ug_tune_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.kernel, sizeof e.kernel, "rms_norm");
  snprintf(e.pass, sizeof e.pass, "fwd");
  e.dtype = REF_BF16;
  e.nshape = 2;
  snprintf(e.shape_names[0], sizeof e.shape_names[0], "rows");
  snprintf(e.shape_names[1], sizeof e.shape_names[1], "cols");
  e.shape[0] = ug_tune_bucket(rows);
  e.shape[1] = 4096;
  e.ub_bytes = 196608;
  snprintf(e.variant, sizeof e.variant, "%s", variant);
  snprintf(e.backend, sizeof e.backend, "aot");
  snprintf(e.default_variant, sizeof e.default_variant, "rms_norm_fwd_bf16_d4096_m1_n");
  e.median_us = 100, e.default_median_us = 120, e.candidates = 20, e.rejected_ub = 3;
  cr_assert_eq(ug_tunedb_put(&db, &e), 0);
  char err[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err), 0, "%s", err);
  ug_tunedb_free(&db);
}
static void write_entry(int64_t rows, const char *variant) { write_entry_on(rows, variant, ""); }

/* the variant a bf16 RMSNorm forward of rows x 4096 runs in a fresh context */
static const char *run(int64_t rows, char *buf, size_t n) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  uint16_t *x = tc_tensor(REF_BF16, rows * 4096, 0, 1, 1), *y = malloc((size_t)rows * 4096 * 2);
  float *rstd = malloc((size_t)rows * 4);
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_BF16, rows, 4096, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  snprintf(buf, n, "%s", ubg_ctx_last_variant(ctx));
  ubg_ctx_destroy(ctx);
  free(x), free(y), free(rstd);
  return buf;
}

Test(dispatch, follows_the_db_within_the_bucket, .init = setup, .fini = teardown) {
  char v[256];
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "no DB: the default");
  write_entry(128, "rms_norm_fwd_bf16_d1024_m1_t");
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d1024_m1_t", "bucket 128 holds 65..128");
  tc_assert_aot(run(128, v, sizeof v), "rms_norm_fwd_bf16_d1024_m1_t", "the last call");
  tc_assert_aot(run(129, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "bucket 256 has no entry");
  tc_assert_aot(run(64, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "bucket 64 has no entry");
}

Test(dispatch, unusable_entries_fall_back, .init = setup, .fini = teardown) {
  char v[256];
  write_entry(128, "rms_norm_fwd_bf16_d9999_m2_t"); /* not a variant of the spec */
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "the last call");
  write_entry(128, "rms_norm_fwd_bf16_d1024_m2_n"); /* does not apply: non-tiled, BLOCK_D < cols */
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "the last call");
}

/* a DB's timings hold for the machine that made them: another CPU's DB is
 * not followed (this machine's is) */
Test(dispatch, another_cpus_db_is_ignored, .init = setup, .fini = teardown) {
  char v[256], here[128];
  ug_tune_cpu_name(here, sizeof here);
  cr_assert(here[0], "this machine's /proc/cpuinfo names no CPU");
  write_entry_on(128, "rms_norm_fwd_bf16_d1024_m1_t", "Some Other CPU @ 1.0GHz");
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "another CPU's DB was followed");
  /* ubgen plan says so */
  char cmd[512], line[512];
  snprintf(cmd, sizeof cmd, "%s plan rms_norm.fwd --dtype bf16 --shape rows=100,cols=4096 --db %s 2>&1", UBGEN_BIN,
           db_path);
  FILE *p = popen(cmd, "r");
  int warned = 0, dflt = 0;
  while (fgets(line, sizeof line, p)) {
    warned |= strstr(line, "tuned on \"Some Other CPU @ 1.0GHz\", but this machine is") != NULL;
    dflt |= strstr(line, "choice    rms_norm_fwd_bf16_d4096_m1_n") != NULL;
  }
  cr_assert_eq(pclose(p), 0);
  cr_assert(warned && dflt, "plan: warned %d, default choice %d", warned, dflt);
  unlink(db_path);
  write_entry_on(128, "rms_norm_fwd_bf16_d1024_m1_t", here);
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d1024_m1_t", "this CPU's DB was not followed");
}

Test(dispatch, corrupt_db_is_ignored, .init = setup, .fini = teardown) {
  FILE *f = fopen(db_path, "w");
  fputs("{\"version\": 1, \"entries\": [{\"kernel\": \"rms_", f);
  fclose(f);
  char v[256];
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "the last call");
}

/* ubgen plan --db: the same choice, and where it came from */
Test(dispatch, plan_says_tuned_or_default, .init = setup, .fini = teardown) {
  write_entry(2048, "rms_norm_fwd_bf16_d2048_m1_t");
  char cmd[512], line[512];
  snprintf(cmd, sizeof cmd, "%s plan rms_norm.fwd --dtype bf16 --shape rows=1500,cols=4096 --db %s", UBGEN_BIN, db_path);
  FILE *p = popen(cmd, "r");
  int tuned = 0;
  while (fgets(line, sizeof line, p))
    if (strstr(line, "choice    rms_norm_fwd_bf16_d2048_m1_t  (tuned)")) tuned = 1;
  cr_assert_eq(pclose(p), 0);
  cr_assert(tuned, "plan names the tuned variant");
  snprintf(cmd, sizeof cmd, "%s plan rms_norm.fwd --dtype bf16 --shape rows=4000,cols=4096 --db %s", UBGEN_BIN, db_path);
  p = popen(cmd, "r");
  int dflt = 0;
  while (fgets(line, sizeof line, p))
    if (strstr(line, "(default strategy: no tuning entry for bucket rows=4096,cols=4096")) dflt = 1;
  cr_assert_eq(pclose(p), 0);
  cr_assert(dflt, "plan says why the default serves");
}

/* ubg_flce's rows per chunk from the DB (`ubgen tune flce.chunk`): followed
 * inside its bucket, the environment wins over it, and the results have the
 * bits of any other chunk */
static void write_flce_entry(int64_t bt, int64_t hidden, int64_t vocab, const char *variant) {
  ug_tunedb db = {0};
  ug_tune_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.kernel, sizeof e.kernel, "flce");
  snprintf(e.pass, sizeof e.pass, "chunk");
  e.dtype = REF_F32;
  e.nshape = 3;
  const char *names[3] = {"bt", "hidden", "vocab"};
  const int64_t vals[3] = {bt, hidden, vocab};
  for (int i = 0; i < 3; i++) {
    snprintf(e.shape_names[i], sizeof e.shape_names[i], "%s", names[i]);
    e.shape[i] = ug_tune_bucket(vals[i]);
  }
  e.ub_bytes = 196608;
  snprintf(e.variant, sizeof e.variant, "%s", variant);
  snprintf(e.backend, sizeof e.backend, "aot");
  snprintf(e.default_variant, sizeof e.default_variant, "chunk=16");
  e.median_us = 100, e.default_median_us = 120, e.candidates = 6;
  cr_assert_eq(ug_tunedb_put(&db, &e), 0);
  char err[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err), 0, "%s", err);
  ug_tunedb_free(&db);
}

typedef struct {
  char variant[700];
  float loss;
  float *dx, *dw;
} flce_result;

static flce_result run_flce(int64_t bt, int64_t h, int64_t v) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  float *x = tc_tensor(REF_F32, bt * h, 0, 1, 3), *w = tc_tensor(REF_F32, v * h, 0, 0.1, 4);
  int64_t *t = malloc((size_t)bt * sizeof *t);
  for (int64_t i = 0; i < bt; i++) t[i] = (i * 7919) % v;
  flce_result r;
  r.dx = malloc((size_t)(bt * h) * 4), r.dw = malloc((size_t)(v * h) * 4);
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  ubg_flce_out out = {&r.loss, NULL, NULL, r.dx, r.dw, NULL, NULL};
  cr_assert_eq(ubg_flce(ctx, UBG_F32, bt, h, v, x, w, t, &o, &out), UBG_OK, "%s", ubg_ctx_error(ctx));
  snprintf(r.variant, sizeof r.variant, "%s", ubg_ctx_last_variant(ctx));
  ubg_ctx_destroy(ctx);
  free(x), free(w), free(t);
  return r;
}

static void free_flce(flce_result *r) { free(r->dx), free(r->dw); }

Test(dispatch, flce_chunk_follows_the_db, .init = setup, .fini = teardown) {
  const int64_t bt = 100, h = 32, v = 300; /* the rule: min(512, max(256, next_pow2(cdiv(100, 4)))) = 256, at most bt: 100 */
  flce_result base = run_flce(bt, h, v);
  cr_assert(strstr(base.variant, ";chunk=100 (spec rule)"), "%s", base.variant);
  write_flce_entry(128, 32, 512, "chunk=40");
  flce_result tuned = run_flce(bt, h, v);
  cr_assert(strstr(tuned.variant, ";chunk=40 (tuned)"), "bucket (128, 32, 512) holds this call: %s", tuned.variant);
  cr_assert(!memcmp(&tuned.loss, &base.loss, 4) && !memcmp(tuned.dx, base.dx, (size_t)(bt * h) * 4) &&
                !memcmp(tuned.dw, base.dw, (size_t)(v * h) * 4),
            "another chunk, the same bits");
  flce_result outside = run_flce(bt, h, 1000); /* vocab bucket 1024: no entry */
  cr_assert(strstr(outside.variant, "(spec rule)"), "%s", outside.variant);
  setenv("UBGEN_VARIANT", "flce.chunk=chunk=8", 1);
  flce_result env = run_flce(bt, h, v);
  unsetenv("UBGEN_VARIANT");
  cr_assert(strstr(env.variant, ";chunk=8 (UBGEN_VARIANT)"), "the environment wins: %s", env.variant);
  write_flce_entry(128, 32, 512, "chunk=999"); /* more rows than the call has: all of them */
  flce_result all = run_flce(bt, h, v);
  cr_assert(strstr(all.variant, ";chunk=100 (tuned)"), "%s", all.variant);
  free_flce(&base), free_flce(&tuned), free_flce(&outside), free_flce(&env), free_flce(&all);
}

/* a DB written by hand or re-saved with sorted keys (jq -S): shape as
 * {"cols": 4096, "rows": 128} */
static void write_raw_entry(const char *shape) {
  FILE *f = fopen(db_path, "w");
  cr_assert_not_null(f);
  fprintf(f, "{\"version\": 1, \"entries\": [{\"kernel\": \"rms_norm\", \"pass\": \"fwd\", \"dtype\": \"bf16\", "
             "\"shape\": %s, \"ub_bytes\": 196608, \"variant\": \"rms_norm_fwd_bf16_d1024_m1_t\", \"backend\": "
             "\"aot\", \"median_us\": 100, \"default_variant\": \"rms_norm_fwd_bf16_d4096_m1_n\", "
             "\"default_median_us\": 120, \"candidates\": 20, \"rejected_ub\": 3}]}\n",
          shape);
  fclose(f);
}

/* Shapes match by name: a DB with sorted keys still serves its own shape
 * (it once served the transposed one: matched by position). */
Test(dispatch, a_db_with_sorted_shape_keys_serves_its_own_shape, .init = setup, .fini = teardown) {
  char v[256];
  write_raw_entry("{\"cols\": 4096, \"rows\": 128}");
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d1024_m1_t", "its own shape, named in another order");
  /* the transposed bucket (rows 4096 x cols 128 is not rows 128 x cols 4096) */
  write_raw_entry("{\"cols\": 128, \"rows\": 4096}");
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "the transposed entry served");
}

/* An entry whose shape names are not the kernel's ("rowz") serves nothing
 * and says so through the log (it was applied once, by position). */
Test(dispatch, entries_with_names_not_the_kernels_are_dropped_with_a_warning, .init = setup, .fini = teardown) {
  char v[256], log[160];
  snprintf(log, sizeof log, "%s/log", dir);
  setenv("UBGEN_LOG", log, 1);
  write_raw_entry("{\"rowz\": 128, \"cols\": 4096}");
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "an entry naming rowz served");
  write_raw_entry("{\"rows\": 128, \"cols\": 4096, \"depth\": 2}");
  tc_assert_aot(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n", "an entry with a third name served");
  unsetenv("UBGEN_LOG");
  FILE *f = fopen(log, "r");
  cr_assert_not_null(f, "nothing logged");
  char text[8192] = "";
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  cr_assert(strstr(text, "1 entry ignored") && strstr(text, "rowz") && strstr(text, "{rows, cols}"), "%s", text);
  cr_assert(strstr(text, "depth"), "%s", text);
  /* plan says the same on stderr */
  char cmd[512], line[512];
  snprintf(cmd, sizeof cmd, "%s plan rms_norm.fwd --dtype bf16 --shape rows=100,cols=4096 --db %s 2>&1", UBGEN_BIN,
           db_path);
  FILE *p = popen(cmd, "r");
  int warned = 0;
  while (fgets(line, sizeof line, p)) warned |= strstr(line, "warning") && strstr(line, "depth");
  cr_assert_eq(pclose(p), 0);
  cr_assert(warned, "plan did not warn");
}
