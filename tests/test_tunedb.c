/* The tuning DB (docs/design.md "The tuning DB"): round trip, merge, shape buckets;
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

#ifndef TC_TIME_SCALE
#define TC_TIME_SCALE 1
#endif

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

static const char *const ROWS_COLS[2] = {"rows", "cols"};

static const ug_tune_entry *find(const ug_tunedb *db, const ug_tune_entry *e) {
  const char *names[UG_TUNE_MAX_SHAPE];
  for (int i = 0; i < e->nshape; i++) names[i] = e->shape_names[i];
  return ug_tunedb_find(db, e->kernel, e->pass, e->dtype, e->nshape, names, e->shape, e->ub_bytes);
}

static void save(const ug_tunedb *db) {
  char err[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, db, err, sizeof err), 0, "%s", err);
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
  cr_expect_null(ug_tunedb_find(&db, "k", "fwd", 1, 2, ROWS_COLS, a.shape, a.ub_bytes));
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

/* the DB is read by its own one-pass reader (gen/tunedb_read.c): any valid
 * JSON of the right shape loads, whatever the key order, whitespace,
 * escapes, unknown keys and values; a later duplicate key wins; what is not
 * JSON is refused with its line and column */
Test(tunedb, the_reader_takes_any_valid_json_and_refuses_the_rest) {
  write_text(db_path,
             "\n{ \"extra\" : [ 1 , -2.5e3 , { \"a\" : [ ] , \"b\" : { } } , true , false , null , \"\\u00e9\" , \"\xc3\xa9 \xf0\x9f\x98\x80\" ] ,\n"
             "  \"entries\" : [ { \"shape\" : { \"cols\" : 256 , \"rows\" : 64 , \"rows\" : 128 } ,\n"
             "    \"rejected_ub\" : 0 , \"candidates\" : 3 , \"default_median_us\" : 2 , \"default_variant\" : \"d\\/e\" ,\n"
             "    \"median_us\" : 1.5E1 , \"backend\" : \"aot\" , \"variant\" : \"v\\u0031\" , \"ub_bytes\" : 196608 ,\n"
             "    \"dtype\" : \"bf16\" , \"pass\" : \"fwd\" , \"kernel\" : \"rms_norm\" , \"kernel\" : \"k\\\"q\" ,\n"
             "    \"unknown\" : { \"deep\" : [ [ [ ] ] ] } } ] ,\n"
             "  \"cpu\" : \"\\ud83d\\ude00 cpu\" , \"version\" : 1 }\n");
  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_assert_eq(db.n, 1);
  const ug_tune_entry *e = &db.e[0];
  cr_expect_str_eq(e->kernel, "k\"q");
  cr_expect_str_eq(e->variant, "v1");
  cr_expect_str_eq(e->default_variant, "d/e");
  cr_expect_str_eq(db.cpu, "\xf0\x9f\x98\x80 cpu");
  cr_expect_eq(e->dtype, 2);
  cr_expect_eq(e->median_us, 15.0);
  cr_expect_eq(e->nshape, 2);
  cr_expect_str_eq(e->shape_names[0], "cols");
  cr_expect_eq(e->shape[1], 128, "the later rows wins");
  ug_tunedb_free(&db);
  static const char *const bad[][2] = {
      {"{\"version\": 1, \"entries\": [],}", "1:30:"},
      {"{\"version\": 1,\n \"entries\": [] } x", "2:18:"},
      {"{\"version\": 01, \"entries\": []}", "1:13:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"\\x\"}", "1:37:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"\\ud800\"}", "1:"},
      {"{\"version\": 1, \"entries\": [], \"n\": 99999999999999999999}", "1:"},
      {"{\"version\": 1, \"entries\": [], \"n\": tru}", "1:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"a\nb\"}", "1:38:"},
      /* raw bytes that are not UTF-8 (the writer, jansson, refused the whole DB after a sweep once):
       * a stray continuation, a cut sequence, an overlong '/', a surrogate, above U+10FFFF */
      {"{\"version\": 1, \"entries\": [], \"s\": \"a\x80\"}", "1:38:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"\xc3\"}", "1:37:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"\xc0\xaf\"}", "1:37:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"\xed\xa0\x80\"}", "1:37:"},
      {"{\"version\": 1, \"entries\": [], \"s\": \"\xf4\x90\x80\x80\"}", "1:37:"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(db_path, bad[i][0]);
    cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1, "%s loaded", bad[i][0]);
    char want[256];
    snprintf(want, sizeof want, "%s:%s", db_path, bad[i][1]);
    cr_expect_eq(strncmp(warn, want, strlen(want)), 0, "%s: %s", bad[i][0], warn);
    cr_expect_eq(db.n, 0);
    ug_tunedb_free(&db);
  }
  char deep[300];
  memset(deep, '[', sizeof deep);
  memcpy(deep, "{\"version\": 1, \"entries\": [], \"d\": ", 35);
  deep[sizeof deep - 1] = '\0';
  write_text(db_path, deep);
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 1);
  cr_expect(strstr(warn, "nested"), "%s", warn);
  ug_tunedb_free(&db);
}

static char *slurp_file(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* A typo in --db must not destroy a file: anything that is not a DB this
 * version reads is refused (-2) and left byte for byte, before a sweep
 * (check_target) and at the save itself. It was replaced, with a warning. */
Test(tunedb, a_file_that_is_not_a_db_is_never_overwritten) {
  const char *texts[] = {
      "{\"version\": 1, \"entries\": [",                       /* truncated */
      "notes: tune rms_norm again tomorrow\n",                   /* a text file */
      "{\"version\": 2, \"cpu\": \"x\", \"entries\": []}\n",        /* a newer format */
      "",                                                      /* empty */
      "{\"version\": 1, \"entries\": [{\"kernel\": \"k\"}]}\n",     /* an entry missing its fields */
  };
  ug_tunedb db = {0};
  ug_tune_entry a = entry("k", 0, 4, 4, "v");
  ug_tunedb_put(&db, &a);
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    write_text(db_path, texts[i]);
    char err[1024];
    cr_assert_eq(ug_tunedb_check_target(db_path, "x", err, sizeof err), -2, "text %zu accepted", i);
    cr_expect(strstr(err, db_path) && strstr(err, "not a tuning DB"), "%s", err);
    cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err), -2, "text %zu overwritten", i);
    cr_expect(strstr(err, "not overwritten"), "%s", err);
    cr_assert_str_eq(slurp_file(db_path), texts[i], "text %zu changed", i);
  }
  /* a DB this version reads is merged into, as before */
  write_text(db_path, "{\"version\": 1, \"cpu\": \"x\", \"entries\": [" GOOD_ENTRY "]}");
  char err[1024];
  cr_assert_eq(ug_tunedb_check_target(db_path, "x", err, sizeof err), 0, "%s", err);
  save(&db);
  ug_tunedb_free(&db);
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_expect_eq(db.n, 2);
  ug_tunedb_free(&db);
}

/* what a sweep would find only at its end: a missing or read-only
 * directory, a lock that cannot be opened, another CPU's DB */
Test(tunedb, check_target_says_before_a_sweep_why_a_save_would_fail) {
  char err[1024], path[256];
  cr_assert_eq(ug_tunedb_check_target(db_path, "x", err, sizeof err), 0, "no file yet: %s", err);
  snprintf(path, sizeof path, "%s/no/such/dir/db.json", dir);
  cr_assert_eq(ug_tunedb_check_target(path, "x", err, sizeof err), -2);
  cr_expect(strstr(err, "does not exist"), "%s", err);
  char lock[300];
  snprintf(lock, sizeof lock, "%s.lock", db_path);
  cr_assert_eq(mkdir(lock, 0700), 0);
  cr_assert_eq(ug_tunedb_check_target(db_path, "x", err, sizeof err), -2);
  cr_expect(strstr(err, "lock"), "%s", err);
  cr_assert_eq(rmdir(lock), 0);
  write_text(db_path, "{\"version\": 1, \"cpu\": \"Other CPU\", \"entries\": []}");
  cr_assert_eq(ug_tunedb_check_target(db_path, "x", err, sizeof err), -2);
  cr_expect(strstr(err, "Other CPU"), "%s", err);
  if (geteuid() == 0) return; /* root writes anywhere */
  unlink(db_path);
  cr_assert_eq(chmod(dir, 0500), 0);
  cr_assert_eq(ug_tunedb_check_target(db_path, "x", err, sizeof err), -2);
  cr_expect(strstr(err, "cannot write"), "%s", err);
  chmod(dir, 0700);
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

  /* saving neither writes through the link nor replaces it */
  ug_tune_entry a = entry("k", 0, 4, 4, "v");
  ug_tunedb_put(&db, &a);
  char err[512];
  cr_assert_eq(ug_tunedb_merge_save(db_path, &db, err, sizeof err), -2, "%s", err);
  cr_expect(strstr(err, "symbolic link"), "%s", err);
  ug_tunedb_free(&db);
  struct stat st;
  cr_assert_eq(lstat(db_path, &st), 0);
  cr_expect(S_ISLNK(st.st_mode));
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
    char err[512];
    if (ug_tunedb_put(&db, &e) < 0 || ug_tunedb_merge_save(db_path, &db, err, sizeof err) < 0) {
      fprintf(stderr, "tuner %d: %s\n", id, err);
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

/* A DB re-saved with sorted keys (jq -S, Python's sort_keys) lists a shape
 * as {"cols", "rows"}: its entries must still serve their own shapes, by
 * name, and never the transposed one (they once did, matched by position) */
Test(tunedb, shapes_match_by_name_in_any_order) {
  write_text(db_path, "{\"version\": 1, \"entries\": [{\"kernel\": \"k\", \"pass\": \"fwd\", \"dtype\": \"f32\", "
                      "\"shape\": {\"cols\": 256, \"rows\": 64}, \"ub_bytes\": 196608, \"variant\": \"v\", "
                      "\"backend\": \"aot\", \"median_us\": 1.0, \"default_variant\": \"d\", \"default_median_us\": "
                      "2.0, \"candidates\": 2, \"rejected_ub\": 0}]}");
  ug_tunedb db;
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  const int64_t own[2] = {64, 256}, transposed[2] = {256, 64};
  cr_assert_not_null(ug_tunedb_find(&db, "k", "fwd", 0, 2, ROWS_COLS, own, 196608), "its own shape");
  cr_assert_null(ug_tunedb_find(&db, "k", "fwd", 0, 2, ROWS_COLS, transposed, 196608), "the transposed shape");
  const char *other[2] = {"rowz", "cols"};
  cr_assert_null(ug_tunedb_find(&db, "k", "fwd", 0, 2, other, own, 196608), "a name the entry does not have");
  /* put replaces the entry whatever order its shape comes in */
  ug_tune_entry e = entry("k", 0, 64, 256, "second");
  cr_assert_eq(ug_tunedb_put(&db, &e), 0);
  cr_assert_eq(db.n, 1);
  cr_assert_str_eq(ug_tunedb_find(&db, "k", "fwd", 0, 2, ROWS_COLS, own, 196608)->variant, "second");
  /* a shape naming one value twice has no key */
  snprintf(e.shape_names[1], sizeof e.shape_names[1], "rows");
  cr_assert_eq(ug_tunedb_put(&db, &e), -1);
  ug_tunedb_free(&db);
}

/* A sweep over many shapes and machines makes big DBs, all loaded inside
 * ubg_ctx_create: loading once took quadratic time (a linear search per
 * insert: 80k entries in 74 s). 80k entries with distinct keys (a file of
 * about 40 MB), saved and loaded, and every one found again; the timeout
 * is the test. */
#ifdef TC_REDUCED
enum { BIG_DB = 8000 };
#else
enum { BIG_DB = 80000 };
#endif
Test(tunedb, eighty_thousand_entries_load_in_linear_time, .timeout = 30 * TC_TIME_SCALE) {
  enum { N = BIG_DB };
  ug_tunedb db = {0};
  for (int i = 0; i < N; i++) {
    ug_tune_entry e = entry(i % 2 ? "rms_norm" : "embedding", i % 3, 1 + i / 3, 64 << (i % 5), "v");
    cr_assert_eq(ug_tunedb_put(&db, &e), 0);
  }
  cr_assert_eq(db.n, N);
  save(&db);
  ug_tunedb_free(&db);
  char warn[512];
  cr_assert_eq(ug_tunedb_load(db_path, &db, warn, sizeof warn), 0, "%s", warn);
  cr_assert_eq(db.n, N);
  for (int i = 0; i < N; i++) {
    ug_tune_entry e = entry(i % 2 ? "rms_norm" : "embedding", i % 3, 1 + i / 3, 64 << (i % 5), "v");
    cr_assert_not_null(find(&db, &e), "entry %d", i);
  }
  ug_tunedb_free(&db);
}
