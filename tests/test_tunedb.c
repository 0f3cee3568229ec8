/* The tuning DB (DESIGN.md "Tuning DB"): round trip, merge, shape buckets;
 * a missing file is empty, a corrupt one is empty plus a warning naming it;
 * a symlink at the DB path is not followed; two tuners saving into one file
 * at once lose no entry; no temporary file is left behind. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../gen/tunedb.h"

static char dir[64];
static char db_path[128];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/ubgen-tunedb-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(db_path, sizeof db_path, "%s/tune.json", dir);
}

/* the directory is flat: its files, then itself */
static void remove_dir(void) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  char p[512];
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(dir);
}

TestSuite(tunedb, .init = make_dir, .fini = remove_dir);

static ug_tune_entry entry(const char *kernel, int dtype, int64_t rows, int64_t cols, const char *variant) {
  ug_tune_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.kernel, sizeof e.kernel, "%s", kernel);
  snprintf(e.pass, sizeof e.pass, "fwd");
  e.dtype = dtype;
  e.nshape = 2;
  snprintf(e.shape_names[0], sizeof e.shape_names[0], "rows");
  snprintf(e.shape_names[1], sizeof e.shape_names[1], "cols");
  e.shape[0] = rows;
  e.shape[1] = cols;
  e.ub_bytes = 196608;
  snprintf(e.variant, sizeof e.variant, "%s", variant);
  snprintf(e.backend, sizeof e.backend, "aot");
  e.median_us = 12.345678901234567 * (double)(rows + 1);
  snprintf(e.default_variant, sizeof e.default_variant, "default_%s", variant);
  e.default_median_us = 0.1 + (double)cols;
  e.candidates = 7;
  e.rejected_ub = 3;
  return e;
}

static void assert_same_entry(const ug_tune_entry *a, const ug_tune_entry *b) {
  cr_expect_str_eq(a->kernel, b->kernel);
  cr_expect_str_eq(a->pass, b->pass);
  cr_expect_eq(a->dtype, b->dtype);
  cr_assert_eq(a->nshape, b->nshape);
  for (int i = 0; i < a->nshape; i++) {
    cr_expect_str_eq(a->shape_names[i], b->shape_names[i]);
    cr_expect_eq(a->shape[i], b->shape[i]);
  }
  cr_expect_eq(a->ub_bytes, b->ub_bytes);
  cr_expect_str_eq(a->variant, b->variant);
  cr_expect_str_eq(a->backend, b->backend);
  cr_expect_eq(a->median_us, b->median_us, "%.17g vs %.17g", a->median_us, b->median_us);
  cr_expect_str_eq(a->default_variant, b->default_variant);
  cr_expect_eq(a->default_median_us, b->default_median_us);
  cr_expect_eq(a->candidates, b->candidates);
  cr_expect_eq(a->rejected_ub, b->rejected_ub);
}

static const ug_tune_entry *find(const ug_tunedb *db, const ug_tune_entry *e) {
  return ug_tunedb_find(db, e->kernel, e->pass, e->dtype, e->nshape, e->shape, e->ub_bytes);
}

static void save(const ug_tunedb *db) {
  char err[512], warn[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, db, err, sizeof err, warn, sizeof warn), 0, "%s", err);
  cr_expect_str_eq(warn, "");
}

/* only the DB and its lock: no temporary file survives a save */
static void assert_no_leftovers(void) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  struct dirent *de;
  while ((de = readdir(d)))
    cr_expect(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "tune.json") ||
                  !strcmp(de->d_name, "tune.json.lock"),
              "left behind: %s", de->d_name);
  closedir(d);
}

Test(tunedb, round_trip) {
  ug_tunedb db = {0};
  snprintf(db.cpu, sizeof db.cpu, "Test CPU @ 3.0GHz");
  ug_tune_entry in[3] = {entry("rms_norm", 2, 2048, 4096, "rows4_bd1024"), entry("rms_norm", 0, 1, 3, "rows1"),
                         entry("embedding", 1, 65536, 8, "tiled_bd256")};
  snprintf(in[2].pass, sizeof in[2].pass, "bwd");
  in[2].nshape = 3; /* a third axis, named out of alphabetical order: file order is kept */
  snprintf(in[2].shape_names[2], sizeof in[2].shape_names[2], "a_axis");
  in[2].shape[2] = 16;
  for (int i = 0; i < 3; i++) cr_assert_eq(ug_tunedb_put(&db, &in[i]), 0);
  save(&db);
  ug_tunedb_free(&db);

  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_expect_str_eq(db.cpu, "Test CPU @ 3.0GHz");
  cr_assert_eq(db.n, 3);
  for (int i = 0; i < 3; i++) {
    const ug_tune_entry *e = find(&db, &in[i]);
    cr_assert_not_null(e, "entry %d not found", i);
    assert_same_entry(e, &in[i]);
  }
  struct stat st;
  cr_assert_eq(stat(db_path, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0644);
  assert_no_leftovers();
  ug_tunedb_free(&db);
}

Test(tunedb, put_replaces_equal_key_only) {
  ug_tunedb db = {0};
  ug_tune_entry a = entry("k", 0, 8, 8, "first"), b = entry("k", 0, 8, 8, "second");
  ug_tune_entry other_ub = entry("k", 0, 8, 8, "third"), other_name = entry("k", 0, 8, 8, "fourth");
  other_ub.ub_bytes = 1024;
  snprintf(other_name.shape_names[1], sizeof other_name.shape_names[1], "width");
  cr_assert_eq(ug_tunedb_put(&db, &a), 0);
  cr_assert_eq(ug_tunedb_put(&db, &b), 0);
  cr_assert_eq(ug_tunedb_put(&db, &other_ub), 0);
  cr_assert_eq(ug_tunedb_put(&db, &other_name), 0);
  cr_expect_eq(db.n, 3);
  cr_expect_str_eq(db.e[0].variant, "second");
  cr_expect_null(ug_tunedb_find(&db, "k", "fwd", 1, 2, a.shape, a.ub_bytes));
  ug_tunedb_free(&db);
}

Test(tunedb, merge_keeps_union_and_second_wins) {
  ug_tunedb first = {0}, second = {0};
  snprintf(first.cpu, sizeof first.cpu, "cpu-one");
  ug_tune_entry a = entry("rms_norm", 0, 1024, 1024, "a"), b = entry("rms_norm", 0, 2048, 1024, "b");
  ug_tune_entry b2 = entry("rms_norm", 0, 2048, 1024, "b_new"), c = entry("rms_norm", 2, 2048, 1024, "c");
  ug_tunedb_put(&first, &a);
  ug_tunedb_put(&first, &b);
  ug_tunedb_put(&second, &b2);
  ug_tunedb_put(&second, &c);
  save(&first);
  save(&second); /* no cpu: the file's is kept */

  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_expect_str_eq(db.cpu, "cpu-one");
  cr_assert_eq(db.n, 3);
  assert_same_entry(find(&db, &a), &a);
  assert_same_entry(find(&db, &b2), &b2);
  assert_same_entry(find(&db, &c), &c);
  assert_no_leftovers();
  ug_tunedb_free(&db);
  ug_tunedb_free(&first);
  ug_tunedb_free(&second);
}

Test(tunedb, bucket) {
  const int64_t in[] = {-5, 0, 1, 2, 3, 4, 5, 123, 1500, 2048, 2049, 4097, INT64_C(1) << 40, (INT64_C(1) << 40) + 1};
  const int64_t want[] = {-5, 0, 1, 2, 4, 4, 8, 128, 2048, 2048, 4096, 8192, INT64_C(1) << 40, INT64_C(1) << 41};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
    cr_expect_eq(ug_tune_bucket(in[i]), want[i], "bucket(%lld)", (long long)in[i]);
}

Test(tunedb, missing_file_is_empty_without_warning) {
  ug_tunedb db;
  char warn[512] = "stale";
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0);
  cr_expect_eq(db.n, 0);
  cr_expect_str_eq(warn, "");
  ug_tunedb_free(&db);
}

/* mode 0644 whatever the umask: a DB writable by others is refused */
static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  cr_assert_eq(chmod(path, 0644), 0);
}

#define GOOD_ENTRY                                                                                                  \
  "{\"kernel\": \"k\", \"pass\": \"fwd\", \"dtype\": \"f32\", \"shape\": {\"rows\": 8}, \"ub_bytes\": 1024, "        \
  "\"variant\": \"v\", \"backend\": \"aot\", \"median_us\": 1.5, \"default_variant\": \"d\", "                       \
  "\"default_median_us\": 2, \"candidates\": 3, \"rejected_ub\": 0}"

static void expect_unusable(const char *text, const char *why) {
  write_text(db_path, text);
  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1, "%s: accepted", why);
  cr_expect_eq(db.n, 0, "%s", why);
  cr_expect_null(db.e, "%s", why);
  cr_expect_not_null(strstr(warn, db_path), "%s: warning \"%s\" does not name the file", why, warn);
  cr_expect_gt(strlen(warn), strlen(db_path) + 4, "%s: the warning \"%s\" says nothing after the file name", why, warn);
  ug_tunedb_free(&db);
}

Test(tunedb, corrupt_files_are_empty_with_a_warning) {
  /* the good document itself loads: the cases below differ from it in one way */
  write_text(db_path, "{\"version\": 1, \"cpu\": \"x\", \"entries\": [" GOOD_ENTRY "]}");
  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_assert_eq(db.n, 1);
  cr_expect_eq(db.e[0].default_median_us, 2.0);
  ug_tunedb_free(&db);

  expect_unusable("{\"version\": 1, \"cpu\": \"x\", \"entries\": [" GOOD_ENTRY, "truncated");
  expect_unusable("", "empty");
  expect_unusable("{\"version\": 2, \"cpu\": \"x\", \"entries\": [" GOOD_ENTRY "]}", "version 2");
  expect_unusable("rows=2048 variant=fast\n", "not JSON");
  expect_unusable("[1, 2]", "not an object");
  expect_unusable("{\"version\": 1, \"cpu\": \"x\", \"entries\": {}}", "entries not an array");
  expect_unusable("{\"version\": 1, \"cpu\": \"x\", \"entries\": [{\"kernel\": \"k\", \"pass\": \"fwd\", \"dtype\": "
                  "\"f32\", \"shape\": {}, \"ub_bytes\": 1, \"backend\": \"aot\", \"median_us\": 1, "
                  "\"default_variant\": \"d\", \"default_median_us\": 2, \"candidates\": 3, \"rejected_ub\": 0}]}",
                  "entry missing variant");
  expect_unusable("{\"version\": 1, \"entries\": [{\"kernel\": \"k\", \"pass\": \"fwd\", \"dtype\": \"f64\", "
                  "\"shape\": {}, \"ub_bytes\": 1, \"variant\": \"v\", \"backend\": \"aot\", \"median_us\": 1, "
                  "\"default_variant\": \"d\", \"default_median_us\": 2, \"candidates\": 3, \"rejected_ub\": 0}]}",
                  "unknown dtype");
  expect_unusable("{\"version\": 1, \"entries\": [{\"kernel\": \"k\", \"pass\": \"fwd\", \"dtype\": \"f32\", "
                  "\"shape\": {\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1}, "
                  "\"ub_bytes\": 1, \"variant\": \"v\", \"backend\": \"aot\", \"median_us\": 1, "
                  "\"default_variant\": \"d\", \"default_median_us\": 2, \"candidates\": 3, \"rejected_ub\": 0}]}",
                  "nine shape values");
  expect_unusable("{\"version\": 1, \"entries\": [{\"kernel\": \"k\", \"pass\": \"fwd\", \"dtype\": \"f32\", "
                  "\"shape\": {}, \"ub_bytes\": 1, \"variant\": \"v\", \"backend\": \"a-backend-name-too-long\", "
                  "\"median_us\": 1, \"default_variant\": \"d\", \"default_median_us\": 2, \"candidates\": 3, "
                  "\"rejected_ub\": 0}]}",
                  "string too long");
}

Test(tunedb, syntax_error_has_line_and_column) {
  write_text(db_path, "{\"version\": 1,\n  \"entries\": [,]}");
  ug_tunedb db;
  char warn[512], want[256];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1);
  snprintf(want, sizeof want, "%s:2:", db_path);
  cr_expect_eq(strncmp(warn, want, strlen(want)), 0, "%s", warn);
  ug_tunedb_free(&db);
}

Test(tunedb, a_corrupt_file_is_replaced_on_save_with_a_warning) {
  write_text(db_path, "{\"version\": 1, \"entries\": [");
  ug_tunedb db = {0};
  ug_tune_entry a = entry("k", 0, 4, 4, "v");
  ug_tunedb_put(&db, &a);
  char err[512], warn[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err, warn, sizeof warn), 0, "%s", err);
  cr_expect_not_null(strstr(warn, db_path), "%s", warn);
  ug_tunedb_free(&db);
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_expect_eq(db.n, 1);
  ug_tunedb_free(&db);
}

/* a DB another user could have written steers every call: refused */
Test(tunedb, a_db_writable_by_others_or_owned_by_another_user_is_refused) {
  const char *text = "{\"version\": 1, \"cpu\": \"x\", \"entries\": [" GOOD_ENTRY "]}";
  write_text(db_path, text);
  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "mode 0644, ours: %s", warn);
  cr_assert_eq(db.n, 1);
  ug_tunedb_free(&db);
  const mode_t bad_modes[] = {0666, 0664, 0646};
  for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++) {
    cr_assert_eq(chmod(db_path, bad_modes[i]), 0);
    cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1, "mode %03o accepted", (unsigned)bad_modes[i]);
    cr_expect_eq(db.n, 0);
    cr_expect_not_null(strstr(warn, "writable by its owner only"), "%s", warn);
  }
  cr_assert_eq(chmod(db_path, 0644), 0);
  if (geteuid() != 0) return; /* only root can give a file away */
  cr_assert_eq(chown(db_path, 4242, 4242), 0);
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1, "another user's DB accepted");
  cr_expect_not_null(strstr(warn, "owned by uid 4242"), "%s", warn);
}

Test(tunedb, a_symlink_at_the_path_is_not_followed) {
  char target[256];
  snprintf(target, sizeof target, "%s/elsewhere.json", dir);
  const char *text = "{\"version\": 1, \"cpu\": \"x\", \"entries\": [" GOOD_ENTRY "]}";
  write_text(target, text);
  cr_assert_eq(symlink(target, db_path), 0);

  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1);
  cr_expect_eq(db.n, 0);
  cr_expect_not_null(strstr(warn, db_path), "%s", warn);

  /* saving replaces the link itself and leaves its target as it was */
  ug_tune_entry a = entry("k", 0, 4, 4, "v");
  ug_tunedb_put(&db, &a);
  char err[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err, warn, sizeof warn), 0, "%s", err);
  ug_tunedb_free(&db);
  struct stat st;
  cr_assert_eq(lstat(db_path, &st), 0);
  cr_expect(S_ISREG(st.st_mode));
  FILE *f = fopen(target, "r");
  char got[1024] = {0};
  cr_assert_not_null(f);
  cr_expect_gt(fread(got, 1, sizeof got - 1, f), 0);
  fclose(f);
  cr_expect_str_eq(got, text);
}

enum { PER_TUNER = 50 };

/* one tuner: PER_TUNER saves of one entry each, as `ubgen tune` does */
static int tuner(int id) {
  for (int i = 0; i < PER_TUNER; i++) {
    ug_tunedb db = {0};
    ug_tune_entry e = entry("rms_norm", 0, id * 1000 + i, 64, id ? "b" : "a");
    char err[512], warn[512];
    if (ug_tunedb_put(&db, &e) < 0 || ug_tunedb_merge_save(db_path, &db, err, sizeof err, warn, sizeof warn) < 0 ||
        warn[0]) {
      fprintf(stderr, "tuner %d: %s%s\n", id, err, warn);
      return 1;
    }
    ug_tunedb_free(&db);
  }
  return 0;
}

Test(tunedb, two_concurrent_tuners_lose_no_entry) {
  pid_t pid[2];
  for (int t = 0; t < 2; t++) {
    pid[t] = fork();
    cr_assert_geq(pid[t], 0);
    if (pid[t] == 0) _exit(tuner(t));
  }
  for (int t = 0; t < 2; t++) {
    int status;
    cr_assert_eq(waitpid(pid[t], &status, 0), pid[t]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tuner %d failed", t);
  }
  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_expect_eq(db.n, 2 * PER_TUNER);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < PER_TUNER; i++) {
      ug_tune_entry e = entry("rms_norm", 0, t * 1000 + i, 64, t ? "b" : "a");
      cr_expect_not_null(find(&db, &e), "tuner %d entry %d lost", t, i);
    }
  assert_no_leftovers();
  ug_tunedb_free(&db);
}
