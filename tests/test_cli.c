/* The `ubgen` command line (docs/cli.md): exit statuses
 * (0 ok, 1 a check failed, 2 bad usage or input), list/plan/emit/check output,
 * emit's incremental writes and its all-or-nothing behaviour on bad input,
 * and user spec directories.
 *
 * Every test runs build/bin/ubgen through the shell with stdout and stderr
 * captured to files in its own mkdtemp directory. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- running ubgen ------------------------------------------------------------ */

#include "../runtime/gemm_onednn.h"
#include "run_ubgen.h"
#include "ubgen.h"

static void cli_setup(void) { scratch_setup("cli"); }

TestSuite(cli, .init = cli_setup, .fini = scratch_teardown, .timeout = 60 * TC_TIME_SCALE);

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  cr_assert_eq(fclose(f), 0);
  cr_assert_eq(chmod(path, 0644), 0); /* whatever the umask: a tuning DB writable by others is refused */
}

static char *path_in(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

/* UBGEN_SRC/rel copied into dir (as its base name) */
static void copy_in(const char *rel, const char *dir) {
  char *src = path_in(UBGEN_SRC, rel);
  char *text = slurp(src);
  cr_assert_not_null(text, "cannot read %s", src);
  const char *base = strrchr(rel, '/');
  char *dst = path_in(dir, base ? base + 1 : rel);
  write_file(dst, text);
  free(dst), free(text), free(src);
}

/* path's first `from` replaced by `to` (which must be there) */
static void edit_file(const char *path, const char *from, const char *to) {
  char *t = slurp(path);
  cr_assert_not_null(t, "cannot read %s", path);
  char *at = strstr(t, from);
  cr_assert_not_null(at, "%s has no \"%s\"; update this test", path, from);
  char *mod = malloc(strlen(t) + strlen(to) + 1);
  sprintf(mod, "%.*s%s%s", (int)(at - t), t, to, at + strlen(from));
  write_file(path, mod);
  free(mod), free(t);
}

static int cmp_strp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* the entries of a directory (without . and ..), sorted; -1 if it cannot be opened */
static int list_dir(const char *dir, char ***names) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 64;
  char **v = malloc(cap * sizeof *v);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    v[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(v, n, sizeof *v, cmp_strp);
  *names = v;
  return n;
}

static void free_names(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* the line of text that contains needle (copied), or NULL */
static char *line_with(const char *text, const char *needle) {
  const char *p = strstr(text, needle);
  if (!p) return NULL;
  const char *b = p, *e = p;
  while (b > text && b[-1] != '\n') b--;
  while (*e && *e != '\n') e++;
  return strndup(b, (size_t)(e - b));
}

/* the last non-empty line */
static char *last_line(const char *text) {
  size_t n = strlen(text);
  while (n > 0 && text[n - 1] == '\n') n--;
  size_t b = n;
  while (b > 0 && text[b - 1] != '\n') b--;
  return strndup(text + b, n - b);
}

static json_t *parse_json(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  cr_assert_not_null(j, "output is not JSON: %s at line %d column %d\n%.1000s", e.text, e.line, e.column, text);
  return j;
}

/* ---- text listing of `ubgen list` ---------------------------------------------- */

typedef struct {
  int rows, fit;           /* variant rows seen, and those marked "yes" */
  int total, total_fit;    /* the final "N variants, M fit the budget" line */
  int rows_other_prefix;   /* rows whose variant does not start with the prefix */
} listing;

static listing parse_listing(const char *text, const char *prefix) {
  listing l = {0};
  char *copy = strdup(text), *save = NULL;
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char name[200], rest[200];
    long long fp;
    /* a variant row: "  <name> <footprint> yes|no (over budget)" */
    if (line[0] == ' ' && sscanf(line, " %199s %lld %199[^\n]", name, &fp, rest) == 3 && strchr(name, '_')) {
      l.rows++;
      if (!strcmp(rest, "yes")) l.fit++;
      else cr_assert(!strncmp(rest, "no", 2), "row neither yes nor no: %s", line);
      if (strncmp(name, prefix, strlen(prefix))) l.rows_other_prefix++;
    }
  }
  free(copy);
  char *last = last_line(text);
  cr_assert_eq(sscanf(last, "%d variants, %d fit the budget", &l.total, &l.total_fit), 2,
               "last line is not \"N variants, M fit the budget\": %s", last);
  free(last);
  return l;
}

/* ---- help, unknown command, commands not in this build --------------------------- */

Test(cli, help_exits_0_and_names_the_commands) {
  run_result r = ubgen("help");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "Usage: ubgen"), "%s", r.out);
  cr_assert(strstr(r.out, "list"));
  cr_assert(strstr(r.out, "plan"));
  cr_assert(strstr(r.out, "emit"));
  cr_assert(strstr(r.out, "check"));
  cr_assert_str_empty(r.err);
  run_free(&r);
}

Test(cli, unknown_command_exits_2) {
  run_result r = ubgen("frobnicate");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "frobnicate"), "the message names the command: %s", r.err);
  cr_assert(strstr(r.err, "ubgen: "), "%s", r.err);
  run_free(&r);
  r = ubgen("%s", "");
  assert_status(r, 2); /* no command at all */
  run_free(&r);
}

Test(cli, tune_is_not_in_this_build) {
  run_result r = ubgen("tune");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "tune"), "%s", r.err);
  cr_assert_str_empty(r.out);
  run_free(&r);
}

Test(cli, unknown_option_exits_2) {
  run_result r = ubgen("list --frob 3");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "--frob"), "%s", r.err);
  cr_assert_str_empty(r.out);
  run_free(&r);
}

/* ---- GNU conventions: --help, --version, global options, suggestions --------------- */

Test(cli, every_command_has_help_on_stdout_with_exit_0) {
  const char *cmds[] = {"list", "plan", "emit", "check", "tune", "tune merge"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    for (int form = 0; form < 3; form++) {
      run_result r = form == 0 ? ubgen("%s --help", cmds[i]) : form == 1 ? ubgen("%s -h", cmds[i]) : ubgen("help %s", cmds[i]);
      assert_status(r, 0);
      char want[64];
      snprintf(want, sizeof want, "Usage: ubgen %s", cmds[i]);
      cr_assert(strstr(r.out, want) == r.out, "%s (form %d) begins with \"%s\": %s", cmds[i], form, want, r.out);
      cr_assert(strstr(r.out, "Exit status"), "%s: %s", cmds[i], r.out);
      cr_assert_str_empty(r.err, "%s: %s", cmds[i], r.err);
      run_free(&r);
    }
  /* --help wins over anything else on the line, even a bad option */
  run_result r = ubgen("plan --frob --help");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "Usage: ubgen plan"), "%s", r.out);
  run_free(&r);
  r = ubgen("help frobnicate");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "frobnicate"), "%s", r.err);
  run_free(&r);
}

Test(cli, version_and_a_complete_top_level_help) {
  run_result r = ubgen("--version");
  assert_status(r, 0);
  int a, b, c;
  cr_assert_eq(sscanf(r.out, "ubgen %d.%d.%d", &a, &b, &c), 3, "%s", r.out);
  run_free(&r);
  r = ubgen("--help");
  assert_status(r, 0);
  const char *named[] = {"tune merge", "--shard", "--svg", "--tuned", "flce.chunk", "--verbose", "--self-register",
                         "--no-reference", "--version", "--specs", "--ub", "--margin", "Exit status"};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    cr_assert(strstr(r.out, named[i]), "the top-level help names %s: %s", named[i], r.out);
  run_free(&r);
}

Test(cli, global_options_may_come_before_the_command) {
  run_result before = ubgen("--specs %s/tests/specs --ub 256KiB list --kernel guard_probe", UBGEN_SRC);
  run_result after = ubgen("list --kernel guard_probe --specs %s/tests/specs --ub 256KiB", UBGEN_SRC);
  assert_status(before, 0);
  assert_status(after, 0);
  cr_assert(strstr(before.out, "guard_probe_fwd_f32"), "%s", before.out);
  cr_assert_str_eq(before.out, after.out);
  run_free(&before);
  run_free(&after);
  run_result r = ubgen("--ub=l1 --margin 0.5 list --kernel rms_norm");
  assert_status(r, 0);
  run_free(&r);
  r = ubgen("--specs");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "--specs"), "%s", r.err);
  run_free(&r);
}

Test(cli, misspellings_get_a_suggestion) {
  struct {
    const char *args, *suggestion;
  } cases[] = {
      {"lst", "did you mean \"list\""},
      {"list --kernal rms_norm", "did you mean --kernel"},
      {"list --kernel rms_nrom", "did you mean \"rms_norm\""},
      {"plan rms_nrom.fwd --dtype f32 --shape rows=2,cols=8", "did you mean \"rms_norm\""},
      {"plan rms_norm.fdw --dtype f32 --shape rows=2,cols=8", "did you mean rms_norm.fwd"},
      {"plan rms_norm.fwd --dtype f32 --shape rwos=2,cols=8", "did you mean rows"},
      {"check rms_nrom", "did you mean \"rms_norm\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result r = ubgen("%s", cases[i].args);
    assert_status(r, 2);
    cr_assert(strstr(r.err, cases[i].suggestion), "%s: %s", cases[i].args, r.err);
    run_free(&r);
  }
  /* an unknown kernel lists the known ones and says how to add more */
  run_result r = ubgen("plan swiglo.fwd --dtype f32 --shape rows=2,cols=8");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "kernels: ") && strstr(r.err, "layer_norm") && strstr(r.err, "UBGEN_SPEC_PATH"), "%s", r.err);
  run_free(&r);
  /* nothing near: no suggestion, the plain message */
  r = ubgen("zzzzzzzz");
  assert_status(r, 2);
  cr_assert(!strstr(r.err, "did you mean"), "%s", r.err);
  run_free(&r);
}

Test(cli, json_and_counts_read_as_written) {
  /* a margin of 0.9 prints as 0.9, and the shape is an object, as the DB keeps it */
  run_result r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=3,cols=100 --json");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "\"safety_margin\": 0.9,"), "%s", r.out);
  json_error_t e;
  json_t *j = json_loads(r.out, 0, &e);
  cr_assert_not_null(j, "%s", e.text);
  json_t *shape = json_object_get(j, "shape");
  cr_assert(json_is_object(shape), "%s", r.out);
  cr_assert_eq(json_integer_value(json_object_get(shape, "rows")), 3);
  cr_assert_eq(json_integer_value(json_object_get(shape, "cols")), 100);
  json_decref(j);
  run_free(&r);
  r = ubgen("plan flce.chunk --dtype bf16 --shape bt=100,hidden=64,vocab=1000 --json");
  assert_status(r, 0);
  j = json_loads(r.out, 0, &e);
  cr_assert_not_null(j, "%s", e.text);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "shape"), "vocab")), 1000);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "bucket"), "vocab")), 1024);
  json_decref(j);
  run_free(&r);
  /* one of a thing is singular */
  r = ubgen("list --kernel guard_probe --specs %s/tests/specs", UBGEN_SRC);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "\n1 variant, 1 fit the budget\n"), "%s", r.out);
  run_free(&r);
}

Test(cli, plan_reads_what_tune_wrote_by_default_and_a_missing_db_is_an_error) {
  run_result r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --db %s/nope.json", scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "nope.json") && strstr(r.err, "must exist"), "a typo in a path is not silent: %s", r.err);
  cr_assert_str_empty(r.out);
  run_free(&r);
  /* nothing tuned yet: the plan says where it looked */
  r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --json");
  assert_status(r, 0);
  char where[400];
  snprintf(where, sizeof where, "no tuning DB at %s/cache/tuning.json", scratch);
  cr_assert(strstr(r.out, "\"source\": \"default\"") && strstr(r.out, where), "%s", r.out);
  run_free(&r);
  /* tune without --db writes where the library reads; plan without --db reads it */
  r = ubgen("tune rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --reps 2");
  assert_status(r, 0);
  run_free(&r);
  char db[400];
  snprintf(db, sizeof db, "%s/cache/tuning.json", scratch);
  struct stat st;
  cr_assert_eq(stat(db, &st), 0, "tune wrote %s", db);
  r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --json");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "\"source\": \"tuned\""), "%s", r.out);
  run_free(&r);
}

/* on a terminal (script(1) gives the command one) the progress lines say
 * which unit of how many runs and, from the second on, the time left */
Test(cli, tune_on_a_terminal_says_where_the_sweep_is_and_the_time_left) {
  char cmd[2000], out[400];
  snprintf(out, sizeof out, "%s/tty.out", scratch);
  snprintf(cmd, sizeof cmd,
           "cd '%s' && exec script -qec \"'%s' tune rms_norm.fwd --dtype bf16 --shape rows=200/300,cols=512 --reps 2 --db "
           "'%s/db.json'\" /dev/null > '%s' 2>&1 </dev/null",
           scratch, UBGEN_BIN, scratch, out);
  int st = system(cmd);
  char *text = slurp(out);
  cr_assert_not_null(text);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", text);
  cr_assert(strstr(text, "[1/2] tune rms_norm.fwd bf16: verify"), "the first unit: %s", text);
  cr_assert(strstr(text, "[2/2, about "), "the second unit, with the time left: %s", text);
  free(text);
}

/* --dry-run counts what a real sweep times and writes nothing */
Test(cli, tune_dry_run_counts_the_candidates_the_sweep_times_and_writes_nothing) {
  run_result r = ubgen("tune rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --dry-run --db %s/db.json", scratch);
  assert_status(r, 0);
  int units = 0, ncand = 0;
  char least[16] = "";
  cr_assert_eq(sscanf(r.out, "%d unit (pass, dtype, shape), %d candidates: at least %15s", &units, &ncand, least), 3,
               "%s", r.out);
  cr_assert(strstr(r.out, "nothing tuned (--dry-run)"), "%s", r.out);
  run_free(&r);
  char db[400];
  snprintf(db, sizeof db, "%s/db.json", scratch);
  struct stat st;
  cr_assert_neq(stat(db, &st), 0, "a dry run writes no DB");
  r = ubgen("tune rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --reps 2 --json --db %s/db.json", scratch);
  assert_status(r, 0);
  json_t *j = parse_json(r.out);
  cr_assert_eq(json_array_size(j), 1);
  cr_assert_eq((int)json_array_size(json_object_get(json_array_get(j, 0), "variants")), ncand,
               "the dry run counted %d candidates", ncand);
  json_decref(j);
  run_free(&r);
}

/* a sweep whose floor is over a minute says so before its first unit: here
 * the first unit then fails at once (its buffers cannot be allocated) */
Test(cli, tune_says_before_it_starts_that_it_will_take_long) {
  run_result r = ubgen("tune flce.chunk --dtype f32 --shape bt=65536,hidden=65536,vocab=1048576 --db %s/db.json", scratch);
  cr_assert_neq(r.status, 0, "%s", r.err);
  const char *said = strstr(r.err, "ubgen: tune: 1 unit (pass, dtype, shape), ");
  said = said ? strstr(said, " candidates: at least ") : NULL;
  const char *failed = strstr(r.err, "out of memory");
  cr_assert(said && failed && said < failed, "the estimate comes first: %s", r.err);
  cr_assert(strstr(said, "h, likely more\n"), "hours: %s", said);
  run_free(&r);
  /* the README's shape: at least minutes, said before the run */
  r = ubgen("tune flce.chunk --shape bt=4096,hidden=4096,vocab=32768 --dry-run");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "2 units (pass, dtype, shape), ") && strstr(r.out, "m; nothing tuned"), "%s", r.out);
  run_free(&r);
}

/* a later unit that fails (here: the default's scratch over the sweep's cap
 * at vocab 2^20) loses none of the units that finished: they are saved,
 * and the exit status says the sweep failed. That unit's other candidates
 * were verified against the default's missing outputs once (SIGSEGV). */
Test(cli, tune_saves_the_units_that_finished_before_one_failed) {
  run_result r = ubgen("tune flce.chunk --dtype f32 --shape bt=64,hidden=64,vocab=256/1048576 --reps 1 --db %s/db.json",
                       scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "the default fails"), "%s", r.err);
  cr_assert(strstr(r.out, "1 entry merged into") && strstr(r.out, "(the units that finished before the failure)"),
            "%s", r.out);
  run_free(&r);
  char path[512];
  snprintf(path, sizeof path, "%s/db.json", scratch);
  json_error_t e;
  json_t *db = json_load_file(path, 0, &e);
  cr_assert_not_null(db, "%s", e.text);
  json_t *entries = json_object_get(db, "entries");
  cr_assert_eq(json_array_size(entries), 1);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(json_array_get(entries, 0), "shape"), "vocab")), 256);
  json_decref(db);
}

Test(cli, check_names_a_kernel_as_list_and_emit_do) {
  run_result by_target = ubgen("check tune_probe --specs %s/tests/specs --no-reference", UBGEN_SRC);
  run_result by_option = ubgen("check --kernel tune_probe --specs %s/tests/specs --no-reference", UBGEN_SRC);
  run_result by_pass = ubgen("check tune_probe.fwd --specs %s/tests/specs --no-reference", UBGEN_SRC);
  /* tune_probe's d64 variant is wrong on purpose: each form finds it (exit 1) */
  assert_status(by_target, 1);
  assert_status(by_option, 1);
  assert_status(by_pass, 1);
  cr_assert(strstr(by_target.out, "tune_probe_fwd_f32_d64"), "%s", by_target.out);
  cr_assert_str_eq(by_target.out, by_option.out);
  cr_assert_str_eq(by_target.out, by_pass.out); /* tune_probe has the one pass */
  run_free(&by_target);
  run_free(&by_option);
  run_free(&by_pass);
}

/* ---- list -------------------------------------------------------------------------- */

Test(cli, list_rms_norm_rows_and_summary_agree) {
  run_result r = ubgen("list --kernel rms_norm");
  assert_status(r, 0);
  cr_assert_str_empty(r.err, "no progress line when stderr is not a terminal: %s", r.err);
  char *row = line_with(r.out, "rms_norm_fwd_bf16_d4096_m1_n ");
  cr_assert_not_null(row, "rms_norm_fwd_bf16_d4096_m1_n is listed");
  char name[200], fits[64];
  long long fp;
  cr_assert_eq(sscanf(row, " %199s %lld %63s", name, &fp, fits), 3, "%s", row);
  cr_assert_eq(fp, 32768, "footprint of %s: two f32 buffers of 4096: %s", name, row);
  cr_assert_str_eq(fits, "yes", "%s", row);
  free(row);
  listing l = parse_listing(r.out, "rms_norm_");
  cr_assert_gt(l.rows, 0);
  cr_assert_eq(l.total, l.rows, "summary says %d variants, %d rows listed", l.total, l.rows);
  cr_assert_eq(l.total_fit, l.fit, "summary says %d fit, %d rows say yes", l.total_fit, l.fit);
  cr_assert_lt(l.fit, l.rows, "the d65536 variants cannot fit 192 KiB");
  cr_assert_gt(l.fit, 0);
  cr_assert_eq(l.rows_other_prefix, 0, "--kernel rms_norm lists only rms_norm variants");
  /* both passes and all three dtypes */
  cr_assert(strstr(r.out, "rms_norm_bwd_f32_d4096_m1_n "));
  cr_assert(strstr(r.out, "rms_norm_fwd_f16_d1024_m2_n "));
  /* a variant that cannot fit is listed as such: 65536 * 4 bytes * 2 buffers */
  row = line_with(r.out, "rms_norm_fwd_f32_d65536_m1_t ");
  cr_assert_not_null(row);
  cr_assert(strstr(row, "524288") && strstr(row, "no"), "%s", row);
  free(row);
  run_free(&r);
}

/* a composite op is listed with its axes, from its spec */
Test(cli, list_shows_the_composite_ops_axes) {
  run_result r = ubgen("list --kernel flce");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "flce.chunk  (composite op") &&
                strstr(r.out, "chunk    an integer in [1, 1073741824], by default min(512, max(256, next_pow2(cdiv(bt, 4))))") &&
                strstr(r.out, "gemm     generated (default), onednn; before the default where it runs: onednn"),
            "%s", r.out);
  run_free(&r);
  r = ubgen("list --kernel flce --json");
  assert_status(r, 0);
  json_error_t e;
  json_t *j = json_loads(r.out, 0, &e);
  cr_assert_not_null(j, "%s", e.text);
  json_t *c = json_array_get(json_object_get(j, "composites"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(c, "name")), "chunk");
  json_t *axes = json_object_get(c, "axes");
  cr_assert_eq(json_array_size(axes), 2);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(axes, 0), "default")),
                   "min(512, max(256, next_pow2(cdiv(bt, 4))))");
  cr_assert_eq(json_array_size(json_object_get(json_array_get(axes, 1), "values")), 2);
  json_t *prefer = json_object_get(json_array_get(axes, 1), "prefer");
  cr_assert_eq(json_array_size(prefer), 1);
  cr_assert_str_eq(json_string_value(json_array_get(prefer, 0)), "onednn");
  json_decref(j);
  run_free(&r);
  r = ubgen("list --kernel rms_norm --json");
  assert_status(r, 0);
  j = json_loads(r.out, 0, &e);
  cr_assert_eq(json_array_size(json_object_get(j, "composites")), 0, "rms_norm has none");
  json_decref(j);
  run_free(&r);
}

/* a composite op is not a pass: the commands that take passes say so */
Test(cli, a_composite_op_is_not_a_pass) {
  run_result r = ubgen("check flce.chunk");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "\"flce.chunk\" is a composite op of kernel flce, not a pass") &&
                strstr(r.err, "(logits, ce, dx, dw)"),
            "%s", r.err);
  run_free(&r);
}

Test(cli, list_dtype_filters_rows) {
  run_result all = ubgen("list --kernel rms_norm");
  run_result f32 = ubgen("list --kernel rms_norm --dtype f32");
  assert_status(all, 0);
  assert_status(f32, 0);
  listing la = parse_listing(all.out, "rms_norm_"), lf = parse_listing(f32.out, "rms_norm_");
  cr_assert_eq(lf.total, lf.rows);
  cr_assert_eq(lf.total * 3, la.total, "one third of the variants are f32 (%d of %d)", lf.total, la.total);
  cr_assert_null(strstr(f32.out, "_bf16_"));
  cr_assert_null(strstr(f32.out, "_f16_"));
  run_free(&all);
  run_free(&f32);
}

Test(cli, list_unknown_kernel_exits_2) {
  run_result r = ubgen("list --kernel nope");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "nope"), "%s", r.err);
  run_free(&r);
}

static void check_list_json(const char *text, long long ub_bytes, int *n, int *nfit) {
  json_t *root = parse_json(text);
  cr_assert_eq(json_integer_value(json_object_get(root, "ub_bytes")), ub_bytes);
  json_t *vs = json_object_get(root, "variants");
  cr_assert(json_is_array(vs), "\"variants\" is an array");
  size_t i;
  json_t *v;
  *n = 0;
  *nfit = 0;
  bool seen = false;
  long long want_usable = (long long)(ub_bytes * 0.9); /* floor: docs/design.md "The UB model" */
  json_array_foreach(vs, i, v) {
    json_t *fp = json_object_get(v, "footprint"), *us = json_object_get(v, "usable"), *fits = json_object_get(v, "fits");
    const char *name = json_string_value(json_object_get(v, "variant"));
    cr_assert_not_null(name);
    cr_assert(json_is_integer(fp) && json_is_integer(us) && json_is_boolean(fits), "entry %zu of %s", i, name);
    cr_assert_eq(json_integer_value(us), want_usable, "usable of %s", name);
    cr_assert_gt(json_integer_value(fp), 0);
    bool f = json_integer_value(fp) <= json_integer_value(us);
    cr_assert_eq(json_is_true(fits), f, "%s: footprint %lld, usable %lld, fits %d", name,
                 (long long)json_integer_value(fp), (long long)json_integer_value(us), json_is_true(fits));
    cr_assert_str_eq(json_string_value(json_object_get(v, "kernel")), "rms_norm");
    if (!strcmp(name, "rms_norm_fwd_bf16_d4096_m1_n")) {
      seen = true;
      cr_assert_eq(json_integer_value(fp), 32768);
      cr_assert_str_eq(json_string_value(json_object_get(v, "dtype")), "bf16");
      cr_assert_str_eq(json_string_value(json_object_get(v, "pass")), "fwd");
    }
    (*n)++;
    *nfit += f;
  }
  cr_assert(seen, "rms_norm_fwd_bf16_d4096_m1_n is in the JSON list");
  json_decref(root);
}

Test(cli, list_json_agrees_with_the_text_listing) {
  run_result t = ubgen("list --kernel rms_norm");
  run_result j = ubgen("list --kernel rms_norm --json");
  assert_status(t, 0);
  assert_status(j, 0);
  listing l = parse_listing(t.out, "rms_norm_");
  int n, nfit;
  check_list_json(j.out, 196608, &n, &nfit);
  cr_assert_eq(n, l.total);
  cr_assert_eq(nfit, l.total_fit);
  run_free(&t);
  run_free(&j);
}

Test(cli, list_smaller_ub_fits_fewer) {
  run_result d = ubgen("list --kernel rms_norm");
  run_result s = ubgen("list --kernel rms_norm --ub 64KiB");
  run_result sj = ubgen("list --kernel rms_norm --ub 64KiB --json");
  assert_status(d, 0);
  assert_status(s, 0);
  assert_status(sj, 0);
  listing ld = parse_listing(d.out, "rms_norm_"), ls = parse_listing(s.out, "rms_norm_");
  cr_assert_eq(ls.total, ld.total, "the budget does not change which variants exist");
  cr_assert_lt(ls.total_fit, ld.total_fit, "64 KiB: %d fit, 192 KiB: %d fit", ls.total_fit, ld.total_fit);
  cr_assert_eq(ls.total_fit, ls.fit);
  cr_assert(strstr(s.out, "58982"), "usable = floor(65536 * 0.9) = 58982 is shown");
  int n, nfit;
  check_list_json(sj.out, 65536, &n, &nfit);
  cr_assert_eq(nfit, ls.total_fit);
  /* 32768 bytes still fits 58982, bwd's 65536 does not */
  char *row = line_with(s.out, "rms_norm_bwd_bf16_d4096_m1_n ");
  cr_assert(row && strstr(row, "no"), "%s", row ? row : "(missing)");
  free(row);
  row = line_with(s.out, "rms_norm_fwd_bf16_d4096_m1_n ");
  cr_assert(row && strstr(row, "yes"), "%s", row ? row : "(missing)");
  free(row);
  run_free(&d);
  run_free(&s);
  run_free(&sj);
}

Test(cli, ub_size_suffixes) {
  static const struct {
    const char *text;
    long long bytes;
  } sizes[] = {{"65536", 65536}, {"64KiB", 65536}, {"64K", 65536}, {"1MiB", 1048576}, {"1M", 1048576},
               {"192KiB", 196608}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    run_result r = ubgen("list --kernel rms_norm --ub %s --json", sizes[i].text);
    assert_status(r, 0);
    json_t *j = parse_json(r.out);
    cr_assert_eq(json_integer_value(json_object_get(j, "ub_bytes")), sizes[i].bytes, "--ub %s", sizes[i].text);
    json_decref(j);
    run_free(&r);
  }
}

Test(cli, bad_ub_size_exits_2_naming_the_option) {
  static const char *bad[] = {"12q", "0", "-5", "1.5KiB", "KiB", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = ubgen("list --kernel rms_norm --ub '%s'", bad[i]);
    assert_status(r, 2);
    cr_assert(strstr(r.err, "--ub"), "message names --ub for \"%s\": %s", bad[i], r.err);
    cr_assert_str_empty(r.out, "nothing listed for --ub %s", bad[i]);
    run_free(&r);
  }
  run_result r = ubgen("list --kernel rms_norm --ub 12q");
  cr_assert(strstr(r.err, "12q"), "the message quotes the value: %s", r.err);
  run_free(&r);
}

/* ---- plan ---------------------------------------------------------------------------- */

static long long offset_of(const char *out, const char *buffer) {
  char key[64];
  snprintf(key, sizeof key, "  %s ", buffer);
  char *line = line_with(out, key);
  cr_assert_not_null(line, "layout line of %s in:\n%s", buffer, out);
  const char *o = strstr(line, "offset");
  cr_assert_not_null(o, "%s", line);
  long long v = strtoll(o + 6, NULL, 10);
  free(line);
  return v;
}

Test(cli, plan_bf16_4096_chooses_the_whole_row_variant) {
  run_result r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=2048,cols=4096");
  assert_status(r, 0);
  char *choice = line_with(r.out, "choice");
  cr_assert_not_null(choice, "%s", r.out);
  cr_assert(strstr(choice, "rms_norm_fwd_bf16_d4096_m1_n"), "%s", choice);
  free(choice);
  char *layout = line_with(r.out, "UB layout");
  cr_assert(layout && strstr(layout, "32768"), "layout header with the footprint: %s", layout ? layout : r.out);
  free(layout);
  cr_assert_eq(offset_of(r.out, "x_tile"), 0);
  cr_assert_eq(offset_of(r.out, "w_tile"), 16384);
  cr_assert(strstr(r.out, "176947"), "the usable budget is shown");
  cr_assert_str_empty(r.err);
  run_free(&r);
}

Test(cli, plan_json_has_variant_why_and_layout) {
  run_result r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=2048,cols=4096 --json");
  assert_status(r, 0);
  json_t *j = parse_json(r.out);
  cr_assert_str_eq(json_string_value(json_object_get(j, "variant")), "rms_norm_fwd_bf16_d4096_m1_n");
  const char *why = json_string_value(json_object_get(j, "why"));
  cr_assert(why && strlen(why) > 10, "\"why\" explains the choice");
  cr_assert(strstr(why, "4096"), "why: %s", why);
  cr_assert_eq(json_integer_value(json_object_get(j, "footprint")), 32768);
  cr_assert_eq(json_integer_value(json_object_get(j, "usable")), 176947);
  json_t *layout = json_object_get(j, "layout");
  cr_assert_eq(json_array_size(layout), 2);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(layout, 0), "name")), "x_tile");
  cr_assert_eq(json_integer_value(json_object_get(json_array_get(layout, 0), "offset")), 0);
  cr_assert_eq(json_integer_value(json_object_get(json_array_get(layout, 0), "bytes")), 16384);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(layout, 1), "name")), "w_tile");
  cr_assert_eq(json_integer_value(json_object_get(json_array_get(layout, 1), "offset")), 16384);
  /* the candidate list names the chosen variant exactly once */
  json_t *vs = json_object_get(j, "variants"), *v;
  size_t i;
  int chosen = 0;
  json_array_foreach(vs, i, v) {
    const char *st = json_string_value(json_object_get(v, "status"));
    if (st && strstr(st, "chosen")) {
      chosen++;
      cr_assert_str_eq(json_string_value(json_object_get(v, "variant")), "rms_norm_fwd_bf16_d4096_m1_n");
    }
  }
  cr_assert_eq(chosen, 1);
  json_decref(j);
  run_free(&r);
}

Test(cli, plan_f32_32768_picks_a_tiled_variant) {
  run_result r = ubgen("plan rms_norm.fwd --dtype f32 --shape rows=2048,cols=32768 --json");
  assert_status(r, 0);
  json_t *j = parse_json(r.out);
  const char *v = json_string_value(json_object_get(j, "variant"));
  cr_assert_not_null(v);
  cr_assert(ends_with(v, "_t"), "a row of 32768 f32 (256 KiB with w) cannot be held whole: %s", v);
  /* default strategy: the largest power-of-two BLOCK_D that fits: 2 * 16384 * 4 = 128 KiB <= 176947 */
  cr_assert_str_eq(v, "rms_norm_fwd_f32_d16384_m1_t");
  cr_assert_leq(json_integer_value(json_object_get(j, "footprint")), json_integer_value(json_object_get(j, "usable")));
  json_decref(j);
  run_free(&r);
  /* the text form says the same */
  r = ubgen("plan rms_norm.fwd --dtype f32 --shape rows=2048,cols=32768");
  assert_status(r, 0);
  char *choice = line_with(r.out, "choice");
  cr_assert(choice && strstr(choice, "rms_norm_fwd_f32_d16384_m1_t"), "%s", r.out);
  free(choice);
  run_free(&r);
}

/* docs/cli.md: plan exits 1 when no variant fits */
Test(cli, plan_with_nothing_fitting_exits_1) {
  /* usable floor(1024 x 0.1) = 102 bytes, below the smallest footprint (128) */
  run_result r = ubgen("plan rms_norm.fwd --dtype f32 --shape rows=1,cols=4096 --ub 1024 --margin 0.1 --json");
  assert_status(r, 1);
  json_t *j = parse_json(r.out);
  cr_assert(json_is_null(json_object_get(j, "variant")), "no variant is chosen");
  cr_assert_eq(json_integer_value(json_object_get(j, "usable")), 102);
  const char *why = json_string_value(json_object_get(j, "why"));
  cr_assert(why && strstr(why, "fit"), "why: %s", why ? why : "(none)");
  json_decref(j);
  run_free(&r);
}

Test(cli, plan_bad_shapes_exit_2) {
  static const struct {
    const char *shape, *named;
  } bad[] = {
      {"rows=2048", "cols"},             /* a shape name missing */
      {"cols=4096", "rows"},
      {"rows=2,cols=4,bogus=3", "bogus"}, /* unknown name */
      {"rows=2,cols=x", "cols"},         /* not an integer */
      {"rows=2,cols=4.5", "cols"},
      {"rows=2,cols=", "cols"},
      {"rows=2,cols=99999999999999999999999", "cols"},
      {"rows=2,cols=0", "cols"},         /* below min 1 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = ubgen("plan rms_norm.fwd --dtype f32 --shape '%s'", bad[i].shape);
    assert_status(r, 2);
    cr_assert(strstr(r.err, bad[i].named), "--shape %s: the message names %s: %s", bad[i].shape, bad[i].named, r.err);
    cr_assert_str_empty(r.out, "--shape %s", bad[i].shape);
    run_free(&r);
  }
  run_result r = ubgen("plan rms_norm.fwd --dtype f32");
  assert_status(r, 2);
  run_free(&r);
}

Test(cli, plan_bad_kernel_pass_exits_2) {
  run_result r = ubgen("plan nope.fwd --dtype f32 --shape rows=1,cols=1");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "nope"), "%s", r.err);
  cr_assert_str_empty(r.out);
  run_free(&r);
  r = ubgen("plan rms_norm.sideways --dtype f32 --shape rows=1,cols=1");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "rms_norm") && strstr(r.err, "sideways"), "%s", r.err);
  cr_assert(strstr(r.err, "fwd"), "lists the passes there are: %s", r.err);
  run_free(&r);
  r = ubgen("plan rms_norm --dtype f32 --shape rows=1,cols=1");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "rms_norm"), "%s", r.err);
  run_free(&r);
  r = ubgen("plan rms_norm.fwd --dtype f64 --shape rows=1,cols=1");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "f64"), "%s", r.err);
  run_free(&r);
}

/* ---- emit ---------------------------------------------------------------------------- */

typedef struct {
  int written, unchanged, removed;
} emit_stats;

static emit_stats parse_emit(const char *err) {
  emit_stats s = {-1, -1, -1};
  const char *p = strstr(err, " written, ");
  cr_assert_not_null(p, "no \"(N files written, M unchanged, K removed)\" in: %s", err);
  while (p > err && p[-1] != '(') p--;
  char files[8] = "";
  cr_assert_eq(sscanf(p, "%d %7s written, %d unchanged, %d removed)", &s.written, files, &s.unchanged, &s.removed), 4,
               "%s", err);
  cr_assert_str_eq(files, s.written == 1 ? "file" : "files", "%s", err);
  return s;
}

/* the names of the fitting variants of rms_norm in dtype, from `list --json` */
static int fitting_variants(const char *dtype, char ***names) {
  run_result r = ubgen("list --kernel rms_norm --dtype %s --json", dtype);
  assert_status(r, 0);
  json_t *root = parse_json(r.out), *v;
  size_t i;
  int n = 0;
  char **out = malloc((json_array_size(json_object_get(root, "variants")) + 1) * sizeof *out);
  json_array_foreach(json_object_get(root, "variants"), i, v) if (json_is_true(json_object_get(v, "fits")))
      out[n++] = strdup(json_string_value(json_object_get(v, "variant")));
  qsort(out, n, sizeof *out, cmp_strp);
  json_decref(root);
  run_free(&r);
  *names = out;
  return n;
}

static long long listed_footprint(const char *variant) {
  run_result r = ubgen("list --kernel rms_norm --json");
  json_t *root = parse_json(r.out), *v;
  size_t i;
  long long fp = -1;
  json_array_foreach(json_object_get(root, "variants"), i, v) if (!strcmp(
      json_string_value(json_object_get(v, "variant")), variant)) fp = json_integer_value(json_object_get(v, "footprint"));
  json_decref(root);
  run_free(&r);
  return fp;
}

/* DIR holds exactly the variant files of `want`, the registry, the header and the MANIFEST,
 * and MANIFEST lists exactly the others */
static void check_emitted(const char *dir, char **want, int nwant) {
  char **names;
  int n = list_dir(dir, &names);
  cr_assert_eq(n, nwant + 3, "%s holds %d entries, want %d variants + 3", dir, n, nwant);
  int nc = 0;
  for (int i = 0; i < n; i++) {
    if (!strcmp(names[i], "MANIFEST") || !strcmp(names[i], "ubg_aot_main_registry.c") ||
        !strcmp(names[i], "ubg_aot_main_kernels.h"))
      continue;
    cr_assert(ends_with(names[i], ".c"), "unexpected file %s", names[i]);
    char v[256];
    snprintf(v, sizeof v, "%.*s", (int)strlen(names[i]) - 2, names[i]);
    cr_assert_not_null(bsearch(&(const char *){v}, want, nwant, sizeof *want, cmp_strp), "%s was not asked for", v);
    nc++;
  }
  cr_assert_eq(nc, nwant);
  char *reg = path_in(dir, "ubg_aot_main_registry.c"), *hdr = path_in(dir, "ubg_aot_main_kernels.h");
  cr_assert(exists(reg) && exists(hdr));
  /* the registry names every variant */
  char *rt = slurp(reg);
  for (int i = 0; i < nwant; i++) cr_assert(strstr(rt, want[i]), "registry lacks %s", want[i]);
  free(rt);
  free(reg);
  free(hdr);
  /* MANIFEST: comment lines, then one file name a line: every file but itself */
  char *mp = path_in(dir, "MANIFEST");
  char *m = slurp(mp);
  cr_assert_not_null(m);
  int listed = 0;
  char *save = NULL;
  for (char *line = strtok_r(m, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#') continue;
    cr_assert_not_null(bsearch(&(const char *){line}, names, n, sizeof *names, cmp_strp), "MANIFEST lists %s", line);
    listed++;
  }
  cr_assert_eq(listed, n - 1, "MANIFEST lists %d files of %d", listed, n - 1);
  free(m);
  free(mp);
  free_names(names, n);
}

Test(cli, emit_writes_variants_registry_and_manifest_incrementally) {
  char *out = path_in(scratch, "out");
  char **f32;
  int nf32 = fitting_variants("f32", &f32);
  cr_assert_gt(nf32, 10);

  run_result r = ubgen("emit --out %s --kernel rms_norm --dtype f32", out);
  assert_status(r, 0);
  emit_stats s = parse_emit(r.err);
  cr_assert_eq(s.written, nf32 + 3, "%s", r.err);
  cr_assert_eq(s.unchanged, 0);
  cr_assert_eq(s.removed, 0);
  run_free(&r);
  check_emitted(out, f32, nf32);

  /* every variant file: the header comment names variant, layout, footprint and spec */
  for (int i = 0; i < nf32; i++) {
    char fn[300];
    snprintf(fn, sizeof fn, "%s/%s.c", out, f32[i]);
    char *t = slurp(fn);
    cr_assert_not_null(t, "%s", fn);
    cr_assert(!strncmp(t, "/* Generated by ubgen", 21), "%s starts with: %.60s", fn, t);
    const char *end = strstr(t, "*/");
    cr_assert_not_null(end);
    char *head = strndup(t, (size_t)(end - t));
    cr_assert(strstr(head, f32[i]), "%s: header names the variant", fn);
    cr_assert(strstr(head, "UB layout"), "%s: header has the UB layout", fn);
    cr_assert(strstr(head, "footprint"), "%s", fn);
    cr_assert(strstr(head, "rms_norm.json"), "%s: header names the spec", fn);
    cr_assert(strstr(head, "x_tile") && strstr(head, "w_tile"), "%s: header lists the buffers", fn);
    free(head);
    free(t);
  }
  /* the footprint in the header is the one `list` reports */
  char fn[300];
  snprintf(fn, sizeof fn, "%s/rms_norm_bwd_f32_d1024_m1_t.c", out);
  char *t = slurp(fn);
  cr_assert_not_null(t);
  long long fp = listed_footprint("rms_norm_bwd_f32_d1024_m1_t");
  cr_assert_gt(fp, 0);
  char want[64];
  snprintf(want, sizeof want, "footprint %lld bytes", fp);
  cr_assert(strstr(t, want), "%s names \"%s\"", fn, want);
  free(t);

  /* emitting again changes nothing on disk */
  struct stat before, after;
  snprintf(fn, sizeof fn, "%s/rms_norm_fwd_f32_d4096_m1_n.c", out);
  cr_assert_eq(stat(fn, &before), 0);
  r = ubgen("emit --out %s --kernel rms_norm --dtype f32", out);
  assert_status(r, 0);
  s = parse_emit(r.err);
  cr_assert_eq(s.written, 0, "%s", r.err);
  cr_assert_eq(s.unchanged, nf32 + 3, "%s", r.err);
  cr_assert_eq(s.removed, 0);
  run_free(&r);
  cr_assert_eq(stat(fn, &after), 0);
  cr_assert_eq(before.st_ino, after.st_ino, "an unchanged file is not rewritten");
  cr_assert(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

  /* f16 into the same directory: the f32 files the MANIFEST names go away */
  char **f16;
  int nf16 = fitting_variants("f16", &f16);
  r = ubgen("emit --out %s --kernel rms_norm --dtype f16", out);
  assert_status(r, 0);
  s = parse_emit(r.err);
  cr_assert_eq(s.removed, nf32, "%s", r.err);
  cr_assert_eq(s.written + s.unchanged, nf16 + 3, "%s", r.err);
  run_free(&r);
  check_emitted(out, f16, nf16);
  cr_assert(!exists(fn), "%s was removed", fn);

  /* a file the user put there (not in the MANIFEST) is left alone */
  char *mine = path_in(out, "notes.txt");
  write_file(mine, "mine\n");
  r = ubgen("emit --out %s --kernel rms_norm --dtype bf16", out);
  assert_status(r, 0);
  cr_assert(exists(mine), "emit removes only what it wrote");
  run_free(&r);
  free(mine);
  free_names(f32, nf32);
  free_names(f16, nf16);
  free(out);
}

Test(cli, emit_without_out_exits_2) {
  run_result r = ubgen("emit --kernel rms_norm");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "--out"), "%s", r.err);
  run_free(&r);
}

/* a copy of specs/rms_norm.json with `"bogus": 1,` inserted in the first x_tile
 * buffer; returns that line (1-based) and the column of "bogus" */
static void write_bad_spec(const char *dir, int *line, int *col) {
  char src[600];
  snprintf(src, sizeof src, "%s/specs/rms_norm.json", UBGEN_SRC);
  char *t = slurp(src);
  cr_assert_not_null(t, "%s", src);
  const char *anchor = "{\"name\": \"x_tile\", \"type\": \"f32\", ";
  char *at = strstr(t, anchor);
  cr_assert_not_null(at, "the shipped spec has the x_tile buffer line this test edits");
  at += strlen(anchor);
  size_t pre = (size_t)(at - t);
  char *bad = malloc(strlen(t) + 32);
  memcpy(bad, t, pre);
  strcpy(bad + pre, "\"bogus\": 1, ");
  strcat(bad, t + pre);
  *line = 1;
  for (size_t i = 0; i < pre; i++) *line += t[i] == '\n';
  size_t bol = pre;
  while (bol > 0 && t[bol - 1] != '\n') bol--;
  *col = (int)(pre - bol) + 1;
  char *dst = path_in(dir, "rms_norm.json");
  write_file(dst, bad);
  free(dst);
  free(bad);
  free(t);
}

static void check_diag(const char *err, const char *file, int line, int col) {
  char want[700];
  snprintf(want, sizeof want, "ubgen: %s:%d:", file, line);
  const char *p = strstr(err, want);
  cr_assert_not_null(p, "want a message starting \"%s\", got: %s", want, err);
  int c = atoi(p + strlen(want));
  /* the column of the key, or of its first letter */
  cr_assert(c == col || c == col + 1, "column %d, want %d (the unknown key): %s", c, col, err);
  cr_assert(strstr(err, "bogus"), "the message names the key: %s", err);
}

Test(cli, emit_with_a_bad_spec_creates_nothing) {
  char *specs = path_in(scratch, "specs");
  cr_assert_eq(mkdir(specs, 0755), 0);
  int line, col;
  write_bad_spec(specs, &line, &col);
  char *spec = path_in(specs, "rms_norm.json");

  /* OUT2 does not exist: it must not exist afterwards */
  char *out2 = path_in(scratch, "out2");
  run_result r = ubgen("emit --specs %s --out %s", specs, out2);
  assert_status(r, 2);
  check_diag(r.err, spec, line, col);
  cr_assert(!exists(out2), "%s was created", out2);
  run_free(&r);

  /* OUT3 exists and is empty: it stays empty */
  char *out3 = path_in(scratch, "out3");
  cr_assert_eq(mkdir(out3, 0755), 0);
  r = ubgen("emit --specs %s --out %s --kernel rms_norm --dtype f32", specs, out3);
  assert_status(r, 2);
  check_diag(r.err, spec, line, col);
  char **names;
  int n = list_dir(out3, &names);
  cr_assert_eq(n, 0, "%s holds %d files, first %s", out3, n, n > 0 ? names[0] : "");
  free_names(names, n);
  run_free(&r);

  /* the same spec through UBGEN_SPEC_PATH, and for list and plan */
  setenv("UBGEN_SPEC_PATH", specs, 1);
  r = ubgen("list");
  assert_status(r, 2);
  check_diag(r.err, spec, line, col);
  run_free(&r);
  unsetenv("UBGEN_SPEC_PATH");
  r = ubgen("plan rms_norm.fwd --specs %s --dtype f32 --shape rows=1,cols=1", specs);
  assert_status(r, 2);
  check_diag(r.err, spec, line, col);
  run_free(&r);
  free(out2);
  free(out3);
  free(spec);
  free(specs);
}

Test(cli, emit_into_an_unwritable_place_exits_2_and_writes_nothing) {
  char *file = path_in(scratch, "plain");
  write_file(file, "");
  char **before;
  int nbefore = list_dir(scratch, &before);

  run_result r = ubgen("emit --out %s/sub --kernel rms_norm --dtype f32", file);
  assert_status(r, 2);
  cr_assert(strstr(r.err, file), "the message names the path: %s", r.err);
  run_free(&r);
  r = ubgen("emit --out %s/a/b --kernel rms_norm --dtype f32", file);
  assert_status(r, 2);
  run_free(&r);
  /* --out naming the regular file itself */
  r = ubgen("emit --out %s --kernel rms_norm --dtype f32", file);
  assert_status(r, 2);
  cr_assert(strstr(r.err, file), "%s", r.err);
  run_free(&r);

  struct stat st;
  cr_assert_eq(stat(file, &st), 0);
  cr_assert(S_ISREG(st.st_mode) && st.st_size == 0, "the file is untouched");
  char **after;
  int nafter = list_dir(scratch, &after);
  cr_assert_eq(nafter, nbefore, "no partial files next to it");
  for (int i = 0; i < nafter; i++) cr_assert_str_eq(after[i], before[i]);
  free_names(before, nbefore);
  free_names(after, nafter);
  free(file);
}

/* ---- check ------------------------------------------------------------------------------ */

Test(cli, check_rms_norm_fwd_f32_passes) {
  run_result r = ubgen("check rms_norm.fwd --dtype f32");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "0 failed"), "%s", r.out);
  char *last = last_line(r.out);
  int runs = -1, failed = -1;
  cr_assert_eq(sscanf(last, "check: %d runs, %d failed", &runs, &failed), 2, "%s", last);
  cr_assert_gt(runs, 10);
  cr_assert_eq(failed, 0);
  free(last);
  cr_assert_null(strstr(r.out, "FAIL"));
  cr_assert_null(strstr(r.out, "_f16_"), "--dtype f32 runs only f32 variants");
  cr_assert_str_empty(r.err);
  run_free(&r);
}

/* a user's version of rms_norm whose forward doubles rstd: every run must
 * fail (wrong numbers, or no way to compile the changed kernel), and the
 * exit status is 1, not 0 or 2 */
Test(cli, check_failure_exits_1) {
  char *dir = path_in(scratch, "broken");
  cr_assert_eq(mkdir(dir, 0755), 0);
  char src[600];
  snprintf(src, sizeof src, "%s/specs/rms_norm.json", UBGEN_SRC);
  char *spec = slurp(src);
  cr_assert_not_null(spec);
  /* change the spec's text too, so no built-in kernel of the shipped spec can stand in */
  const char *from = "\"description\": \"";
  char *at = strstr(spec, from);
  cr_assert_not_null(at);
  char *mod = malloc(strlen(spec) + 64);
  sprintf(mod, "%.*s%sBROKEN COPY: %s", (int)(at - spec), spec, from, at + strlen(from));
  char *dst = path_in(dir, "rms_norm.json");
  write_file(dst, mod);
  free(dst);
  free(mod);
  free(spec);
  /* rstd doubled: every code path (scalar, vector, tcc's) goes through
   * rstd_of, in the partial that the shipped template pastes from the spec's
   * directory before the shipped templates */
  copy_in("templates/rms_norm_row.h", dir);
  dst = path_in(dir, "rms_norm_row.h");
  edit_file(dst, "float r = 1.0f / sqrtf(", "float r = 2.0f / sqrtf(");
  free(dst);
  copy_in("specs/rms_norm_ref.c", dir); /* a spec comes with its reference */

  run_result r = ubgen("check rms_norm.fwd --specs %s --dtype f32", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "FAIL"), "%s", r.out);
  char *last = last_line(r.out);
  int runs = -1, failed = -1;
  cr_assert_eq(sscanf(last, "check: %d runs, %d failed", &runs, &failed), 2, "%s", last);
  cr_assert_gt(runs, 0);
  cr_assert_eq(failed, runs, "every run of the broken kernel fails: %s", last);
  free(last);
  run_free(&r);
  free(dir);
}

Test(cli, check_unknown_kernel_exits_2) {
  run_result r = ubgen("check nope.fwd");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "nope"), "%s", r.err);
  run_free(&r);
}

/* ---- check and tune verify a kernel that is only data ------------------------------------ */

/* r exited with status and said want (on stderr or stdout); r freed */
static void expect_says(run_result r, int status, bool on_err, const char *want) {
  assert_status(r, status);
  const char *said = on_err ? r.err : r.out;
  cr_assert(strstr(said, want), "expected \"%s\" in: %s", want, said);
  run_free(&r);
}

/* a composite op is tuned at its spec's "tune" dtypes and cases, with its
 * kernel and alone; one without a "run" is named, not run */
Test(cli, tune_sweeps_a_composites_tune_section) {
  char *dir = path_in(scratch, "comp");
  cr_assert_eq(mkdir(dir, 0755), 0);
  copy_in("specs/flce.json", dir);
  copy_in("specs/flce_ref.c", dir);
  char *spec = path_in(dir, "flce.json");
  edit_file(spec, "\"tune\": {\"dtypes\": [\"f32\", \"bf16\"], \"cases\": [{\"bt\": 512, \"hidden\": 512, \"vocab\": 16384}]",
            "\"tune\": {\"dtypes\": [\"bf16\"], \"cases\": [{\"bt\": 64, \"hidden\": 32, \"vocab\": 512}, "
            "{\"bt\": 32, \"hidden\": 32, \"vocab\": 256}, {\"bt\": 16, \"hidden\": 16, \"vocab\": 64}]");
  /* one dtype, three cases; --dtype wins over the section's */
  expect_says(ubgen("tune flce.chunk --specs %s --dry-run", dir), 0, false, "3 units (pass, dtype, shape)");
  expect_says(ubgen("tune flce.chunk --specs %s --dtype f32 --dtype f16 --dry-run", dir), 0, false,
              "6 units (pass, dtype, shape)");
  expect_says(ubgen("tune flce.chunk --specs %s --dtype bf16 --reps 1 --db %s/comp.json", dir, scratch), 0, false,
              "flce.chunk  bf16  bt=16,hidden=16,vocab=64");
  char *db = path_in(scratch, "comp.json");
  char *text = slurp(db);
  json_t *j = parse_json(text);
  json_t *e = json_object_get(j, "entries");
  cr_assert_eq(json_array_size(e), 3, "an entry per case");
  json_t *e0 = json_array_get(e, 0);
  cr_assert_str_eq(json_string_value(json_object_get(e0, "pass")), "chunk");
  cr_assert_not_null(json_object_get(json_object_get(e0, "shape"), "vocab"), "the kernel's shape names");
  json_decref(j);
  free(text), free(db);

  /* the kernel of bad-specs 106 with its composite made well formed: no "run", nothing to tune */
  char *udir = path_in(scratch, "user");
  cr_assert_eq(mkdir(udir, 0755), 0);
  copy_in("tests/bad-specs/106-composite-min-above-max/bad.c.tmpl", udir);
  copy_in("tests/bad-specs/106-composite-min-above-max/bad.json", udir);
  char *bad = path_in(udir, "bad.json");
  edit_file(bad, "\"min\": 8, \"max\": 4", "\"min\": 1, \"max\": 4");
  expect_says(ubgen("tune bad.chunk --specs %s --dry-run", udir), 2, true,
              "bad.chunk is a composite op of kernel bad that declares no \"run\"");
  expect_says(ubgen("tune bad --specs %s --no-reference --db %s/user.json", udir, scratch), 0, false,
              "bad.chunk: declares no \"run\", so nothing runs it; skipped");
  free(bad), free(udir), free(spec), free(dir);
}

/* DIR/probe: tests/specs/tune_probe (y = 2 x, but 3 x in its d64 variant)
 * with its template and reference, as a user would write a kernel */
static char *make_probe_dir(void) {
  char *dir = path_in(scratch, "probe");
  cr_assert_eq(mkdir(dir, 0755), 0);
  copy_in("tests/specs/tune_probe.json", dir);
  copy_in("tests/specs/tune_probe.c.tmpl", dir);
  copy_in("tests/specs/tune_probe_ref.c", dir);
  return dir;
}

static void fix_probe(const char *dir) {
  char *t = path_in(dir, "tune_probe.c.tmpl");
  edit_file(t, "BLOCK_D == 64 ? 3.0f", "BLOCK_D == 64 ? 2.0f");
  free(t);
}

/* a user's kernel that crashes (d32) or hangs (d64), and a reference that
 * crashes: check and tune run them in a child process with --timeout, name
 * the variant and what happened, and go on (the command died with the
 * kernel once, and waited for ever on the hang) */
Test(cli, check_and_tune_survive_a_kernel_that_crashes_or_hangs, .timeout = 120) {
  char *dir = make_probe_dir(), *t = path_in(dir, "tune_probe.c.tmpl");
  edit_file(t, "y[i] = (BLOCK_D == 64 ? 3.0f : 2.0f) * x[i];",
            "{ y[i] = 2.0f * x[i]; if (BLOCK_D == 32) *(volatile float *)0 = 1.0f;"
            " if (BLOCK_D == 64) for (volatile int k = 0; ; k++) {} }");
  run_result r = ubgen("check --specs %s tune_probe.fwd --timeout 1", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "FAIL tune_probe_fwd_f32_d32 case 0") && strstr(r.out, "killed by signal 11"), "%s", r.out);
  cr_assert(strstr(r.out, "FAIL tune_probe_fwd_f32_d64 case 0") && strstr(r.out, "still running after 1 s"), "%s", r.out);
  cr_assert_null(strstr(r.out, "FAIL tune_probe_fwd_f32_d16"), "%s", r.out);
  run_free(&r);
  r = ubgen("tune --specs %s tune_probe.fwd --timeout 1 --reps 1 --db %s/probe-db.json", dir, scratch);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "WRONG tune_probe_fwd_f32_d32: killed by signal 11"), "%s", r.out);
  cr_assert(strstr(r.out, "WRONG tune_probe_fwd_f32_d64: still running after 1 s"), "%s", r.out);
  cr_assert(strstr(r.out, "1 entry merged into"), "the right variant is still tuned: %s", r.out);
  run_free(&r);
  char *ref = path_in(dir, "tune_probe_ref.c");
  edit_file(ref, "(void)dt;", "(void)dt; *(volatile int *)0 = 1;");
  r = ubgen("check --specs %s tune_probe.fwd --timeout 1", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "the reference of tune_probe.fwd did not return: killed by signal 11"), "%s", r.out);
  run_free(&r);
  expect_says(ubgen("check --specs %s tune_probe.fwd --timeout 0", dir), 2, true, "--timeout \"0\" must be seconds");
  free(ref), free(t), free(dir);

  /* a composite op's candidates likewise: scale_rows' pass crashes on a chunk of 32 rows, hangs on 16 */
  char *comp = path_in(scratch, "comp-crash");
  cr_assert_eq(mkdir(comp, 0755), 0);
  copy_in("tests/specs/scale_rows.json", comp);
  copy_in("tests/specs/scale_rows.c.tmpl", comp);
  t = path_in(comp, "scale_rows.c.tmpl");
  edit_file(t, "const ubg_i64 total = m * n;",
            "const ubg_i64 total = m * n; if (m == 32) *(volatile float *)0 = 1.0f;"
            " if (m == 16) for (volatile int k = 0; ; k++) {}");
  r = ubgen("tune scale_rows.rows --specs %s --dtype f32 --shape m=37,n=10 --reps 1 --timeout 1 --db %s/comp-db.json",
            comp, scratch);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "not timed chunk=16: still running after 1 s"), "%s", r.out);
  cr_assert(strstr(r.out, "not timed chunk=32: killed by signal 11"), "%s", r.out);
  cr_assert(strstr(r.out, "tuned chunk=10"), "the default, the one that runs: %s", r.out);
  run_free(&r);
  free(t), free(comp);
}

/* the reference beside the spec is compiled and run: it finds the wrong
 * variant (and only it); once the template is right, check passes */
Test(cli, check_runs_the_reference_given_beside_a_user_spec) {
  char *dir = make_probe_dir();
  run_result r = ubgen("check --specs %s tune_probe.fwd", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "FAIL tune_probe_fwd_f32_d64 case 0"), "%s", r.out);
  cr_assert(strstr(r.out, ", reference "), "compared with the reference's values: %s", r.out);
  cr_assert_null(strstr(r.out, "FAIL tune_probe_fwd_f32_d16"), "%s", r.out);
  cr_assert_null(strstr(r.out, "FAIL tune_probe_fwd_f32_d32"), "%s", r.out);
  run_free(&r);
  fix_probe(dir);
  r = ubgen("check --specs %s tune_probe.fwd", dir);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "3 variants, 3 runs, 0 failed; checked against the reference and the reference variant's bits"),
            "%s", r.out);
  run_free(&r);
  free(dir);
}

/* no reference: check says so and fails, unless --no-reference, which
 * still checks every variant against the reference variant's bits */
Test(cli, check_without_a_reference_fails_unless_told_no_reference) {
  char *dir = make_probe_dir();
  char *spec = path_in(dir, "tune_probe.json");
  edit_file(spec, "\"reference\": \"tune_probe_ref.c\",", "");
  run_result r = ubgen("check --specs %s tune_probe.fwd", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "names no reference") && strstr(r.out, "--no-reference"), "%s", r.out);
  run_free(&r);
  r = ubgen("check --specs %s tune_probe.fwd --no-reference", dir);
  assert_status(r, 1); /* the d64 variant's bits are not the others' */
  cr_assert(strstr(r.out, "but the spec says every variant gives the same bits"), "%s", r.out);
  run_free(&r);
  fix_probe(dir);
  r = ubgen("check --specs %s tune_probe.fwd --no-reference", dir);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "checked against the reference variant's bits only"), "%s", r.out);
  run_free(&r);
  free(spec), free(dir);
}

/* every variant is compiled, even one no check case applies to (here d32,
 * only for n >= 1000), and a compile error fails it by name */
Test(cli, check_compiles_every_variant_and_fails_on_a_compile_error) {
  char *dir = make_probe_dir();
  fix_probe(dir);
  char *spec = path_in(dir, "tune_probe.json");
  edit_file(spec, "\"stages\": [",
            "\"constraints\": [{\"require\": \"BLOCK_D != 32 || n >= 1000\", \"why\": \"long vectors\"}],\n\"stages\": [");
  char *tmpl = path_in(dir, "tune_probe.c.tmpl");
  edit_file(tmpl, "enum { BLOCK_D = {{BLOCK_D}} };", "enum { BLOCK_D = {{BLOCK_D}} };\ntypedef char no_d32[BLOCK_D == 32 ? -1 : 1];");
  run_result r = ubgen("check --specs %s tune_probe.fwd", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "FAIL tune_probe_fwd_f32_d32: "), "%s", r.out);
  cr_assert(strstr(r.out, "compile"), "%s", r.out);
  cr_assert_null(strstr(r.out, "FAIL tune_probe_fwd_f32_d16"), "%s", r.out);
  run_free(&r);
  free(spec), free(tmpl), free(dir);
}

/* a template's C error names the template's file and line (the generated
 * source's #line directives), and is said once for all the variants it breaks */
Test(cli, a_template_error_names_its_line_once_for_every_variant) {
  char *dir = make_probe_dir();
  fix_probe(dir);
  char *tmpl = path_in(dir, "tune_probe.c.tmpl");
  edit_file(tmpl, "  ubg_i64 t, i;", "  ubg_i64 t, i;\n  t = undeclared_thing;");
  char *text = slurp(tmpl);
  int line = 1;
  for (const char *c = strstr(text, "undeclared_thing"); c > text; c--) line += c[-1] == '\n';
  run_result r = ubgen("check --specs %s tune_probe.fwd", dir);
  assert_status(r, 1);
  char want[600];
  snprintf(want, sizeof want, "%s:%d:", tmpl, line);
  cr_assert(strstr(r.out, want) && strstr(r.out, "undeclared_thing"), "wanted %s in: %s", want, r.out);
  int fails = 0;
  for (const char *c = r.out; (c = strstr(c, "FAIL tune_probe_fwd_f32_d")); c++) fails++;
  cr_assert_eq(fails, 1, "one message for the three variants: %s", r.out);
  cr_assert(strstr(r.out, "FAIL 2 more variants of tune_probe.fwd: the same error as tune_probe_fwd_f32_d"), "%s", r.out);
  cr_assert(strstr(r.out, "source line: `t = undeclared_thing;`"), "%s", r.out);
  run_free(&r);
  free(text), free(tmpl), free(dir);
}

/* tune names a kernel as list, emit and check do: KERNEL, --kernel K, KERNEL.PASS */
Test(cli, tune_names_a_kernel_as_check_does) {
  char *dir = make_probe_dir();
  fix_probe(dir);
  const char *forms[] = {"tune_probe", "--kernel tune_probe", "tune_probe.fwd"};
  for (int f = 0; f < 3; f++) {
    run_result r = ubgen("tune %s --specs %s --reps 1 --db %s/db%d.json", forms[f], dir, scratch, f);
    assert_status(r, 0);
    cr_assert(strstr(r.out, "tune_probe.fwd") && strstr(r.out, "1 entry merged into"), "%s: %s", forms[f], r.out);
    run_free(&r);
  }
  run_result r = ubgen("tune tune_prob --specs %s --reps 1 --db %s/db.json", dir, scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "did you mean \"tune_probe\""), "%s", r.err);
  run_free(&r);
  free(dir);
}

/* a reference that does not compile is a failure with its file and line */
Test(cli, a_reference_that_does_not_compile_names_its_line) {
  char *dir = make_probe_dir();
  fix_probe(dir);
  char *ref = path_in(dir, "tune_probe_ref.c");
  char *text = slurp(ref);
  int line = 1;
  for (const char *c = strstr(text, "UBGEN_REF("); c > text; c--) line += c[-1] == '\n';
  edit_file(ref, "UBGEN_REF(", "this is not C;\nUBGEN_REF(");
  run_result r = ubgen("check --specs %s tune_probe.fwd", dir);
  assert_status(r, 1);
  char want[600];
  snprintf(want, sizeof want, "%s:%d:", ref, line);
  cr_assert(strstr(r.out, "does not compile") && strstr(r.out, want), "wanted %s in: %s", want, r.out);
  run_free(&r);
  r = ubgen("tune --specs %s tune_probe.fwd --db %s/db.json --reps 1", dir, scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, want), "wanted %s in: %s", want, r.err);
  run_free(&r);
  free(text), free(ref), free(dir);
}

/* tune verifies against the reference, times the code the library will
 * run (gcc's for a kernel that is not built in, the built-in code for one
 * that is) and records which */
Test(cli, tune_times_and_records_the_backend_the_library_runs) {
  char *dir = make_probe_dir();
  /* the DB beside the kernel's files: another tool's JSON there is no spec */
  run_result r = ubgen("tune --specs %s tune_probe.fwd --db %s/db.json --reps 1", dir, dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "WRONG tune_probe_fwd_f32_d64: y["), "%s", r.out);
  run_free(&r);
  r = ubgen("list --specs %s --kernel tune_probe", dir);
  assert_status(r, 0);
  run_free(&r);
  char path[400];
  snprintf(path, sizeof path, "%s/db.json", dir);
  char *db = slurp(path);
  cr_assert_not_null(db);
  cr_assert(strstr(db, "\"backend\": \"gcc\""), "%s", db);
  cr_assert_null(strstr(db, "\"variant\": \"tune_probe_fwd_f32_d64\""), "%s", db);
  free(db);
  r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=8,cols=256 --ub 8KiB --db %s/db2.json --reps 1", scratch);
  assert_status(r, 0);
  run_free(&r);
  snprintf(path, sizeof path, "%s/db2.json", scratch);
  db = slurp(path);
  cr_assert_not_null(db);
  cr_assert(strstr(db, "\"backend\": \"aot\""), "%s", db);
  free(db);
  free(dir);
}

/* tune without a reference: refused unless --no-reference, which accepts
 * the variants that give the reference variant's bits */
Test(cli, tune_without_a_reference_is_refused_unless_told_no_reference) {
  char *dir = make_probe_dir();
  fix_probe(dir);
  char *spec = path_in(dir, "tune_probe.json");
  edit_file(spec, "\"reference\": \"tune_probe_ref.c\",", "");
  run_result r = ubgen("tune --specs %s tune_probe.fwd --db %s/db.json --reps 1", dir, scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "names no reference") && strstr(r.err, "--no-reference"), "%s", r.err);
  run_free(&r);
  char path[400];
  snprintf(path, sizeof path, "%s/db.json", scratch);
  cr_assert_not(access(path, F_OK) == 0, "nothing is written");
  r = ubgen("tune --specs %s tune_probe.fwd --db %s --reps 1 --no-reference", dir, path);
  assert_status(r, 0);
  run_free(&r);
  char *db = slurp(path);
  cr_assert(db && strstr(db, "tune_probe_fwd_f32_d"), "%s", db ? db : "(none)");
  free(db), free(spec), free(dir);
}

/* ---- a user spec directory ------------------------------------------------------------------- */

/* DIR/my_norm.json: specs/rms_norm.json with "kernel": "my_norm"; no templates copied */
static char *make_user_specs(void) {
  char *dir = path_in(scratch, "user");
  cr_assert_eq(mkdir(dir, 0755), 0);
  char src[600];
  snprintf(src, sizeof src, "%s/specs/rms_norm.json", UBGEN_SRC);
  char *t = slurp(src);
  cr_assert_not_null(t);
  const char *from = "\"kernel\": \"rms_norm\"";
  char *at = strstr(t, from);
  cr_assert_not_null(at);
  char *mod = malloc(strlen(t) + 16);
  sprintf(mod, "%.*s\"kernel\": \"my_norm\"%s", (int)(at - t), t, at + strlen(from));
  char *dst = path_in(dir, "my_norm.json");
  write_file(dst, mod);
  free(dst);
  free(mod);
  free(t);
  return dir;
}

Test(cli, user_spec_dir_adds_a_kernel) {
  char *dir = make_user_specs();
  run_result r = ubgen("list --specs %s --kernel my_norm", dir);
  assert_status(r, 0);
  listing l = parse_listing(r.out, "my_norm_");
  cr_assert_gt(l.rows, 0);
  cr_assert_eq(l.rows_other_prefix, 0, "only my_norm variants:\n%s", r.out);
  cr_assert_eq(l.total, l.rows);
  cr_assert_eq(l.total_fit, l.fit);
  char *row = line_with(r.out, "my_norm_fwd_bf16_d4096_m1_n ");
  cr_assert(row && strstr(row, "32768") && strstr(row, "yes"), "%s", row ? row : r.out);
  free(row);
  run_free(&r);
  /* the same variants as the kernel it was copied from */
  run_result o = ubgen("list --kernel rms_norm");
  listing lo = parse_listing(o.out, "rms_norm_");
  cr_assert_eq(l.total, lo.total);
  cr_assert_eq(l.total_fit, lo.total_fit);
  run_free(&o);
  /* the shipped kernels are still there */
  r = ubgen("list --specs %s --kernel rms_norm --kernel my_norm", dir);
  assert_status(r, 0);
  listing both = parse_listing(r.out, "");
  cr_assert_eq(both.total, 2 * lo.total);
  run_free(&r);
  /* UBGEN_SPEC_PATH does the same */
  setenv("UBGEN_SPEC_PATH", dir, 1);
  r = ubgen("plan my_norm.fwd --dtype bf16 --shape rows=2048,cols=4096");
  unsetenv("UBGEN_SPEC_PATH");
  assert_status(r, 0);
  char *choice = line_with(r.out, "choice");
  cr_assert(choice && strstr(choice, "my_norm_fwd_bf16_d4096_m1_n"), "%s", r.out);
  free(choice);
  run_free(&r);
  free(dir);
}

Test(cli, user_spec_emits_with_the_shipped_templates) {
  char *dir = make_user_specs();
  char *out = path_in(scratch, "out");
  run_result r = ubgen("emit --specs %s --kernel my_norm --dtype f32 --out %s", dir, out);
  assert_status(r, 0);
  run_free(&r);
  char *fn = path_in(out, "my_norm_fwd_f32_d4096_m1_n.c");
  char *t = slurp(fn);
  cr_assert_not_null(t, "%s", fn);
  cr_assert(!strncmp(t, "/* Generated by ubgen", 21));
  cr_assert(strstr(t, "my_norm.json"), "the header names the user's spec");
  cr_assert(strstr(t, "void my_norm_fwd_f32_d4096_m1_n") || strstr(t, "UBG_KERNEL(my_norm_fwd_f32_d4096_m1_n)"),
            "the kernel function carries the variant name");
  free(t);
  free(fn);
  free(out);
  free(dir);
}

/* A FIFO where a spec or a template is looked for once hung every command
 * that read specs (and ubg_ctx_create through UBGEN_SPEC_PATH) on its open:
 * it is refused at once, like any file that is not a regular one. */
Test(cli, a_fifo_in_a_spec_directory_is_refused_not_waited_on) {
  char *dir = make_user_specs();
  char *fifo = path_in(dir, "waits.json");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  const char *cmds[] = {"list --specs %s", "emit --specs %s --out %s/out", "plan my_norm.fwd --specs %s --dtype f32 "
                        "--shape rows=1,cols=1"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    run_result r = i == 1 ? ubgen("emit --specs %s --out %s/out", dir, scratch) : ubgen(cmds[i], dir);
    assert_status(r, 2);
    cr_assert(strstr(r.err, fifo) && strstr(r.err, "not a regular file"), "%s: %s", cmds[i], r.err);
    run_free(&r);
  }
  char *out = path_in(scratch, "out");
  cr_assert(!exists(out), "emit wrote something");
  free(out);
  /* the library: ubg_ctx_create fails with the same words, it does not wait */
  setenv("UBGEN_SPEC_PATH", dir, 1);
  ubg_ctx *ctx = NULL;
  ubg_status st = ubg_ctx_create(NULL, &ctx);
  unsetenv("UBGEN_SPEC_PATH");
  cr_assert_eq(st, UBG_EINVAL, "%s", ubg_status_str(st));
  cr_assert(strstr(ubg_ctx_error(NULL), "UBGEN_SPEC_PATH") && strstr(ubg_ctx_error(NULL), "not a regular file"), "%s",
            ubg_ctx_error(NULL));
  cr_assert_null(ctx);
  unlink(fifo);
  /* a FIFO as a template: not a template file */
  char *tmpl = path_in(dir, "rms_norm_fwd.c.tmpl");
  cr_assert_eq(mkfifo(tmpl, 0600), 0);
  run_result r = ubgen("emit --specs %s --kernel my_norm --out %s/out", dir, scratch);
  cr_assert(r.status == 0 || r.status == 2, "%s", r.how); /* the shipped template, or a refusal: never a hang */
  run_free(&r);
  free(tmpl), free(fifo), free(dir);
}

/* docs/security.md: a spec cannot make ubgen read an arbitrary file as a
 * template. A symbolic link next to the spec once did (ln -s /etc/passwd
 * x.c.tmpl rendered /etc/passwd into the sources): a template or spec that
 * resolves outside its directory is refused; a link within it is fine. */
Test(cli, specs_and_templates_that_resolve_outside_their_directory_are_refused) {
  char *dir = make_user_specs();
  char *tmpl = path_in(dir, "rms_norm_fwd.c.tmpl");
  cr_assert_eq(symlink("/etc/passwd", tmpl), 0);
  char *out = path_in(scratch, "out");
  run_result r = ubgen("emit --specs %s --kernel my_norm --dtype f32 --out %s", dir, out);
  assert_status(r, 2);
  cr_assert(strstr(r.err, tmpl) && strstr(r.err, "outside its directory"), "%s", r.err);
  cr_assert(!exists(out), "emit wrote something");
  run_free(&r);
  /* a link to a template in the same directory is a template */
  cr_assert_eq(unlink(tmpl), 0);
  char src[600];
  snprintf(src, sizeof src, "%s/templates/rms_norm_fwd.c.tmpl", UBGEN_SRC);
  char *text = slurp(src), *real = path_in(dir, "real_fwd.c.tmpl");
  write_file(real, text);
  cr_assert_eq(symlink("real_fwd.c.tmpl", tmpl), 0);
  r = ubgen("emit --specs %s --kernel my_norm --dtype f32 --out %s", dir, out);
  assert_status(r, 0);
  run_free(&r);
  /* a spec that is a link to a file elsewhere */
  char *elsewhere = path_in(scratch, "elsewhere.json"), *spec = path_in(dir, "my_norm.json");
  cr_assert_eq(rename(spec, elsewhere), 0);
  cr_assert_eq(symlink(elsewhere, spec), 0);
  r = ubgen("list --specs %s", dir);
  assert_status(r, 2);
  cr_assert(strstr(r.err, spec) && strstr(r.err, "outside its directory"), "%s", r.err);
  run_free(&r);
  free(elsewhere), free(spec), free(real), free(text), free(out), free(tmpl), free(dir);
}

/* template lookup order: the spec's dir, then DIR/../templates, then the shipped ones */
Test(cli, templates_next_to_the_spec_come_first) {
  char *root = path_in(scratch, "proj");
  cr_assert_eq(mkdir(root, 0755), 0);
  char *specs = path_in(root, "specs"), *tmpl = path_in(root, "templates");
  cr_assert_eq(mkdir(specs, 0755), 0);
  cr_assert_eq(mkdir(tmpl, 0755), 0);
  char src[600];
  snprintf(src, sizeof src, "%s/specs/rms_norm.json", UBGEN_SRC);
  char *spec = slurp(src);
  const char *from = "\"kernel\": \"rms_norm\"";
  char *at = strstr(spec, from);
  cr_assert_not_null(at);
  char *mod = malloc(strlen(spec) + 16);
  sprintf(mod, "%.*s\"kernel\": \"my_norm\"%s", (int)(at - spec), spec, at + strlen(from));
  char *dst = path_in(specs, "my_norm.json");
  write_file(dst, mod);
  free(dst);
  free(mod);
  free(spec);
  snprintf(src, sizeof src, "%s/templates/rms_norm_fwd.c.tmpl", UBGEN_SRC);
  char *t = slurp(src);
  cr_assert_not_null(t);
  size_t n = strlen(t) + 64;
  char *marked = malloc(n);

  /* ../templates beats the shipped template */
  snprintf(marked, n, "%s/* MARK_PROJECT_TEMPLATES */\n", t);
  dst = path_in(tmpl, "rms_norm_fwd.c.tmpl");
  write_file(dst, marked);
  free(dst);
  char *out = path_in(scratch, "out");
  run_result r = ubgen("emit --specs %s --kernel my_norm --dtype f32 --out %s", specs, out);
  assert_status(r, 0);
  run_free(&r);
  char *fn = path_in(out, "my_norm_fwd_f32_d4096_m1_n.c");
  char *got = slurp(fn);
  cr_assert(got && strstr(got, "MARK_PROJECT_TEMPLATES"), "DIR/../templates is used");
  free(got);

  /* the spec's own directory beats ../templates */
  snprintf(marked, n, "%s/* MARK_SPEC_DIR */\n", t);
  dst = path_in(specs, "rms_norm_fwd.c.tmpl");
  write_file(dst, marked);
  free(dst);
  r = ubgen("emit --specs %s --kernel my_norm --dtype f32 --out %s", specs, out);
  assert_status(r, 0);
  run_free(&r);
  got = slurp(fn);
  cr_assert(got && strstr(got, "MARK_SPEC_DIR") && !strstr(got, "MARK_PROJECT_TEMPLATES"),
            "the template next to the spec is used");
  free(got);
  /* the bwd template, not overridden, still comes from the shipped ones */
  free(fn);
  fn = path_in(out, "my_norm_bwd_f32_d4096_m1_n.c");
  got = slurp(fn);
  cr_assert(got && !strstr(got, "MARK_"), "%s", fn);
  free(got);
  free(fn);
  free(out);
  free(marked);
  free(t);
  free(specs);
  free(tmpl);
  free(root);
}

/* ---- the budget and templates the library would use ------------------------------ */

/* The command line reads the budget from the same environment as the library. */
Test(cli, budget_from_environment) {
  setenv("UBGEN_UB_BYTES", "64KiB", 1);
  run_result r = ubgen("plan rms_norm.fwd --dtype f32 --shape rows=2,cols=4096 --json");
  assert_status(r, 0);
  json_t *j = parse_json(r.out);
  cr_assert_eq(json_integer_value(json_object_get(j, "usable")), 58982);
  json_decref(j);
  run_free(&r);
  unsetenv("UBGEN_UB_BYTES");
  setenv("ASCEND_UB_CAPACITY_BITS", "2097152", 1); /* 256 KiB */
  r = ubgen("list --kernel rms_norm --json");
  assert_status(r, 0);
  j = parse_json(r.out);
  cr_assert_eq(json_integer_value(json_object_get(j, "ub_bytes")), 262144);
  json_decref(j);
  run_free(&r);
  r = ubgen("list --kernel rms_norm --ub 192KiB --json"); /* --ub wins */
  j = parse_json(r.out);
  cr_assert_eq(json_integer_value(json_object_get(j, "ub_bytes")), 196608);
  json_decref(j);
  run_free(&r);
  unsetenv("ASCEND_UB_CAPACITY_BITS");
  setenv("UBGEN_UB_BYTES", "lots", 1);
  r = ubgen("list --kernel rms_norm");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "UBGEN_UB_BYTES"), "%s", r.err);
  run_free(&r);
}

/* --ub has the library's limits in every command */
Test(cli, ub_limits_are_the_same_everywhere) {
  static const char *cmds[] = {"list", "plan rms_norm.fwd --dtype f32 --shape rows=1,cols=8", "check rms_norm.fwd",
                               "emit --out /tmp/never_written_by_ubgen_tests"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    for (int k = 0; k < 2; k++) {
      run_result r = ubgen("%s --ub %s", cmds[i], k ? "2GiB" : "1000");
      assert_status(r, 2);
      cr_assert(strstr(r.err, "outside [1024, 1073741824]"), "%s: %s", cmds[i], r.err);
      run_free(&r);
    }
  }
  cr_assert(!exists("/tmp/never_written_by_ubgen_tests"));
}

/* A spec whose template cannot be found is a bad spec, located at its key. */
Test(cli, missing_template_is_located_in_the_spec) {
  char *dir = path_in(scratch, "specs");
  cr_assert_eq(mkdir(dir, 0755), 0);
  char *spec_in = path_in(UBGEN_SRC, "specs/rms_norm.json");
  char *text = slurp(spec_in);
  cr_assert_not_null(text);
  char *at = strstr(text, "\"rms_norm_bwd.c.tmpl\"");
  cr_assert_not_null(at);
  memcpy(at + 1, "missing", 7); /* "missingm_bwd.c.tmpl" */
  char *kernel = strstr(text, "\"kernel\": \"rms_norm\"");
  memcpy(kernel + 11, "usr_norm", 8);
  char *spec = path_in(dir, "usr_norm.json");
  write_file(spec, text);
  int line = 1, col = 1;
  for (const char *c = text; c < at; c++) {
    if (*c == '\n') line++, col = 1;
    else col++;
  }
  for (int k = 0; k < 2; k++) {
    run_result r = ubgen(k ? "emit --specs %s --out %s/out" : "list --specs %s", dir, scratch);
    assert_status(r, 2);
    char want[600];
    snprintf(want, sizeof want, "%s:%d:%d: template \"missingm_bwd.c.tmpl\"", spec, line, col);
    cr_assert(strstr(r.err, want), "wanted \"%s\" in: %s", want, r.err);
    run_free(&r);
  }
  free(dir), free(spec_in), free(text), free(spec);
}

/* A copy of a shipped spec in a user's directory may come with its own
 * templates: the built-in code must not serve it (it did once, silently
 * running the shipped template). The JIT compiles the user's template and
 * partials: unmodified copies pass `check`, a rms_norm_row.h that doubles y
 * fails it. */
Test(cli, user_copy_of_shipped_spec_runs_the_users_template) {
  char *dir = path_in(scratch, "specs");
  cr_assert_eq(mkdir(dir, 0755), 0);
  char *spec_in = path_in(UBGEN_SRC, "specs/rms_norm.json");
  char *text = slurp(spec_in);
  char *spec = path_in(dir, "rms_norm.json");
  write_file(spec, text);
  char *tmpl_in = path_in(UBGEN_SRC, "templates/rms_norm_fwd.c.tmpl");
  char *tmpl = slurp(tmpl_in);
  char *tmpl_out = path_in(dir, "rms_norm_fwd.c.tmpl");
  write_file(tmpl_out, tmpl);
  copy_in("templates/rms_norm_row.h", dir);
  copy_in("specs/rms_norm_ref.c", dir);
  run_result r = ubgen("check rms_norm.fwd --dtype f32 --specs %s", dir);
  assert_status(r, 0);
  run_free(&r);
  /* rstd, and so y, doubled: every code path goes through rstd_of, which
   * the template pastes from the partial beside the spec */
  char *row = path_in(dir, "rms_norm_row.h");
  edit_file(row, "float r = 1.0f / sqrtf(", "float r = 2.0f / sqrtf(");
  r = ubgen("check rms_norm.fwd --dtype f32 --specs %s", dir);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "FAIL") && (strstr(r.out, "y[") || strstr(r.out, "rstd[")), "%s", r.out);
  run_free(&r);
  free(dir), free(spec_in), free(text), free(spec), free(tmpl_in), free(tmpl), free(tmpl_out), free(row);
}

/* ---- tune ------------------------------------------------------------------------ */

/* tests/specs/tune_probe's d64 variant computes 3x instead of 2x */
Test(cli, tune_rejects_a_wrong_variant) {
  run_result r = ubgen("tune tune_probe.fwd --specs %s/tests/specs --db %s/db.json --reps 2", UBGEN_SRC, scratch);
  assert_status(r, 1);
  cr_assert(strstr(r.out, "WRONG tune_probe_fwd_f32_d64"), "%s", r.out);
  cr_assert(strstr(r.out, "1 variants gave wrong results"), "%s", r.out);
  char path[400];
  snprintf(path, sizeof path, "%s/db.json", scratch);
  char *db = slurp(path);
  cr_assert_not_null(db, "the DB is written with the correct variants' result");
  cr_assert(strstr(db, "\"tune_probe_fwd_f32_d16\"") || strstr(db, "\"tune_probe_fwd_f32_d32\""), "%s", db);
  cr_assert(!strstr(db, "\"variant\": \"tune_probe_fwd_f32_d64\""), "the wrong variant is never chosen: %s", db);
  free(db);
  run_free(&r);
}

/* the table, the DB entry, and the plan that follows it */
Test(cli, tune_writes_the_db_and_plan_follows_it) {
  run_result r = ubgen("tune rms_norm.fwd --dtype bf16 --shape rows=64,cols=512 --db %s/db.json --reps 2", scratch);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "median us") && strstr(r.out, "vs default") && strstr(r.out, "  default"), "%s", r.out);
  cr_assert(strstr(r.out, "1 entry merged into"), "%s", r.out);
  char *tuned = strstr(r.out, "  tuned ");
  cr_assert_not_null(tuned, "%s", r.out);
  char name[128];
  cr_assert_eq(sscanf(tuned, "  tuned %127[^:]:", name), 1);
  run_free(&r);
  r = ubgen("plan rms_norm.fwd --dtype bf16 --shape rows=50,cols=512 --db %s/db.json", scratch);
  assert_status(r, 0);
  char want[200];
  snprintf(want, sizeof want, "choice    %s  (tuned)", name);
  cr_assert(strstr(r.out, want), "bucket rows=64 serves rows=50: %s", r.out);
  run_free(&r);
  /* a second tune of another shape merges into the same file */
  r = ubgen("tune rms_norm.fwd --dtype bf16 --shape rows=200,cols=512 --db %s/db.json --reps 2 --json", scratch);
  assert_status(r, 0);
  json_error_t e;
  json_t *j = json_loads(r.out, 0, &e);
  cr_assert_not_null(j, "--json prints JSON on stdout: %s", e.text);
  cr_assert_eq(json_array_size(j), 1);
  json_t *shape = json_object_get(json_array_get(j, 0), "shape"); /* an object, as the DB keeps shapes */
  cr_assert(json_is_object(shape) && json_object_size(shape) == 2, "shape: %s", r.out);
  cr_assert_eq(json_integer_value(json_object_get(shape, "rows")), 200);
  cr_assert_eq(json_integer_value(json_object_get(shape, "cols")), 512);
  json_decref(j);
  run_free(&r);
  char path[400];
  snprintf(path, sizeof path, "%s/db.json", scratch);
  char *db = slurp(path);
  cr_assert(strstr(db, "\"rows\": 64") && strstr(db, "\"rows\": 256"), "both buckets are in the DB: %s", db);
  free(db);
}

Test(cli, tune_refuses_bad_usage) {
  const char *bad[] = {"tune", "tune rms_norm.fwd --reps 0", "tune rms_norm.fwd --backend cuda",
                       "tune all --shape rows=1,cols=1", "tune nosuch.fwd"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = ubgen("%s", bad[i]);
    assert_status(r, 2);
    cr_assert(strlen(r.err) > 0, "%s: says why", bad[i]);
    run_free(&r);
  }
}

/* --svg: one panel per tuned shape, the UB limit marked where variants were rejected */
Test(cli, tune_draws_the_svg) {
  run_result r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=16384 --db %s/db.json --reps 1 --svg %s/t.svg",
                       scratch, scratch);
  assert_status(r, 0);
  run_free(&r);
  char path[400];
  snprintf(path, sizeof path, "%s/t.svg", scratch);
  char *svg = slurp(path);
  cr_assert_not_null(svg);
  cr_assert(!strncmp(svg, "<svg ", 5) && strstr(svg, "</svg>\n"), "a whole SVG document");
  /* the title in two lines: the pass and shape, then what was tuned */
  cr_assert(strstr(svg, ">rms_norm.fwd f32 rows=16,cols=16384</text>") && strstr(svg, ">tuned rms_norm_fwd_f32_d"),
            "titled by pass and shape, then the tuned variant");
  cr_assert(strstr(svg, ">UB limit<") && (strstr(svg, ">tuned<") || strstr(svg, ">tuned = default<")) &&
                strstr(svg, ">whole row") && strstr(svg, ">tiled"),
            "UB limit, tuned point and both series are marked");
  /* the UB limit's label stands left of its line, inside the plot */
  cr_assert(strstr(svg, "text-anchor='end' paint-order='stroke' stroke='white' stroke-width='3'>UB limit<"), "%s", svg);
  free(svg);
}

/* ---- tune: shapes as lists and ranges, --shard, tune merge, emit --tuned ---- */

/* the DB at path, parsed; its entries' "rows,cols" keys sorted into keys */
static int db_keys(const char *path, char keys[][64], int max) {
  json_error_t e;
  json_t *root = json_load_file(path, 0, &e);
  cr_assert_not_null(root, "%s: %s", path, e.text);
  json_t *ents = json_object_get(root, "entries");
  int n = (int)json_array_size(ents);
  cr_assert_leq(n, max);
  for (int i = 0; i < n; i++) {
    json_t *sh = json_object_get(json_array_get(ents, (size_t)i), "shape");
    snprintf(keys[i], 64, "%lld,%lld", (long long)json_integer_value(json_object_get(sh, "rows")),
             (long long)json_integer_value(json_object_get(sh, "cols")));
  }
  json_decref(root);
  qsort(keys, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
  return n;
}

/* two shards of one sweep run disjoint halves; merged, they hold the sweep */
Test(cli, tune_shards_merge_into_the_whole_sweep, .timeout = 120 * TC_TIME_SCALE) {
  const char *sweep = "tune rms_norm.fwd --dtype f32 --shape rows=16:64,cols=256/512 --reps 1";
  for (int s = 1; s <= 2; s++) {
    run_result r = ubgen("%s --shard %d/2 --db %s/part%d.json", sweep, s, scratch, s);
    assert_status(r, 0);
    cr_assert(strstr(r.out, "of the sweep's 6 units"), "%s", r.out);
    run_free(&r);
  }
  char a[8][64], b[8][64], all[8][64], path[400];
  snprintf(path, sizeof path, "%s/part1.json", scratch);
  int na = db_keys(path, a, 8);
  snprintf(path, sizeof path, "%s/part2.json", scratch);
  int nb = db_keys(path, b, 8);
  cr_assert_eq(na, 3, "shard 1 ran every other unit");
  cr_assert_eq(nb, 3);
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++) cr_assert_str_neq(a[i], b[j], "both shards tuned %s", a[i]);
  run_result r = ubgen("tune merge %s/part1.json %s/part2.json --db %s/all.json", scratch, scratch, scratch);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "6 entries from 2 DBs merged"), "%s", r.out);
  run_free(&r);
  snprintf(path, sizeof path, "%s/all.json", scratch);
  cr_assert_eq(db_keys(path, all, 8), 6);
  const char *want[] = {"16,256", "16,512", "32,256", "32,512", "64,256", "64,512"}; /* sorted */
  for (int i = 0; i < 6; i++) cr_assert_str_eq(all[i], want[i]);
  /* the same key in two inputs: the later one's, and the output says so */
  r = ubgen("tune merge %s/part1.json %s/part1.json --db %s/twice.json", scratch, scratch, scratch);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "3 entries from 2 DBs") && strstr(r.out, "3 keys in more than one input"), "%s", r.out);
  run_free(&r);
}

/* a missing, corrupt or foreign input is an error and OUT is left as it was */
Test(cli, tune_merge_refuses_bad_inputs_and_writes_nothing) {
  char good[400], out[400], path[400];
  snprintf(good, sizeof good, "%s/good.json", scratch);
  snprintf(out, sizeof out, "%s/out.json", scratch);
  const char *entry = "{\"kernel\": \"rms_norm\", \"pass\": \"fwd\", \"dtype\": \"f32\", \"shape\": {\"rows\": 64, "
                      "\"cols\": 512}, \"ub_bytes\": 196608, \"variant\": \"rms_norm_fwd_f32_d512_m1_n\", \"backend\": "
                      "\"aot\", \"median_us\": 1.0, \"default_variant\": \"rms_norm_fwd_f32_d512_m1_n\", "
                      "\"default_median_us\": 1.0, \"candidates\": 1, \"rejected_ub\": 0}";
  char text[2048];
  snprintf(text, sizeof text, "{\"version\": 1, \"cpu\": \"cpu A\", \"entries\": [%s]}", entry);
  write_file(good, text);
  snprintf(path, sizeof path, "%s/other_cpu.json", scratch);
  snprintf(text, sizeof text, "{\"version\": 1, \"cpu\": \"cpu B\", \"entries\": [%s]}", entry);
  write_file(path, text);
  snprintf(path, sizeof path, "%s/corrupt.json", scratch);
  write_file(path, "{\"version\": 1, \"entries\": [");
  const char *bad[][2] = {{"missing.json", "does not exist"}, {"corrupt.json", "corrupt.json:1:"},
                          {"other_cpu.json", "one machine's timings"}};
  for (int pass = 0; pass < 2; pass++) { /* OUT absent, then OUT present */
    if (pass == 1) write_file(out, "{\"version\": 1, \"entries\": []}\n");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      run_result r = ubgen("tune merge %s %s/%s --db %s", good, scratch, bad[i][0], out);
      assert_status(r, 2);
      cr_assert(strstr(r.err, bad[i][1]), "%s: %s", bad[i][0], r.err);
      run_free(&r);
      char *now = slurp(out);
      if (pass == 0) cr_assert_null(now, "%s: OUT was created", bad[i][0]);
      else cr_assert_str_eq(now, "{\"version\": 1, \"entries\": []}\n", "%s: OUT was changed", bad[i][0]);
      free(now);
    }
  }
  const char *usage[] = {"tune merge", "tune merge --db x.json", "tune merge a.json", "tune merge a.json --db",
                         "tune merge a.json --db x.json --reps 3"};
  for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
    run_result r = ubgen("%s", usage[i]);
    assert_status(r, 2);
    cr_assert(strstr(r.err, "tune merge"), "%s: %s", usage[i], r.err);
    run_free(&r);
  }
}

/* a DB holding another machine's timings is not mixed with this one's:
 * tune (before its sweep) and merge refuse it as --db, and leave it as it was */
Test(cli, tune_and_merge_refuse_a_db_of_another_cpu) {
  char other[400], mine[400];
  snprintf(other, sizeof other, "%s/other.json", scratch);
  snprintf(mine, sizeof mine, "%s/mine.json", scratch);
  const char *text = "{\"version\": 1, \"cpu\": \"Not This CPU\", \"entries\": []}\n";
  write_file(other, text);
  run_result r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=256 --reps 1 --db %s", other);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "holds timings tuned on \"Not This CPU\"") && !strstr(r.out, "rms_norm_fwd"), "%s%s", r.out,
            r.err);
  run_free(&r);
  r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=256 --reps 1 --db %s", mine);
  assert_status(r, 0);
  run_free(&r);
  r = ubgen("tune merge %s --db %s", mine, other);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "holds timings tuned on \"Not This CPU\"") && strstr(r.err, "nothing written"), "%s",
            r.err);
  run_free(&r);
  char *now = slurp(other);
  cr_assert_str_eq(now, text, "the other CPU's DB was changed");
  free(now);
}

/* A typo in --db must not destroy a file: tune and tune merge refuse (exit
 * 2, before any sweep) a file that is not a DB this version reads, and
 * leave it byte for byte. They once replaced it with a warning, exit 0. */
Test(cli, tune_and_merge_never_overwrite_a_file_that_is_not_a_db) {
  char good[400], target[400];
  snprintf(good, sizeof good, "%s/good.json", scratch);
  snprintf(target, sizeof target, "%s/target.json", scratch);
  run_result r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=256 --reps 1 --db %s", good);
  assert_status(r, 0);
  run_free(&r);
  const char *texts[] = {"my notes, not a DB\n", "{\"version\": 1, \"entries\": [", "",
                         "{\"version\": 2, \"entries\": []}\n"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    write_file(target, texts[i]);
    r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=256 --reps 1 --db %s", target);
    assert_status(r, 2);
    cr_assert(strstr(r.err, "is not a tuning DB this ubgen can read") && strstr(r.err, "nothing tuned"), "%s", r.err);
    cr_assert(!strstr(r.out, "rms_norm_fwd_f32"), "text %zu: the sweep ran: %s", i, r.out);
    run_free(&r);
    r = ubgen("tune merge %s --db %s", good, target);
    assert_status(r, 2);
    cr_assert(strstr(r.err, "is not a tuning DB this ubgen can read") && strstr(r.err, "nothing written"), "%s",
              r.err);
    run_free(&r);
    char *now = slurp(target);
    cr_assert_str_eq(now ? now : "(gone)", texts[i], "text %zu changed", i);
    free(now);
  }
}

/* what would make the save fail after the sweep is found before it: the
 * DB's directory missing, its lock unusable */
Test(cli, tune_checks_the_db_and_its_lock_before_sweeping) {
  char lock[400];
  snprintf(lock, sizeof lock, "%s/db.json.lock", scratch);
  cr_assert_eq(mkdir(lock, 0700), 0);
  run_result r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=256 --reps 1 --db %s/db.json", scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "lock") && strstr(r.err, "nothing tuned") && !strstr(r.out, "rms_norm_fwd_f32"), "%s%s",
            r.out, r.err);
  run_free(&r);
  rmdir(lock);
  r = ubgen("tune rms_norm.fwd --dtype f32 --shape rows=16,cols=256 --reps 1 --db %s/no/such/dir/db.json", scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "does not exist") && !strstr(r.out, "rms_norm_fwd_f32"), "%s%s", r.out, r.err);
  run_free(&r);
  r = ubgen("tune merge %s/x.json --db %s/no/such/dir/db.json", scratch, scratch);
  assert_status(r, 2);
  cr_assert(strstr(r.err, "does not exist") && strstr(r.err, "nothing written"), "%s", r.err);
  run_free(&r);
}

Test(cli, shape_lists_and_ranges_are_checked) {
  const char *bad[][2] = {{"rows=8:4,cols=16", "rows=\"8:4\""},       {"rows=0:4,cols=16", "rows=\"0:4\""},
                          {"rows=1:9:0,cols=16", "rows=\"1:9:0\""},   {"rows=1/x,cols=16", "rows=\"1/x\""},
                          {"rows=1,rows=2,cols=16", "given twice"},   {"rows=1:100000:1,cols=16", "more than"},
                          {"rows=1/,cols=16", "rows"},                {"rows=2:1024,cols=0", "cols=0"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = ubgen("tune rms_norm.fwd --dtype f32 --shape %s --db %s/db.json", bad[i][0], scratch);
    assert_status(r, 2);
    cr_assert(strstr(r.err, bad[i][1]), "--shape %s: %s", bad[i][0], r.err);
    run_free(&r);
  }
  run_result r = ubgen("plan rms_norm.fwd --dtype f32 --shape rows=16/32,cols=16");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "gives 2 shapes; this command takes one"), "%s", r.err);
  run_free(&r);
}

/* a lean emit: the DB's tuned variant, the defaults, nothing else */
Test(cli, emit_tuned_keeps_the_tuned_and_default_variants) {
  char db[400], out[400];
  snprintf(db, sizeof db, "%s/db.json", scratch);
  snprintf(out, sizeof out, "%s/lean", scratch);
  /* an entry whose variant is not what the default strategy picks there */
  write_file(db, "{\"version\": 1, \"entries\": [{\"kernel\": \"rms_norm\", \"pass\": \"fwd\", \"dtype\": \"f32\", "
                 "\"shape\": {\"rows\": 64, \"cols\": 512}, \"ub_bytes\": 196608, \"variant\": "
                 "\"rms_norm_fwd_f32_d128_m1_t\", \"backend\": \"aot\", \"median_us\": 1.0, \"default_variant\": \"x\", "
                 "\"default_median_us\": 1.0, \"candidates\": 1, \"rejected_ub\": 0}, {\"kernel\": "
                 "\"rms_norm\", \"pass\": \"fwd\", \"dtype\": \"f32\", \"shape\": {\"rows\": 64, \"cols\": 512}, "
                 "\"ub_bytes\": 1024, \"variant\": \"rms_norm_fwd_f32_d16_m1_t\", \"backend\": \"aot\", "
                 "\"median_us\": 1.0, \"default_variant\": \"x\", \"default_median_us\": 1.0, \"candidates\": 1, "
                 "\"rejected_ub\": 0}]}");
  run_result r = ubgen("emit --kernel rms_norm --out %s --tuned %s", out, db);
  assert_status(r, 0);
  cr_assert(strstr(r.err, "1 tuned entry ") && strstr(r.err, "1 entry tuned at another UB budget not used"), "%s",
            r.err);
  run_free(&r);
  char **names;
  int n = list_dir(out, &names);
  int nc = 0;
  bool tuned = false, other_ub = false;
  for (int i = 0; i < n; i++) {
    if (!ends_with(names[i], ".c") || !strncmp(names[i], "ubg_", 4)) continue;
    nc++;
    tuned |= !strcmp(names[i], "rms_norm_fwd_f32_d128_m1_t.c");
    other_ub |= !strcmp(names[i], "rms_norm_fwd_f32_d16_m1_t.c");
  }
  cr_assert(tuned, "the tuned variant is emitted");
  cr_assert(!other_ub, "an entry of another UB budget is not");
  /* the default strategy's choice at the entry's shape and at the spec's tune shape */
  const char *shapes[] = {"rows=64,cols=512", "rows=2048,cols=4096"};
  for (int s = 0; s < 2; s++) {
    r = ubgen("plan rms_norm.fwd --dtype f32 --shape %s --json", shapes[s]);
    assert_status(r, 0);
    json_t *j = parse_json(r.out);
    char file[200];
    snprintf(file, sizeof file, "%s.c", json_string_value(json_object_get(j, "variant")));
    bool found = false;
    for (int i = 0; i < n; i++) found |= !strcmp(names[i], file);
    cr_assert(found, "the default choice %s at %s is emitted", file, shapes[s]);
    json_decref(j);
    run_free(&r);
  }
  char **all;
  int nall = fitting_variants("f32", &all);
  cr_assert_lt(nc, nall / 4, "a lean build: %d variants emitted of %d that fit (f32 alone)", nc, nall);
  free_names(all, nall);
  free_names(names, n);
  /* a DB named on purpose but missing or corrupt: exit 2, nothing written */
  char bad[400];
  snprintf(bad, sizeof bad, "%s/corrupt.json", scratch);
  write_file(bad, "{\"version\": 1, ");
  const char *dbs[] = {"missing.json", "corrupt.json"};
  for (int i = 0; i < 2; i++) {
    r = ubgen("emit --kernel rms_norm --out %s/none --tuned %s/%s", scratch, scratch, dbs[i]);
    assert_status(r, 2);
    cr_assert(strstr(r.err, dbs[i]), "%s", r.err);
    char none[400];
    snprintf(none, sizeof none, "%s/none", scratch);
    cr_assert(!exists(none), "nothing written for %s", dbs[i]);
    run_free(&r);
  }
}

/* whether files (a directory's names) hold <variant>.c */
static bool emitted(char **files, int n, const char *variant) {
  char file[200];
  snprintf(file, sizeof file, "%s.c", variant);
  for (int i = 0; i < n; i++)
    if (!strcmp(files[i], file)) return true;
  return false;
}

/* --sample 8, make test-valgrind's build: of each pass and dtype, every 8th
 * variant that fits (in list order), the first tiled one, the widest
 * whole-row one and the default choice at the spec's tune shape; nothing
 * else. The rule is written here again on list's JSON, independently of
 * ug_sample_mark. */
Test(cli, emit_sample_keeps_every_nth_and_one_of_each_kind) {
  char out[400];
  snprintf(out, sizeof out, "%s/sampled", scratch);
  run_result r = ubgen("emit --kernel rms_norm --out %s --sample 8", out);
  assert_status(r, 0);
  run_free(&r);
  char **names;
  int n = list_dir(out, &names);
  int nc = 0;
  for (int i = 0; i < n; i++) nc += ends_with(names[i], ".c") && strncmp(names[i], "ubg_", 4);
  r = ubgen("list --kernel rms_norm --json");
  assert_status(r, 0);
  json_t *root = parse_json(r.out);
  run_free(&r);
  char group[64] = ""; /* "<pass> <dtype>": the group the rule runs over */
  int want = 0, idx = 0, widest = -1;
  const char *tiled_name = NULL, *widest_name = NULL;
  json_t *variants = json_object_get(root, "variants");
  for (size_t i = 0; i <= json_array_size(variants); i++) {
    json_t *v = json_array_get(variants, i); /* NULL past the end closes the last group */
    if (v && !json_is_true(json_object_get(v, "fits"))) continue;
    char key[64] = "";
    if (v)
      snprintf(key, sizeof key, "%s %s", json_string_value(json_object_get(v, "pass")),
               json_string_value(json_object_get(v, "dtype")));
    if (strcmp(key, group)) { /* the group ends: its first tiled and widest whole-row variants */
      if (group[0]) {
        cr_assert(tiled_name && emitted(names, n, tiled_name), "%s: the first tiled variant %s is emitted", group, tiled_name);
        cr_assert(widest_name && emitted(names, n, widest_name), "%s: the widest whole-row %s is emitted", group, widest_name);
      }
      if (!v) break;
      snprintf(group, sizeof group, "%s", key);
      idx = 0, widest = -1, tiled_name = widest_name = NULL;
    }
    const char *name = json_string_value(json_object_get(v, "variant"));
    json_t *axes = json_object_get(v, "axes");
    int block_d = (int)json_integer_value(json_object_get(axes, "BLOCK_D"));
    if (json_is_true(json_object_get(axes, "tiled"))) tiled_name = tiled_name ? tiled_name : name;
    else if (block_d > widest) widest = block_d, widest_name = name;
    if (idx++ % 8 == 0) {
      cr_assert(emitted(names, n, name), "%s (every 8th of %s) is emitted", name, group);
      want++;
    }
  }
  /* the default strategy's choice at the spec's tune shape */
  r = ubgen("plan rms_norm.fwd --dtype f32 --shape rows=2048,cols=4096 --json");
  assert_status(r, 0);
  json_t *j = parse_json(r.out);
  const char *chosen = json_string_value(json_object_get(j, "variant"));
  cr_assert(emitted(names, n, chosen), "the default choice %s is emitted", chosen);
  json_decref(j);
  run_free(&r);
  cr_assert(nc >= want && nc < want + 40, "%d variants emitted: the %d sampled, their kinds and the defaults", nc,
            want);
  json_decref(root);
  free_names(names, n);
  /* a sample of 0, or with --tuned: exit 2, nothing written */
  const char *bad[] = {"--sample 0", "--sample x", "--sample 8 --tuned db.json"};
  for (int b = 0; b < 3; b++) {
    r = ubgen("emit --kernel rms_norm --out %s/none %s", scratch, bad[b]);
    assert_status(r, 2);
    cr_assert(strstr(r.err, "--sample"), "%s", r.err);
    char none[400];
    snprintf(none, sizeof none, "%s/none", scratch);
    cr_assert(!exists(none), "nothing written for %s", bad[b]);
    run_free(&r);
  }
}

/* flce.chunk: whole ubg_flce calls at each chunk size, the fastest into the DB */
Test(cli, tune_flce_chunk_writes_an_entry) {
  run_result r = ubgen("tune flce.chunk --dtype f32 --shape bt=64,hidden=32,vocab=512 --reps 1 --db %s/db.json", scratch);
  assert_status(r, 0);
  cr_assert(strstr(r.out, "flce.chunk  f32  bt=64,hidden=32,vocab=512") && strstr(r.out, "chunk=64") &&
                strstr(r.out, "  default"),
            "%s", r.out);
  char *tuned = strstr(r.out, "  tuned chunk=");
  cr_assert_not_null(tuned, "%s", r.out);
  long long chunk;
  cr_assert_eq(sscanf(tuned, "  tuned chunk=%lld", &chunk), 1);
  run_free(&r);
  char path[400], want[64];
  snprintf(path, sizeof path, "%s/db.json", scratch);
  char *db = slurp(path);
  snprintf(want, sizeof want, "\"variant\": \"chunk=%lld", chunk);
  cr_assert(strstr(db, "\"kernel\": \"flce\"") && strstr(db, "\"pass\": \"chunk\"") && strstr(db, want) &&
                strstr(db, "\"vocab\": 512"),
            "%s", db);
  free(db);
  /* plan flce.chunk follows the entry, at a shape of the same bucket */
  r = ubgen("plan flce.chunk --dtype f32 --shape bt=64,hidden=30,vocab=500 --db %s/db.json", scratch);
  assert_status(r, 0);
  snprintf(want, sizeof want, "chunk     %lld rows  (tuned)", chunk);
  cr_assert(strstr(r.out, want), "want \"%s\" in:\n%s", want, r.out);
  run_free(&r);
}

/* ---- plan flce.chunk: what ubg_flce would do for a call -------------------------- */

/* the spec's rule, computed here: min(512, max(256, next_pow2(ceil(bt / 4)))), at most bt */
static long long rule_chunk(long long bt, long long hidden, long long vocab) {
  (void)hidden, (void)vocab;
  long long c = 1;
  while (c < (bt + 3) / 4) c *= 2;
  c = c < 256 ? 256 : c > 512 ? 512 : c;
  return c < bt ? c : bt;
}

/* the GEMMs a call of this dtype takes by default in this build, on this
 * CPU (the spec's "prefer"): oneDNN where it runs the dtype */
static const char *default_gemm(int dtype) {
  return !rt_dnnl_missing() && rt_dnnl_runs((ubg_dtype)dtype) ? "onednn" : "generated";
}

/* `plan flce.chunk --json` at a shape; exit 0 expected */
static json_t *plan_flce(const char *dtype, const char *shape, const char *more) {
  run_result r = ubgen("plan flce.chunk --dtype %s --shape %s --json %s", dtype, shape, more);
  assert_status(r, 0);
  json_t *j = parse_json(r.out);
  run_free(&r);
  return j;
}

static long long jint(json_t *j, const char *key) {
  json_t *v = json_object_get(j, key);
  cr_assert(json_is_integer(v), "\"%s\" is an integer in %s", key, json_dumps(j, 0));
  return json_integer_value(v);
}

static const char *jstr(json_t *j, const char *key) {
  const char *v = json_string_value(json_object_get(j, key));
  cr_assert_not_null(v, "\"%s\" is a string in %s", key, json_dumps(j, 0));
  return v;
}

Test(cli, plan_flce_chunk_without_a_db_is_the_rule) {
  static const long long shapes[][3] = {{4096, 1024, 32768}, {512, 512, 16384}, {100, 64, 64}, {7, 100, 50}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const long long bt = shapes[i][0], h = shapes[i][1], v = shapes[i][2], want = rule_chunk(bt, h, v);
    char shape[128];
    snprintf(shape, sizeof shape, "bt=%lld,hidden=%lld,vocab=%lld", bt, h, v);
    for (int d = 0; d < 3; d++) {
      const char *dt = (const char *[]){"f32", "f16", "bf16"}[d];
      json_t *j = plan_flce(dt, shape, "");
      cr_assert_eq(jint(j, "chunk"), want, "%s %s", dt, shape);
      cr_assert_eq(jint(j, "rule_chunk"), want, "%s %s", dt, shape);
      cr_assert_str_eq(jstr(j, "source"), "spec rule");
      cr_assert(strstr(jstr(j, "not_tuned"), "no tuning DB"), "%s", jstr(j, "not_tuned"));
      cr_assert_str_eq(jstr(j, "gemm"), default_gemm(d));
      cr_assert_eq(jint(j, "chunks"), (bt + want - 1) / want);
      /* what ubg_flce allocates for the chunk: its logits, in whole 64-byte lines */
      cr_assert_eq(jint(j, "logits_bytes"), (want * v * 4 + 63) / 64 * 64, "%s %s", dt, shape);
      cr_assert_eq(jint(j, "dw_acc_bytes"), d ? (v * h * 4 + 63) / 64 * 64 : 0, "%s %s", dt, shape);
      json_decref(j);
      /* kept in the dtype (accum_dtype, an int argument of the op), no accumulator */
      char in_dtype[200];
      snprintf(in_dtype, sizeof in_dtype, "%s,accum_dtype=%d", shape, d);
      j = plan_flce(dt, in_dtype, "");
      cr_assert_eq(jint(j, "dw_acc_bytes"), 0, "%s %s", dt, in_dtype);
      cr_assert_eq(jint(j, "chunk"), want, "%s %s", dt, in_dtype);
      json_decref(j);
    }
  }
  /* the example of the docs: 512 rows, said in text too */
  cr_assert_eq(rule_chunk(4096, 1024, 32768), 512);
  run_result r = ubgen("plan flce.chunk --dtype bf16 --shape bt=4096,hidden=1024,vocab=32768");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "chunk     512 rows  (spec rule") && strstr(r.out, "chunks    8 of 512 rows"), "%s",
            r.out);
  cr_assert_str_empty(r.err);
  run_free(&r);
}

/* the tuner's default candidate, the one a tuned entry must beat, is what
 * a call without a DB runs: the chunk rule and the preferred GEMMs (it was
 * the generated GEMMs once, so that a win "inside the noise" kept them and
 * a tuned DB made the call slower than none) */
Test(cli, tune_flce_chunk_measures_against_what_runs_without_a_db) {
  for (int d = 0; d < 3; d += 2) {
    const char *dt = d ? "bf16" : "f32";
    run_result r = ubgen("tune flce.chunk --dtype %s --shape bt=64,hidden=32,vocab=256 --reps 1 --db %s/default-%s.json",
                         dt, scratch, dt);
    assert_status(r, 0);
    char want[64];
    snprintf(want, sizeof want, "chunk=%lld%s%s", rule_chunk(64, 32, 256), strcmp(default_gemm(d), "generated") ? ",gemm=" : "",
             strcmp(default_gemm(d), "generated") ? default_gemm(d) : "");
    char line[128];
    snprintf(line, sizeof line, "  %-32s", want);
    cr_assert(strstr(r.out, line) && strstr(strstr(r.out, line), "default\n"), "%s is the default: %s", want, r.out);
    run_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/default-%s.json", scratch, dt);
    char *text = slurp(path);
    json_t *db = parse_json(text);
    cr_assert_str_eq(jstr(json_array_get(json_object_get(db, "entries"), 0), "default_variant"), want);
    json_decref(db);
    free(text);
  }
}

/* a DB entry at --ub's budget, this dtype and the shape's bucket serves;
 * the DB is one the tests write, as `ubgen tune flce.chunk` writes them */
static char *write_flce_db_with(const char *name, const char *cpu, const char *f32_variant) {
  char *path = path_in(scratch, name);
  const char *fmt = "{\"kernel\": \"flce\", \"pass\": \"chunk\", \"dtype\": \"%s\", \"shape\": {\"bt\": 4096, "
                    "\"hidden\": 1024, \"vocab\": 32768}, \"ub_bytes\": 196608, \"variant\": \"%s\", \"backend\": "
                    "\"aot\", \"median_us\": 900.0, \"default_variant\": \"chunk=128\", \"default_median_us\": "
                    "1200.0, \"candidates\": 8, \"rejected_ub\": 0}";
  char f32[600], bf16[600], text[1600];
  snprintf(f32, sizeof f32, fmt, "f32", f32_variant);
  snprintf(bf16, sizeof bf16, fmt, "bf16", "chunk=8192");
  snprintf(text, sizeof text, "{\"version\": 1, %s%s%s\"entries\": [%s, %s]}\n", cpu ? "\"cpu\": \"" : "", cpu ? cpu : "",
           cpu ? "\", " : "", f32, bf16);
  write_file(path, text);
  return path;
}

static char *write_flce_db(const char *name, const char *cpu) { return write_flce_db_with(name, cpu, "chunk=32"); }

/* an entry is exactly chunk=N or chunk=N,gemm=onednn, N in plain decimal
 * from 1 to 2^30; anything else serves nothing and plan says why */
Test(cli, plan_flce_chunk_ignores_malformed_entries) {
  const char *bad[] = {"chunk=8,gemm=evil", "chunk=16,chunk=32", "chunk=+8", "chunk=99999999999999999999",
                       "chunk=0", "chunk=-8", "chunk=08", "chunk= 8", "chunk=8 ", "chunk=8,gemm=onednn,x",
                       "chunk=8,gemm=openblas" /* a GEMM this library no longer has */, "chunk=1073741825", "chunk=", "chunk=8,", "chunks=8", "CHUNK=8", "chunk=0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *db = write_flce_db_with("flce-bad.json", NULL, bad[i]);
    char more[600];
    snprintf(more, sizeof more, "--db %s", db);
    json_t *j = plan_flce("f32", "bt=4000,hidden=1000,vocab=30000", more);
    cr_assert_str_eq(jstr(j, "source"), "spec rule", "entry \"%s\"", bad[i]);
    cr_assert(strstr(jstr(j, "not_tuned"), "which is not one of its variants"), "entry \"%s\": %s", bad[i],
              jstr(j, "not_tuned"));
    json_decref(j);
    free(db);
  }
  const char *good[][2] = {{"chunk=1073741824", "4000"}, {"chunk=8", "8"}, {"chunk=8,gemm=onednn", "8"}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char *db = write_flce_db_with("flce-good.json", NULL, good[i][0]);
    char more[600];
    snprintf(more, sizeof more, "--db %s", db);
    json_t *j = plan_flce("f32", "bt=4000,hidden=1000,vocab=30000", more);
    cr_assert_str_eq(jstr(j, "source"), "tuned", "entry \"%s\"", good[i][0]);
    cr_assert_eq(jint(j, "chunk"), atoll(good[i][1]), "entry \"%s\"", good[i][0]);
    json_decref(j);
    free(db);
  }
}

Test(cli, plan_flce_chunk_follows_the_tuning_db) {
  char *db = write_flce_db("flce.json", NULL);
  char more[600];
  snprintf(more, sizeof more, "--db %s", db);
  /* bt=4000 is in bucket 4096, hidden 1000 in 1024, vocab 30000 in 32768 */
  json_t *j = plan_flce("f32", "bt=4000,hidden=1000,vocab=30000", more);
  cr_assert_eq(jint(j, "chunk"), 32);
  cr_assert_str_eq(jstr(j, "source"), "tuned");
  cr_assert_str_eq(jstr(j, "tuned_variant"), "chunk=32");
  json_t *bucket = json_object_get(j, "bucket"); /* an object, as the DB keeps shapes */
  cr_assert_eq(json_integer_value(json_object_get(bucket, "bt")), 4096);
  cr_assert_eq(json_integer_value(json_object_get(bucket, "hidden")), 1024);
  cr_assert_eq(json_integer_value(json_object_get(bucket, "vocab")), 32768);
  cr_assert(strstr(jstr(j, "why"), "900.0 us") && strstr(jstr(j, "why"), "chunk=128"), "%s", jstr(j, "why"));
  cr_assert_null(json_object_get(j, "not_tuned"));
  cr_assert_eq(jint(j, "chunks"), 125);
  cr_assert_eq(jint(j, "rule_chunk"), rule_chunk(4000, 1000, 30000));
  json_decref(j);
  /* the same from $UBGEN_TUNING_DB, in text */
  setenv("UBGEN_TUNING_DB", db, 1);
  run_result r = ubgen("plan flce.chunk --dtype f32 --shape bt=4000,hidden=1000,vocab=30000");
  assert_status(r, 0);
  cr_assert(strstr(r.out, "chunk     32 rows  (tuned)"), "%s", r.out);
  run_free(&r);
  unsetenv("UBGEN_TUNING_DB");
  /* a tuned chunk above bt is bt */
  j = plan_flce("bf16", "bt=4000,hidden=1000,vocab=30000", more);
  cr_assert_eq(jint(j, "chunk"), 4000);
  cr_assert_str_eq(jstr(j, "source"), "tuned");
  json_decref(j);
  /* not used, and why: another bucket, another dtype, another UB budget */
  const char *miss[][3] = {{"f32", "bt=8192,hidden=1000,vocab=30000", ""},
                           {"f16", "bt=4000,hidden=1000,vocab=30000", ""},
                           {"f32", "bt=4000,hidden=1000,vocab=30000", "--ub 256KiB"}};
  for (size_t i = 0; i < sizeof miss / sizeof miss[0]; i++) {
    char m[700];
    snprintf(m, sizeof m, "%s %s", more, miss[i][2]);
    j = plan_flce(miss[i][0], miss[i][1], m);
    cr_assert_str_eq(jstr(j, "source"), "spec rule", "%s %s %s", miss[i][0], miss[i][1], miss[i][2]);
    cr_assert(strstr(jstr(j, "not_tuned"), "no tuning entry"), "%s", jstr(j, "not_tuned"));
    json_decref(j);
  }
  /* an unusable DB (corrupt, another CPU's) is a warning, and the rule serves */
  char *other = write_flce_db("other.json", "Not This CPU");
  char *corrupt = path_in(scratch, "corrupt.json");
  write_file(corrupt, "{\"version\": 1, \"entries\": [");
  const char *bad[] = {other, corrupt};
  for (int i = 0; i < 2; i++) {
    r = ubgen("plan flce.chunk --dtype f32 --shape bt=4000,hidden=1000,vocab=30000 --json --db %s", bad[i]);
    assert_status(r, 0);
    cr_assert(strstr(r.err, "warning") && strstr(r.err, bad[i]), "%s", r.err);
    j = parse_json(r.out);
    cr_assert_str_eq(jstr(j, "source"), "spec rule");
    cr_assert(strstr(jstr(j, "not_tuned"), "unusable") && strstr(jstr(j, "not_tuned"), bad[i]), "%s",
              jstr(j, "not_tuned"));
    json_decref(j);
    run_free(&r);
  }
  free(corrupt), free(other), free(db);
}

Test(cli, plan_flce_chunk_environment_wins_over_the_db) {
  char *db = write_flce_db("flce.json", NULL);
  char more[600];
  snprintf(more, sizeof more, "--db %s", db);
  setenv("UBGEN_VARIANT", "flce.chunk=chunk=64", 1);
  json_t *j = plan_flce("f32", "bt=4000,hidden=1000,vocab=30000", more);
  cr_assert_eq(jint(j, "chunk"), 64);
  cr_assert_str_eq(jstr(j, "source"), "UBGEN_VARIANT");
  cr_assert(strstr(jstr(j, "not_tuned"), "forced by UBGEN_VARIANT (flce.chunk=chunk=64) wins") &&
                strstr(jstr(j, "not_tuned"), "chunk=32"),
            "%s", jstr(j, "not_tuned"));
  cr_assert_eq(jint(j, "chunks"), 63);
  json_decref(j);
  /* and over the rule; never more than bt */
  setenv("UBGEN_VARIANT", "flce.chunk=chunk=8192", 1);
  j = plan_flce("bf16", "bt=100,hidden=64,vocab=64", "");
  cr_assert_eq(jint(j, "chunk"), 100);
  cr_assert_str_eq(jstr(j, "source"), "UBGEN_VARIANT");
  cr_assert(strstr(jstr(j, "why"), "at most bt"), "%s", jstr(j, "why"));
  json_decref(j);
  /* a bad value is refused as ubg_ctx_create refuses it */
  setenv("UBGEN_VARIANT", "flce.chunk=chunk=lots", 1);
  run_result r = ubgen("plan flce.chunk --dtype f32 --shape bt=1,hidden=1,vocab=1");
  assert_status(r, 2);
  cr_assert(strstr(r.err, "UBGEN_VARIANT entry flce.chunk=chunk=lots"), "%s", r.err);
  cr_assert_str_empty(r.out);
  run_free(&r);
  /* gemm=B forces the GEMMs alone: the chunk stays the tuned one */
  setenv("UBGEN_VARIANT", "flce.chunk=gemm=generated", 1);
  j = plan_flce("f32", "bt=4000,hidden=1000,vocab=30000", more);
  cr_assert_str_eq(jstr(j, "gemm"), "generated");
  cr_assert_str_eq(jstr(j, "gemm_source"), "UBGEN_VARIANT");
  cr_assert_str_eq(jstr(j, "source"), "tuned");
  json_decref(j);
  unsetenv("UBGEN_VARIANT");
  free(db);
}

Test(cli, plan_flce_chunk_bad_input_exits_2) {
  static const struct {
    const char *args, *named;
  } bad[] = {
      {"--dtype f32 --shape bt=4096,hidden=1024", "vocab"},           /* a dim missing */
      {"--dtype f32 --shape hidden=1024,vocab=32768", "bt"},
      {"--dtype f32 --shape bt=0,hidden=1024,vocab=32768", "bt=0"},   /* below 1 */
      {"--dtype f32 --shape bt=8,hidden=0,vocab=32768", "hidden=0"},
      {"--dtype f32 --shape bt=8,hidden=8,vocab=-1", "vocab=-1"},
      {"--dtype f32 --shape bt=8,hidden=8,vocab=x", "vocab=\"x\""},
      {"--dtype f32 --shape bt=8,hidden=8,vocab=8,rows=8", "rows"},  /* not a shape name */
      {"--dtype f32 --shape bt=8/16,hidden=8,vocab=8", "bt=8/16"},   /* one shape only */
      {"--dtype f32 --shape bt=8,hidden=8,vocab=4294967296", "vocab=4294967296"},
      {"--dtype f32 --dtype bf16 --shape bt=8,hidden=8,vocab=8", "--dtype \"bf16\""}, /* a second --dtype */
      {"--dtype f32 --dtype f32 --shape bt=8,hidden=8,vocab=8", "--dtype \"f32\" after"},
      {"--dtype f64 --shape bt=8,hidden=8,vocab=8", "f64"},
      {"--shape bt=8,hidden=8,vocab=8", "--dtype"},
      {"--dtype f32", "--shape"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = ubgen("plan flce.chunk %s", bad[i].args);
    assert_status(r, 2);
    cr_assert(strstr(r.err, bad[i].named), "%s: the message names %s: %s", bad[i].args, bad[i].named, r.err);
    cr_assert_str_empty(r.out, "%s", bad[i].args);
    run_free(&r);
  }
}

/* the chunk rule is the spec's: a copy of flce.json on UBGEN_SPEC_PATH with
 * another default expression changes the chunk that plan (and so the
 * runtime) takes */
Test(cli, plan_flce_chunk_follows_the_specs_rule) {
  char *dir = path_in(scratch, "rule");
  cr_assert_eq(mkdir(dir, 0755), 0);
  copy_in("specs/flce.json", dir);
  copy_in("specs/flce_ref.c", dir);
  char *dst = path_in(dir, "flce.json");
  edit_file(dst, "\"default\": \"min(512, max(256, next_pow2(cdiv(bt, 4))))\"", "\"default\": \"min(cdiv(bt, 3), 48)\"");
  setenv("UBGEN_SPEC_PATH", dir, 1);
  json_t *j = plan_flce("f32", "bt=100,hidden=32,vocab=300", "");
  unsetenv("UBGEN_SPEC_PATH");
  cr_assert_eq(jint(j, "chunk"), 34, "min(cdiv(100, 3), 48)");
  cr_assert_str_eq(jstr(j, "source"), "spec rule");
  cr_assert(strstr(jstr(j, "why"), "min(cdiv(bt, 3), 48) = 34"), "%s", jstr(j, "why"));
  json_decref(j);
  j = plan_flce("f32", "bt=100,hidden=32,vocab=300", "");
  cr_assert_eq(jint(j, "chunk"), 100, "the shipped rule again: min(512, max(256, 32)), at most bt");
  json_decref(j);
  free(dst), free(dir);
}

/* ---- README's counts ---------------------------------------------------------- */

/* the number written just before `words` in text ("1,597 built-in kernels"),
 * commas skipped; -1 when text does not say it */
static long count_before(const char *text, const char *words) {
  const char *at = strstr(text, words);
  if (!at) return -1;
  const char *p = at;
  while (p > text && (p[-1] == ',' || (p[-1] >= '0' && p[-1] <= '9'))) p--;
  long n = -1;
  for (; p < at; p++)
    if (*p != ',') n = (n < 0 ? 0 : n * 10) + (*p - '0');
  return n;
}

/* README's counts are the build's and the tree's, as mk/readme-counts.sh
 * writes them: a kernel added or a bad spec added without rerunning it
 * fails here, not in a reader's hands */
Test(cli, readme_counts_are_the_builds) {
  char *readme = slurp(UBGEN_SRC "/README.md");
  cr_assert_not_null(readme, "cannot read %s/README.md", UBGEN_SRC);
  run_result r = ubgen("list --ub 196608");
  assert_status(r, 0);
  listing l = parse_listing(r.out, "");
  long said = count_before(readme, " built-in kernels");
  cr_expect_eq(said, l.total_fit,
               "README.md says %ld built-in kernels, `ubgen list` %d fit the default budget: "
               "run sh mk/readme-counts.sh",
               said, l.total_fit);
  long cases = 0;
  DIR *dir = opendir(UBGEN_SRC "/tests/bad-specs");
  cr_assert_not_null(dir, "cannot open tests/bad-specs: %s", strerror(errno));
  for (struct dirent *e; (e = readdir(dir));) {
    char *path = path_in(UBGEN_SRC "/tests/bad-specs", e->d_name);
    struct stat st;
    if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) cases++;
    free(path);
  }
  closedir(dir);
  said = count_before(readme, " malformed specs");
  cr_expect_eq(said, cases, "README.md says %ld malformed specs, tests/bad-specs has %ld: run sh mk/readme-counts.sh",
               said, cases);
  free(readme);
  run_free(&r);
}
