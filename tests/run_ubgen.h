/* Running the ubgen binary from a test: a private scratch directory per test
 * (with its own gcc cache), the environment cleared of everything that would
 * change what ubgen sees, and `ubgen ARGS` run with its exit status, stdout
 * and stderr captured. Used by test_cli.c and test_bad_specs.c; include it
 * once, after criterion.h.
 *
 * $UBGEN_TEST_WRAPPER, when set, is put in front of every run (make
 * test-valgrind runs ubgen under valgrind that way). */
#ifndef UBGEN_TESTS_RUN_UBGEN_H
#define UBGEN_TESTS_RUN_UBGEN_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* test timeouts are multiplied by this: make test-valgrind runs everything
 * 20-50 times slower */
#ifndef TC_TIME_SCALE
#define TC_TIME_SCALE 1
#endif

/* seconds for one ubgen run: a hang is a failure, not a stuck test */
#define RUN_TIMEOUT (120 * TC_TIME_SCALE)

static char scratch[256]; /* this test's temporary directory */

/* the scratch directory /tmp/ubgen_test_<name>_XXXXXX and a clean environment */
static void scratch_setup(const char *name) {
  unsetenv("UBGEN_SPEC_PATH");
  unsetenv("UBGEN_DATA_DIR");
  unsetenv("UBGEN_UB_BYTES");
  unsetenv("ASCEND_UB_CAPACITY_BITS");
  unsetenv("UBGEN_BACKEND");
  unsetenv("UBGEN_LOG");
  unsetenv("UBGEN_TUNING_DB");
  unsetenv("UBGEN_VARIANT");
  snprintf(scratch, sizeof scratch, "/tmp/ubgen_test_%s_XXXXXX", name);
  cr_assert_not_null(mkdtemp(scratch), "mkdtemp: %s", strerror(errno));
  char cache[300];
  snprintf(cache, sizeof cache, "%s/cache", scratch);
  setenv("UBGEN_CACHE_DIR", cache, 1);
}

static void scratch_teardown(void) {
  if (strncmp(scratch, "/tmp/ubgen_test_", 16) == 0 && !strchr(scratch, '\'')) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd) != 0) cr_log_warn("could not remove %s", scratch);
  }
}

/* the whole file, NUL-terminated; NULL if it cannot be read */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
  while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *grown = realloc(buf, cap *= 2);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

typedef struct {
  int status;   /* exit status; -1 when killed by a signal */
  char how[64]; /* "exit 2", "timed out after 120 s", "killed by signal 11" */
  char *out, *err;
} run_result;

static void run_free(run_result *r) {
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

/* runs `ubgen ARGS` (shell text: our paths hold no spaces or quotes) */
static run_result ubgen(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static run_result ubgen(const char *fmt, ...) {
  char args[4096], cmd[8192], out[400], err[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  const char *wrapper = getenv("UBGEN_TEST_WRAPPER");
  snprintf(out, sizeof out, "%s/stdout", scratch);
  snprintf(err, sizeof err, "%s/stderr", scratch);
  snprintf(cmd, sizeof cmd, "exec timeout -k 5 %d %s '%s' %s >'%s' 2>'%s' </dev/null", RUN_TIMEOUT,
           wrapper ? wrapper : "", UBGEN_BIN, args, out, err);
  int st = system(cmd);
  run_result r = {0};
  if (st != -1 && WIFEXITED(st)) {
    r.status = WEXITSTATUS(st);
    if (r.status == 124) snprintf(r.how, sizeof r.how, "timed out after %d s", RUN_TIMEOUT);
    else if (r.status > 128) snprintf(r.how, sizeof r.how, "killed by signal %d", r.status - 128);
    else snprintf(r.how, sizeof r.how, "exit %d", r.status);
  } else {
    r.status = -1;
    snprintf(r.how, sizeof r.how, "killed by signal %d", st != -1 && WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
  r.out = slurp(out);
  r.err = slurp(err);
  cr_assert_not_null(r.out, "cannot read %s", out);
  cr_assert_not_null(r.err, "cannot read %s", err);
  unlink(out);
  unlink(err);
  return r;
}

#define assert_status(r, want)                                                                                         \
  cr_assert_eq((r).status, (want), "%s, want exit %d\n--- stdout:\n%.2000s\n--- stderr:\n%.2000s", (r).how, (want),    \
               (r).out, (r).err)

/* a file or link is there (a dangling symlink counts: something was made) */
static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

#endif
