/* The tuning DB's file (tunedb.h): loading it (checks on the file, then
 * tunedb_read.c), writing it as JSON, and the locked, atomic merge of
 * measurements into a file that other tuners may be writing too. The
 * entries in memory are tunedb_index.c's. */
#include "tunedb.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec.h"

/* far above any real sweep; bounds what a stray file can make us allocate */
enum { MAX_DB_BYTES = 64 << 20, PATH_BYTES = 4096 };

static void say(char *buf, size_t n, const char *fmt, ...) {
  if (!buf || n == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
}

/* ---- reading -------------------------------------------------------------- */

/* O_NOFOLLOW: a symlink planted at the DB path is refused, never followed;
 * O_NONBLOCK: a FIFO there cannot hang us before fstat rejects it. */
int ug_tunedb_load(const char *path, ug_tunedb *db, char *warn, size_t nwarn) {
  memset(db, 0, sizeof *db);
  say(warn, nwarn, "");
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    say(warn, nwarn, "%s: %s", path, errno == ELOOP ? "a symbolic link, not followed" : strerror(errno));
    return 1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_DB_BYTES) {
    close(fd);
    say(warn, nwarn, "%s: not a regular file of at most %d bytes", path, MAX_DB_BYTES);
    return 1;
  }
  /* the DB steers every call's variant: only this user's or root's, and
   * writable by nobody else (docs/security.md) */
  if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    close(fd);
    say(warn, nwarn, "%s: owned by uid %u with mode %03o; a tuning DB must belong to this user (uid %u) or root and be "
        "writable by its owner only", path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)geteuid());
    return 1;
  }
  /* read whole, then parsed in one pass (gen/tunedb_read.c) */
  char *text = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (text && got < (size_t)st.st_size) {
    ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int read_errno = errno;
  close(fd);
  if (!text) return say(warn, nwarn, "%s: out of memory", path), -1;
  if (got != (size_t)st.st_size) {
    free(text);
    say(warn, nwarn, "%s: %s", path, read_errno ? strerror(read_errno) : "the file shrank while it was read");
    return 1;
  }
  char why[512];
  int rc = ug_tunedb_parse(text, got, db, why, sizeof why);
  free(text);
  if (rc != 0) {
    ug_tunedb_free(db);
    say(warn, nwarn, "%s:%s%s", path, why[0] >= '0' && why[0] <= '9' ? "" : " ", why);
  }
  return rc;
}

int ug_tunedb_load_here(const char *path, ug_tunedb *db, char *warn, size_t nwarn) {
  int rc = ug_tunedb_load(path, db, warn, nwarn);
  if (rc != 0 || !db->cpu[0]) return rc;
  char here[sizeof db->cpu];
  ug_tune_cpu_name(here, sizeof here);
  if (!here[0] || !strcmp(here, db->cpu)) return 0;
  say(warn, nwarn, "%s: tuned on \"%s\", but this machine is \"%s\"", path, db->cpu, here);
  ug_tunedb_free(db);
  return 1;
}

/* ---- writing -------------------------------------------------------------- */

#define BSTR(f) (f), strnlen((f), sizeof(f)) /* for json_pack's "s%" */

static json_t *entry_json(const ug_tune_entry *e) {
  if (e->dtype < 0 || e->dtype >= UG_NDTYPES || e->nshape < 0 || e->nshape > UG_TUNE_MAX_SHAPE ||
      !isfinite(e->median_us) || !isfinite(e->default_median_us))
    return NULL; /* json_real cannot hold inf or NaN */
  json_t *shape = json_object();
  for (int i = 0; shape && i < e->nshape; i++) {
    char name[sizeof e->shape_names[0]];
    snprintf(name, sizeof name, "%.*s", (int)sizeof name - 1, e->shape_names[i]);
    if (json_object_set_new(shape, name, json_integer(e->shape[i])) < 0) {
      json_decref(shape);
      return NULL;
    }
  }
  return json_pack("{s:s%, s:s%, s:s, s:o, s:I, s:s%, s:s%, s:f, s:s%, s:f, s:I, s:I}", "kernel", BSTR(e->kernel),
                   "pass", BSTR(e->pass), "dtype", ug_dtype_name(e->dtype), "shape", shape, "ub_bytes",
                   (json_int_t)e->ub_bytes, "variant", BSTR(e->variant), "backend", BSTR(e->backend), "median_us",
                   e->median_us, "default_variant", BSTR(e->default_variant), "default_median_us",
                   e->default_median_us, "candidates", (json_int_t)e->candidates, "rejected_ub",
                   (json_int_t)e->rejected_ub);
}

/* the file's text, or NULL with err set */
static char *dump_db(const char *path, const ug_tunedb *db, char *err, size_t nerr) {
  json_t *ents = json_array();
  for (int i = 0; ents && i < db->n; i++)
    if (json_array_append_new(ents, entry_json(&db->e[i])) < 0) {
      say(err, nerr, "%s: entry %d (%.64s) has an invalid dtype, shape, timing or string", path, i, db->e[i].kernel);
      json_decref(ents);
      return NULL;
    }
  json_t *root = json_pack("{s:i, s:s%, s:o}", "version", 1, "cpu", BSTR(db->cpu), "entries", ents);
  char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  if (!text) say(err, nerr, "%s: cannot format the DB (out of memory or a cpu name that is not UTF-8)", path);
  return text;
}

static int write_all(int fd, const char *p, size_t left) {
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    p += n;
    left -= (size_t)n;
  }
  return 0;
}

/* fsyncs path's directory, so the rename survives a crash (best effort) */
static void sync_dir(const char *path) {
  char dir[PATH_BYTES];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else slash[slash == dir] = '\0'; /* keep "/" itself */
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) fsync(fd), close(fd);
}

/* A temporary file in path's directory, renamed over path: readers see the
 * old file or the new one, never a partial one. */
static int write_atomic(const char *path, const char *text, char *err, size_t nerr) {
  char tmp[PATH_BYTES];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
    return say(err, nerr, "%s: path too long", path), -1;
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) return say(err, nerr, "%s: cannot create: %s", tmp, strerror(errno)), -1;
  const char *what = NULL;
  if (fchmod(fd, 0644) < 0) what = "cannot set its mode";
  else if (write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0) what = "cannot write";
  else if (fsync(fd) < 0) what = "cannot fsync";
  int e = errno;
  if (close(fd) < 0 && !what) what = "cannot close", e = errno;
  if (!what && rename(tmp, path) < 0) what = "cannot rename over the DB", e = errno;
  if (what) {
    unlink(tmp);
    return say(err, nerr, "%s: %s: %s", tmp, what, strerror(e)), -1;
  }
  sync_dir(path);
  return 0;
}

/* true when the file at path, tuned on have, is not for want (both named):
 * one DB holds one machine's timings; why says so */
static bool other_cpu(const char *path, const char *have, const char *want, char *why, size_t nwhy) {
  if (!have[0] || !want[0] || !strcmp(have, want)) return false;
  say(why, nwhy, "%s holds timings tuned on \"%s\", not on \"%s\"; give another DB, or remove that one", path, have,
      want);
  return true;
}

/* what a save would merge into: 0 with *old loaded (empty when there is no
 * file), -2 when the file is not a DB this version reads or holds another
 * CPU's timings (err says which; never overwritten), -1 out of memory */
static int load_target(const char *path, const char *cpu, ug_tunedb *old, char *err, size_t nerr) {
  char why[1024];
  int rc = ug_tunedb_load(path, old, why, sizeof why);
  if (rc < 0) return say(err, nerr, "%s: out of memory", path), -1;
  if (rc == 1)
    return say(err, nerr, "%s is not a tuning DB this ubgen can read, so it is not overwritten (%s); give another "
               "--db, or move that file away", path, why), -2;
  if (other_cpu(path, old->cpu, cpu, err, nerr)) {
    ug_tunedb_free(old);
    return -2;
  }
  return 0;
}

static void dir_of(const char *path, char *dir, size_t n) {
  snprintf(dir, n, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, n, ".");
  else slash[slash == dir] = '\0';
}

int ug_tunedb_check_target(const char *path, const char *cpu, char *err, size_t nerr) {
  say(err, nerr, "");
  char dir[PATH_BYTES], lock[PATH_BYTES];
  if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) return say(err, nerr, "%s: path too long", path), -2;
  dir_of(path, dir, sizeof dir);
  struct stat st;
  if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
    return say(err, nerr, "%s: the directory %s does not exist", path, dir), -2;
  if (access(dir, W_OK | X_OK) < 0)
    return say(err, nerr, "%s: cannot write in the directory %s: %s", path, dir, strerror(errno)), -2;
  int lfd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (lfd >= 0) {
    bool regular = fstat(lfd, &st) == 0 && S_ISREG(st.st_mode);
    close(lfd);
    if (!regular) return say(err, nerr, "%s: not a regular file, so it cannot be the DB's lock", lock), -2;
  } else if (errno != ENOENT) {
    return say(err, nerr, "%s: cannot open the DB's lock: %s", lock, errno == ELOOP ? "a symbolic link" : strerror(errno)),
           -2;
  }
  ug_tunedb old;
  int rc = load_target(path, cpu, &old, err, nerr);
  if (rc == 0) ug_tunedb_free(&old);
  return rc;
}

/* merged := the file's entries, then db's (db wins); the file's cpu unless db
 * names one, and then they must agree */
static int merge_and_write(const char *path, const ug_tunedb *db, char *err, size_t nerr) {
  ug_tunedb merged;
  int rc = load_target(path, db->cpu, &merged, err, nerr);
  if (rc < 0) return rc;
  if (db->cpu[0]) snprintf(merged.cpu, sizeof merged.cpu, "%.*s", (int)sizeof db->cpu - 1, db->cpu);
  for (int i = 0; rc == 0 && i < db->n; i++)
    if (ug_tunedb_put(&merged, &db->e[i]) < 0)
      rc = -1, say(err, nerr, "%s: out of memory or entry %d has an invalid shape", path, i);
  char *text = rc == 0 ? dump_db(path, &merged, err, nerr) : NULL;
  if (text) rc = write_atomic(path, text, err, nerr);
  else rc = -1;
  free(text);
  ug_tunedb_free(&merged);
  return rc;
}

/* The lock file is never removed: unlinking it would let a tuner lock a file
 * that another has just replaced. Re-reading under the lock is what keeps a
 * concurrent tuner's entries. */
int ug_tunedb_merge_save(const char *path, const ug_tunedb *db, char *err, size_t nerr) {
  say(err, nerr, "");
  char lock[PATH_BYTES];
  if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
    return say(err, nerr, "%s: path too long", path), -1;
  int lfd = open(lock, O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (lfd < 0) return say(err, nerr, "%s: cannot open: %s", lock, strerror(errno)), -1;
  int rc;
  while ((rc = flock(lfd, LOCK_EX)) < 0 && errno == EINTR) continue;
  if (rc < 0) say(err, nerr, "%s: cannot lock: %s", lock, strerror(errno));
  else rc = merge_and_write(path, db, err, nerr);
  flock(lfd, LOCK_UN);
  close(lfd);
  return rc;
}

int ug_tunedb_default_path(const char *db, const char *cache_dir, char *out, size_t n) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (db && *db) snprintf(out, n, "%s", db);
  else if (cache_dir && *cache_dir) snprintf(out, n, "%s/tuning.json", cache_dir);
  else if (xdg && *xdg) snprintf(out, n, "%s/ubgen/tuning.json", xdg);
  else if (home && *home) snprintf(out, n, "%s/.cache/ubgen/tuning.json", home);
  else return -1;
  return 0;
}

void ug_tune_cpu_name(char *out, size_t n) {
  char line[512];
  snprintf(out, n, "%s", "");
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) || !colon) continue;
    colon += 1 + (colon[1] == ' ');
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, n, "%s", colon);
    break;
  }
  fclose(f);
}
