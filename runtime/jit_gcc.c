/* The gcc backend: a rendered kernel compiled by gcc into a shared object
 * in a disk cache, then dlopen'ed.
 *
 *   <cache>/<key>.so   one entry: the object, then a 32-byte trailer that
 *                      holds a hash of the object and the key
 *
 * <key> hashes the source, the compiler's version, the flags and what
 * `-march=native` resolves to on this machine (so a cache shared by
 * different CPUs never hands one machine code for another's instructions).
 * An entry is one file, written under a temporary name and renamed: a
 * reader sees a whole entry or none, whichever of several processes racing
 * on the key renamed last. A reader that finds no entry, or one whose
 * trailer does not match its bytes (truncated, corrupt), builds again.
 *
 * What is loaded is what was checked: the entry is read once, checked in
 * memory, and its object written to a private file of this process (0600,
 * a name no other load ever had) that is dlopen'ed and unlinked at once.
 *
 * The cache directory must be owned by this user and not writable by group
 * or others (else anyone could plant code we would load): otherwise it is not
 * used, a warning says why, and the caller falls back to tcc. Files are
 * opened without following symlinks and checked the same way. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../gen/fsutil.h"
#include "internal.h"

#ifndef UBGEN_JIT_MARCH
#define UBGEN_JIT_MARCH "native"
#endif

extern char **environ;

/* the flags every kernel is compiled with (the Makefile's KFLAGS, with its
 * KGCC for gcc; -w keeps a clang JIT quiet about the --param) */
static const char *const kflags[] = {"-std=c11", "-O3", "--param", "vect-epilogues-nomask=0", "-march=" UBGEN_JIT_MARCH,
                                     "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared", "-w", NULL};

static char compiler_version[600];
/* the compiler's own line for -march=UBGEN_JIT_MARCH: for "native", the
 * CPU and every -m flag it resolves to here */
static char compiler_target[8192];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static const char *compiler(void) {
  const char *cc = getenv("UBGEN_JIT_CC");
  return cc && *cc ? cc : "gcc";
}

/* runs argv, stdout and stderr into out (NUL-terminated, truncated);
 * returns the exit status, or -1 when it could not run */
static int run(char *const argv[], char *out, size_t n) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  size_t len = 0;
  if (rc == 0) {
    char buf[512];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR)) {
      if (got < 0) continue;
      size_t k = (size_t)got < n - 1 - len ? (size_t)got : n - 1 - len;
      memcpy(out + len, buf, k);
      len += k;
    }
  }
  close(fds[0]);
  out[len] = '\0';
  if (rc != 0) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* gcc -### prints the commands it would run: the cc1 line carries the
 * resolved -march and -m flags (clang's "-cc1" line likewise); without one
 * the whole answer is the key */
static void find_target(void) {
  char *const argv[] = {(char *)compiler(), "-march=" UBGEN_JIT_MARCH, "-###", "-E", "-x", "c", "/dev/null", NULL};
  static char out[sizeof compiler_target];
  if (run(argv, out, sizeof out) != 0) return;
  const char *line = out, *cc1 = strstr(out, "cc1");
  size_t len = strlen(out);
  if (cc1) {
    while (cc1 > out && cc1[-1] != '\n') cc1--;
    line = cc1;
    len = strcspn(line, "\n");
  }
  snprintf(compiler_target, sizeof compiler_target, "%.*s", (int)len, line);
}

static void find_version(void) {
  char *const argv[] = {(char *)compiler(), "-dumpfullversion", "-dumpmachine", NULL};
  char out[200];
  if (run(argv, out, sizeof out) == 0) {
    for (char *c = out; *c; c++)
      if (*c == '\n') *c = ' ';
    snprintf(compiler_version, sizeof compiler_version, "%s %s", compiler(), out);
    find_target();
  }
}

/* the cache directory, created 0700 when missing; NULL (and why) when it
 * is not safe to use */
static const char *cache_dir(ubg_ctx *ctx, char *buf, size_t n, char *why, size_t whyn) {
  const char *dir = ctx->cache_dir;
  if (!dir || !*dir) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, n, "%s/ubgen", xdg);
    else if (home && *home) snprintf(buf, n, "%s/.cache/ubgen", home);
    else {
      snprintf(why, whyn, "no cache directory: neither UBGEN_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
      return NULL;
    }
    dir = buf;
  }
  ug_diag d;
  if (ug_mkdir_private(dir, &d) < 0) {
    snprintf(why, whyn, "cannot create the cache directory %s: %.300s", dir, d.text);
    return NULL;
  }
  struct stat st;
  if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
    snprintf(why, whyn, "the cache directory %s is not a directory (or is a symlink)", dir);
    return NULL;
  }
  if (st.st_uid != geteuid()) {
    snprintf(why, whyn, "the cache directory %s belongs to uid %u, not to this user (%u)", dir, (unsigned)st.st_uid,
             (unsigned)geteuid());
    return NULL;
  }
  if (st.st_mode & 022) {
    snprintf(why, whyn, "the cache directory %s is writable by %s (mode %03o); it must be writable by its owner only",
             dir, (st.st_mode & 002) ? "everyone" : "its group", (unsigned)(st.st_mode & 0777));
    return NULL;
  }
  return dir;
}

static uint64_t fnv1a_more(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

static uint64_t key_hash(const char *src, const char *flags) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const char *parts[] = {src, compiler_version, flags, compiler_target};
  for (int i = 0; i < 4; i++) h = fnv1a_more(h, parts[i], strlen(parts[i]) + 1); /* the NUL separates them */
  return h;
}

/* an entry: the object, then TRAILER_BYTES of "\nubgen-entry-v1 " and the
 * hash of the object and the entry's file name in 16 hex digits */
enum { TRAILER_BYTES = 32, MAX_ENTRY_BYTES = 64 << 20 };
static const char trailer_tag[] = "\nubgen-entry-v1 ";

static void make_trailer(const char *obj, size_t n, const char *base_name, char out[TRAILER_BYTES + 1]) {
  uint64_t h = fnv1a_more(0xcbf29ce484222325ULL, obj, n);
  h = fnv1a_more(h, base_name, strlen(base_name));
  snprintf(out, TRAILER_BYTES + 1, "%s%016llx", trailer_tag, (unsigned long long)h);
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* the bytes of a file we own, not following a symlink; NULL otherwise */
static char *read_own(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
      st.st_size < MAX_ENTRY_BYTES) {
    buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
      ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        break;
      }
      got += (size_t)r;
    }
    if (buf && got != (size_t)st.st_size) {
      free(buf);
      buf = NULL;
    }
    if (buf) *len = got;
  }
  close(fd);
  return buf;
}

static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Loads the object obj[0, n) through a private file of this process: a
 * name never used before in it (pid and a counter), so dlopen cannot hand
 * back another object it loaded under that name; unlinked once loaded. */
static int load_object(const char *dir, const char *obj, size_t n, const char *name, void **handle, ubg_kernel_fn *fn,
                       char *why, size_t nwhy) {
  static _Atomic unsigned long loads;
  char path[4300];
  snprintf(path, sizeof path, "%s/load-%ld-%lu.so", dir, (long)getpid(), (unsigned long)++loads);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(why, nwhy, "cannot create %s: %s", path, strerror(errno));
    return -1;
  }
  int bad = write_all(fd, obj, n);
  int e = errno;
  if (close(fd) < 0 && !bad) bad = -1, e = errno;
  if (bad) {
    unlink(path);
    snprintf(why, nwhy, "cannot write %s: %s", path, strerror(e));
    return -1;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);
  if (!h) {
    const char *err = dlerror();
    snprintf(why, nwhy, "dlopen: %s", err ? err : "failed");
    return -1;
  }
  void *sym = dlsym(h, name);
  if (!sym) {
    dlclose(h);
    snprintf(why, nwhy, "it has no function %s", name);
    return -1;
  }
  *handle = h;
  *fn = (ubg_kernel_fn)sym;
  return 0;
}

/* loads the entry at path if its trailer vouches for it; 0 on success */
static int load_entry(const char *dir, const char *path, const char *name, void **handle, ubg_kernel_fn *fn) {
  size_t n;
  char *bytes = read_own(path, &n), want[TRAILER_BYTES + 1], why[600];
  int ok = bytes && n > TRAILER_BYTES;
  if (ok) {
    make_trailer(bytes, n - TRAILER_BYTES, base_name(path), want);
    ok = memcmp(bytes + n - TRAILER_BYTES, want, TRAILER_BYTES) == 0;
  }
  ok = ok && load_object(dir, bytes, n - TRAILER_BYTES, name, handle, fn, why, sizeof why) == 0;
  free(bytes);
  return ok ? 0 : -1;
}

static int write_temp(const char *dir, const char *suffix, const void *data, size_t n, char *path, size_t pn) {
  snprintf(path, pn, "%s/tmp.XXXXXX%s", dir, suffix);
  int fd = mkostemps(path, (int)strlen(suffix), O_CLOEXEC);
  if (fd < 0) return -1;
  if (write_all(fd, data, n) < 0 || fchmod(fd, 0600) < 0) {
    close(fd);
    unlink(path);
    return -1;
  }
  if (close(fd) < 0) {
    unlink(path);
    return -1;
  }
  return 0;
}

ubg_status rt_gcc_get(ubg_ctx *ctx, const char *name, const char *src, int compile, ubg_kernel_fn *fn, void **handle,
                      bool *usable) {
  *fn = NULL;
  *handle = NULL;
  *usable = false;
  pthread_once(&version_once, find_version);
  if (!compiler_version[0]) {
    rt_log("warning: the gcc backend is off: `%s -dumpfullversion` did not run", compiler());
    return UBG_ENOTFOUND;
  }
  char buf[4096], why[4700];
  const char *dir = cache_dir(ctx, buf, sizeof buf, why, sizeof why);
  if (!dir) {
    rt_log("warning: the gcc backend is off: %s", why);
    return UBG_ENOTFOUND;
  }
  *usable = true;
  char flags[512] = "";
  for (int i = 0; kflags[i]; i++) {
    strncat(flags, kflags[i], sizeof flags - strlen(flags) - 2);
    strncat(flags, " ", sizeof flags - strlen(flags) - 1);
  }
  char entry[4200];
  snprintf(entry, sizeof entry, "%s/%016llx%016llx.so", dir, (unsigned long long)key_hash(src, flags),
           (unsigned long long)ug_fnv1a(name, strlen(name)));
  if (load_entry(dir, entry, name, handle, fn) == 0) return UBG_OK;
  if (!compile) return UBG_ENOTFOUND;

  /* build: source and object under temporary names */
  char csrc[4200], tmp_so[4200], tmp_entry[4200];
  if (write_temp(dir, ".c", src, strlen(src), csrc, sizeof csrc) < 0)
    return rt_fail(ctx, UBG_EIO, "gcc backend: cannot write a source file in %s: %s", dir, strerror(errno));
  snprintf(tmp_so, sizeof tmp_so, "%.*s.so", (int)(strlen(csrc) - 2), csrc);
  char *argv[32];
  int k = 0;
  argv[k++] = (char *)compiler();
  for (int i = 0; kflags[i]; i++) argv[k++] = (char *)kflags[i];
  argv[k++] = "-o";
  argv[k++] = tmp_so;
  argv[k++] = csrc;
  argv[k++] = "-lm";
  argv[k] = NULL;
  char out[4096];
  int rc = run(argv, out, sizeof out);
  unlink(csrc);
  if (rc != 0) {
    unlink(tmp_so);
    return rt_fail(ctx, UBG_ECOMPILE, "gcc could not compile %s (exit %d): %.1500s", name, rc, out);
  }
  size_t n;
  char *obj = read_own(tmp_so, &n);
  unlink(tmp_so);
  char *whole = obj ? malloc(n + TRAILER_BYTES + 1) : NULL;
  if (!whole) {
    free(obj);
    return rt_fail(ctx, UBG_EIO, "gcc backend: cannot read back %s", tmp_so);
  }
  /* the entry, object and trailer, into place in one rename */
  memcpy(whole, obj, n);
  make_trailer(obj, n, base_name(entry), whole + n);
  free(obj);
  if (write_temp(dir, ".entry", whole, n + TRAILER_BYTES, tmp_entry, sizeof tmp_entry) < 0 ||
      rename(tmp_entry, entry) < 0) {
    int e = errno;
    unlink(tmp_entry);
    free(whole);
    return rt_fail(ctx, UBG_EIO, "gcc backend: cannot store %s in %s: %s", name, dir, strerror(e));
  }
  /* the object this process built, whoever's entry is in place now */
  rc = load_object(dir, whole, n, name, handle, fn, why, sizeof why);
  free(whole);
  if (rc < 0) return rt_fail(ctx, UBG_ECOMPILE, "gcc backend: %s was built but does not load: %s", name, why);
  return UBG_OK;
}

void rt_gcc_free(void *handle) {
  if (handle) dlclose(handle);
}
