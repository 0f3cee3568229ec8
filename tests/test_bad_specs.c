/* The corpus of malformed specs and templates in tests/bad-specs (see its
 * README.md): every case must be refused the way docs/cli.md promises for
 * bad input, exit status 2 with `ubgen: FILE:LINE:COL: what`, pointing at
 * the offending place, and nothing written. A spec is user input that ends
 * up compiled as C, so a loader or renderer that crashes, hangs, accepts
 * the input or reports it without a position is a bug this test is meant
 * to catch.
 *
 * Each case directory holds a spec `bad.json` (kernel "bad"), the templates
 * it names and `expect`: line 1 the location relative to the case directory
 * (`bad.json:3:13`), line 2 an exact substring of the message; or line 1
 * `KNOWN-BAD` and line 2 what is wrong, for a bug not fixed yet (the case is
 * skipped with that line in the log).
 *
 * Each test loops over all cases, logs every failing one with cr_log_error
 * and asserts the count at the end, so one run reports all of them. ubgen
 * runs through the shell under `timeout`, with stdin from /dev/null and
 * stdout and stderr captured to files in the test's own mkdtemp directory. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CASES_DIR UBGEN_SRC "/tests/bad-specs"
#define MIN_CASES 30

/* ---- scratch directory and running ubgen ---------------------------------------- */

#include "run_ubgen.h"

static void setup(void) { scratch_setup("bad_specs"); }

TestSuite(bad_specs, .init = setup, .fini = scratch_teardown, .timeout = 600 * TC_TIME_SCALE);

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- the corpus ------------------------------------------------------------------ */

typedef struct {
  char name[128];    /* NN-short-name */
  char dir[512];     /* absolute */
  bool known_bad;    /* expect's line 1 is KNOWN-BAD; msg says why */
  char loc[256];     /* FILE:LINE:COL, relative to dir */
  char file[200];    /* FILE of loc */
  char msg[1024];    /* expect's line 2 */
  char problem[300]; /* why expect is unusable, or "" */
} bad_case;

static int cmp_case(const void *a, const void *b) {
  return strcmp(((const bad_case *)a)->name, ((const bad_case *)b)->name);
}

static void chomp(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
}

static void read_expect(bad_case *c) {
  char path[700];
  snprintf(path, sizeof path, "%s/expect", c->dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(c->problem, sizeof c->problem, "cannot read expect: %s", strerror(errno));
    return;
  }
  char l1[sizeof c->loc] = "", l2[sizeof c->msg] = "";
  bool ok = fgets(l1, sizeof l1, f) && fgets(l2, sizeof l2, f);
  fclose(f);
  chomp(l1);
  chomp(l2);
  if (!ok || !l1[0] || !l2[0]) {
    snprintf(c->problem, sizeof c->problem, "expect needs two non-empty lines");
    return;
  }
  snprintf(c->msg, sizeof c->msg, "%s", l2);
  if (strcmp(l1, "KNOWN-BAD") == 0) {
    c->known_bad = true;
    return;
  }
  /* FILE:LINE:COL, FILE a plain name in the case directory (or below it) */
  char *colon2 = strrchr(l1, ':');
  char *colon1 = colon2 ? memrchr(l1, ':', (size_t)(colon2 - l1)) : NULL;
  int line, col;
  char tail;
  if (!colon1 || colon1 == l1 || sscanf(colon1, ":%d:%d%c", &line, &col, &tail) != 2 || line < 1 || col < 1) {
    snprintf(c->problem, sizeof c->problem, "line 1 of expect is not FILE:LINE:COL or KNOWN-BAD: \"%s\"", l1);
    return;
  }
  snprintf(c->loc, sizeof c->loc, "%s", l1);
  snprintf(c->file, sizeof c->file, "%.*s", (int)(colon1 - l1), l1);
}

/* every NN-* directory of tests/bad-specs, sorted by name */
static int load_cases(bad_case **out) {
  DIR *d = opendir(CASES_DIR);
  cr_assert_not_null(d, "cannot open %s: %s", CASES_DIR, strerror(errno));
  int n = 0, cap = 128;
  bad_case *v = calloc((size_t)cap, sizeof *v);
  cr_assert_not_null(v);
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *s = e->d_name;
    if (!(s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] == '-' && s[3])) continue;
    if (n == cap) {
      v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
      cr_assert_not_null(v);
    }
    bad_case *c = &v[n];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%.127s", s);
    snprintf(c->dir, sizeof c->dir, "%s/%s", CASES_DIR, s);
    if (!is_dir(c->dir)) continue;
    n++;
  }
  closedir(d);
  qsort(v, (size_t)n, sizeof *v, cmp_case);
  for (int i = 0; i < n; i++) read_expect(&v[i]);
  *out = v;
  return n;
}

/* the error is in the spec itself, not in a template */
static bool spec_error(const bad_case *c) {
  size_t n = strlen(c->file);
  return n > 5 && strcmp(c->file + n - 5, ".json") == 0;
}

/* "" when stderr is `<prefix><dir>/<loc>: ...<msg>...`, else what is wrong */
static const char *diag_problem_after(const bad_case *c, const char *err, const char *prefix) {
  char want[1024];
  snprintf(want, sizeof want, "%s%s/%s: ", prefix, c->dir, c->loc);
  if (strncmp(err, want, strlen(want)) != 0)
    return strstr(err, want) ? "the message is not the first line" : "wrong place";
  if (!strstr(err, c->msg)) return "wrong message";
  return "";
}

/* "" when stderr is `ubgen: <dir>/<loc>: ...<msg>...`, the form docs/cli.md
 * promises, else what is wrong */
static const char *diag_problem(const bad_case *c, const char *err) { return diag_problem_after(c, err, "ubgen: "); }

/* ---- the tests ------------------------------------------------------------------- */

Test(bad_specs, corpus_is_complete) {
  bad_case *cs;
  int n = load_cases(&cs), bad = 0, known_bad = 0;
  for (int i = 0; i < n; i++) {
    const bad_case *c = &cs[i];
    if (c->problem[0]) {
      cr_log_error("%s: %s", c->name, c->problem);
      bad++;
      continue;
    }
    if (i > 0 && strncmp(c->name, cs[i - 1].name, 2) == 0) {
      cr_log_error("%s: number %.2s is used twice (%s)", c->name, c->name, cs[i - 1].name);
      bad++;
    }
    char spec[700];
    snprintf(spec, sizeof spec, "%s/bad.json", c->dir);
    if (!exists(spec)) {
      cr_log_error("%s: no bad.json", c->name);
      bad++;
    }
    if (c->known_bad) {
      known_bad++;
      continue;
    }
    char file[800];
    snprintf(file, sizeof file, "%s/%s", c->dir, c->file);
    if (!exists(file)) {
      cr_log_error("%s: expect names %s, which is not in the case directory", c->name, c->file);
      bad++;
    }
  }
  cr_log_info("%d cases, %d of them KNOWN-BAD", n, known_bad);
  free(cs);
  cr_assert_geq(n, MIN_CASES, "only %d cases in %s", n, CASES_DIR);
  cr_assert_geq(n - known_bad, MIN_CASES, "only %d cases are checked (%d KNOWN-BAD)", n - known_bad, known_bad);
  cr_assert_eq(bad, 0, "%d problems with the corpus itself (logged above)", bad);
}

/* ubgen emit: exit 2, the location and message, nothing written, nothing on stdout */
Test(bad_specs, emit_refuses_each_case_at_its_place) {
  bad_case *cs;
  int n = load_cases(&cs), failed = 0, checked = 0;
  for (int i = 0; i < n; i++) {
    const bad_case *c = &cs[i];
    if (c->problem[0]) continue; /* corpus_is_complete reports it */
    if (c->known_bad) {
      cr_log_warn("%s: skipped, KNOWN-BAD: %s", c->name, c->msg);
      continue;
    }
    char out[400];
    snprintf(out, sizeof out, "%s/emit-%.2s", scratch, c->name);
    run_result r = ubgen("emit --specs %s --kernel bad --out %s/out", c->dir, out);
    checked++;
    const char *why = r.status != 2 ? r.how : diag_problem(c, r.err);
    if (!why[0] && exists(out)) why = "--out was created";
    if (!why[0] && r.out[0]) why = "it printed on stdout";
    if (why[0]) {
      cr_log_error("%s: %s; want exit 2 and \"ubgen: <case>/%s: ...%s...\"\n  got (%s) stderr: %.600s%s%.300s", c->name,
                   why, c->loc, c->msg, r.how, r.err, r.out[0] ? "\n  stdout: " : "", r.out);
      failed++;
    }
    run_free(&r);
  }
  free(cs);
  cr_assert_geq(checked, MIN_CASES);
  cr_assert_eq(failed, 0, "%d of %d cases failed (logged above)", failed, checked);
}

/* list and check all load every spec before anything else: an error in the
 * spec stops them just as it stops emit. They render no template (list
 * plans UB layouts only; check renders through the JIT only for passes with
 * a "check" section, and these have none), so cases whose error is in a
 * template are left to emit (on them `check all` would only run every
 * shipped kernel's checks, for minutes, and pass). */
Test(bad_specs, list_and_check_refuse_each_spec_error) {
  static const char *const cmds[] = {"list", "check all"};
  bad_case *cs;
  int n = load_cases(&cs), failed = 0, checked = 0;
  for (int i = 0; i < n; i++) {
    const bad_case *c = &cs[i];
    if (c->problem[0] || c->known_bad || !spec_error(c)) continue;
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
      run_result r = ubgen("%s --specs %s", cmds[k], c->dir);
      checked++;
      const char *why = r.status != 2 ? r.how : diag_problem(c, r.err);
      if (!why[0] && r.out[0]) why = "it printed on stdout";
      if (why[0]) {
        cr_log_error("%s: ubgen %s: %s; want exit 2 and \"ubgen: <case>/%s: ...%s...\"\n  got (%s) stderr: %.600s",
                     c->name, cmds[k], why, c->loc, c->msg, r.how, r.err);
        failed++;
      }
      run_free(&r);
    }
  }
  free(cs);
  cr_assert_geq(checked, 2 * MIN_CASES);
  cr_assert_eq(failed, 0, "%d of %d runs failed (logged above)", failed, checked);
}

/* A spec file that cannot be read. Git cannot hold one and the tests may
 * run as root (chmod 000 stops nothing), so these are made here: a
 * directory named bad.json, and a symlink bad.json to a file that does not
 * exist. There is no position to give: the message names the file alone,
 * `ubgen: <dir>/bad.json: what`. */
Test(bad_specs, unreadable_spec_file_is_named) {
  static const struct {
    const char *name, *msg;
  } kinds[] = {{"directory", "not a regular file"}, {"dangling-symlink", "No such file or directory"}};
  static const char *const cmds[] = {"emit --kernel bad --out %s/out", "list", "check all"};
  int failed = 0;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    char dir[400], spec[500];
    snprintf(dir, sizeof dir, "%s/%s", scratch, kinds[k].name);
    cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
    snprintf(spec, sizeof spec, "%s/bad.json", dir);
    if (k == 0) cr_assert_eq(mkdir(spec, 0755), 0, "%s: %s", spec, strerror(errno));
    else cr_assert_eq(symlink("nowhere.json", spec), 0, "%s: %s", spec, strerror(errno));
    for (size_t j = 0; j < sizeof cmds / sizeof cmds[0]; j++) {
      char args[1200], cmd[600], out[500], want[700];
      snprintf(cmd, sizeof cmd, cmds[j], dir);
      snprintf(args, sizeof args, "%s --specs %s", cmd, dir);
      snprintf(out, sizeof out, "%s/out", dir);
      snprintf(want, sizeof want, "ubgen: %s: ", spec);
      run_result r = ubgen("%s", args);
      const char *why = r.how;
      if (r.status == 2) {
        if (strncmp(r.err, want, strlen(want)) != 0) why = "the message does not start with the file";
        else if (!strstr(r.err, kinds[k].msg)) why = "wrong message";
        else if (r.out[0]) why = "it printed on stdout";
        else if (exists(out)) why = "--out was created";
        else why = "";
      }
      if (why[0]) {
        cr_log_error("%s: ubgen %s: %s; want exit 2 and \"%s...%s\"\n  got (%s) stderr: %.600s", kinds[k].name, args,
                     why, want, kinds[k].msg, r.how, r.err);
        failed++;
      }
      run_free(&r);
    }
  }
  cr_assert_eq(failed, 0, "%d runs failed (logged above)", failed);
}
