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

/* rms_norm.fwd bf16 at rows x 4096 (bucketed) -> variant */
static void write_entry(int64_t rows, const char *variant) {
  ug_tunedb db = {0};
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
  char err[512], warn[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err, warn, sizeof warn), 0, "%s", err);
  ug_tunedb_free(&db);
}

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
  cr_assert_str_eq(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n@aot", "no DB: the default");
  write_entry(128, "rms_norm_fwd_bf16_d1024_m1_t");
  cr_assert_str_eq(run(100, v, sizeof v), "rms_norm_fwd_bf16_d1024_m1_t@aot", "bucket 128 holds 65..128");
  cr_assert_str_eq(run(128, v, sizeof v), "rms_norm_fwd_bf16_d1024_m1_t@aot");
  cr_assert_str_eq(run(129, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n@aot", "bucket 256 has no entry");
  cr_assert_str_eq(run(64, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n@aot", "bucket 64 has no entry");
}

Test(dispatch, unusable_entries_fall_back, .init = setup, .fini = teardown) {
  char v[256];
  write_entry(128, "rms_norm_fwd_bf16_d9999_m2_t"); /* not a variant of the spec */
  cr_assert_str_eq(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n@aot");
  write_entry(128, "rms_norm_fwd_bf16_d1024_m2_n"); /* does not apply: non-tiled, BLOCK_D < cols */
  cr_assert_str_eq(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n@aot");
}

Test(dispatch, corrupt_db_is_ignored, .init = setup, .fini = teardown) {
  FILE *f = fopen(db_path, "w");
  fputs("{\"version\": 1, \"entries\": [{\"kernel\": \"rms_", f);
  fclose(f);
  char v[256];
  cr_assert_str_eq(run(100, v, sizeof v), "rms_norm_fwd_bf16_d4096_m1_n@aot");
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
