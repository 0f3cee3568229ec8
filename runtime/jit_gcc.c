/* The gcc backend: a rendered kernel compiled by gcc into a shared object
 * in a disk cache, then dlopen'ed.
 *
 *   <cache>/<key>.so    the object; <key> hashes the source, the compiler's
 *   <cache>/<key>.sum   version and the flags; .sum holds the hash of .so
 *
 * Both are written under temporary names and renamed, .so first: a reader
 * that finds no .sum, or a .sum that does not match the bytes of .so
 * (truncated, corrupt, or from another build racing on the same key), builds
 * again. Processes racing on one key each build and rename; the renames are
 * atomic, so every reader sees whole files.
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

/* the flags every kernel is compiled with (the Makefile's KFLAGS) */
static const char *const kflags[] = {"-std=c11", "-O3", "-march=" UBGEN_JIT_MARCH, "-ffp-contract=off",
                                     "-fno-math-errno", "-fPIC", "-shared", "-w", NULL};

static char compiler_version[600];
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

static void find_version(void) {
  char *const argv[] = {(char *)compiler(), "-dumpfullversion", "-dumpmachine", NULL};
  char out[200];
  if (run(argv, out, sizeof out) == 0) {
    for (char *c = out; *c; c++)
      if (*c == '\n') *c = ' ';
    snprintf(compiler_version, sizeof compiler_version, "%s %s", compiler(), out);
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
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    /* a missing parent: make it (mkdir -p, 0700 for the last level) */
    ug_diag d;
    if (ug_mkdirs(dir, &d) < 0) {
      snprintf(why, whyn, "cannot create the cache directory %s: %.300s", dir, d.text);
      return NULL;
    }
    chmod(dir, 0700);
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

static uint64_t hash2(const void *a, size_t na, const char *b, const char *c) {
  uint64_t h = ug_fnv1a(a, na);
  h ^= ug_fnv1a(b, strlen(b)) * 31;
  h ^= ug_fnv1a(c, strlen(c)) * 131;
  return h;
}

/* the bytes of a file we own, not following a symlink; NULL otherwise */
static char *read_own(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
      st.st_size < (64 << 20)) {
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

/* loads <base>.so if <base>.sum vouches for it; 0 on success */
static int load(const char *base, const char *name, void **handle, ubg_kernel_fn *fn) {
  char so[4300], sum[4300];
  snprintf(so, sizeof so, "%s.so", base);
  snprintf(sum, sizeof sum, "%s.sum", base);
  size_t n_so, n_sum;
  char *bytes = read_own(so, &n_so);
  char *want = read_own(sum, &n_sum);
  int ok = bytes && want && n_sum >= 16;
  if (ok) {
    char got[32];
    snprintf(got, sizeof got, "%016llx", (unsigned long long)ug_fnv1a(bytes, n_so));
    ok = memcmp(got, want, 16) == 0;
  }
  free(bytes);
  free(want);
  if (!ok) return -1;
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  void *sym = dlsym(h, name);
  if (!sym) {
    dlclose(h);
    return -1;
  }
  *handle = h;
  *fn = (ubg_kernel_fn)sym;
  return 0;
}

static int write_temp(const char *dir, const char *suffix, const void *data, size_t n, char *path, size_t pn) {
  snprintf(path, pn, "%s/tmp.XXXXXX%s", dir, suffix);
  int fd = mkstemps(path, (int)strlen(suffix));
  if (fd < 0) return -1;
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      close(fd);
      unlink(path);
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  if (fchmod(fd, 0600) < 0 || close(fd) < 0) {
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
  char base[4200];
  snprintf(base, sizeof base, "%s/%016llx%016llx", dir, (unsigned long long)hash2(src, strlen(src), compiler_version, flags),
           (unsigned long long)ug_fnv1a(name, strlen(name)));
  if (load(base, name, handle, fn) == 0) return UBG_OK;
  if (!compile) return UBG_ENOTFOUND;

  /* build: source and object under temporary names, then rename */
  char csrc[4200], tmp_so[4200], tmp_sum[4200];
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
  char *bytes = read_own(tmp_so, &n);
  if (!bytes) {
    unlink(tmp_so);
    return rt_fail(ctx, UBG_EIO, "gcc backend: cannot read back %s", tmp_so);
  }
  char sum[32];
  snprintf(sum, sizeof sum, "%016llx\n", (unsigned long long)ug_fnv1a(bytes, n));
  free(bytes);
  char final_so[4300], final_sum[4300];
  snprintf(final_so, sizeof final_so, "%s.so", base);
  snprintf(final_sum, sizeof final_sum, "%s.sum", base);
  if (write_temp(dir, ".sum", sum, strlen(sum), tmp_sum, sizeof tmp_sum) < 0 || rename(tmp_so, final_so) < 0 ||
      rename(tmp_sum, final_sum) < 0) {
    int e = errno;
    unlink(tmp_so);
    unlink(tmp_sum);
    return rt_fail(ctx, UBG_EIO, "gcc backend: cannot store %s in %s: %s", name, dir, strerror(e));
  }
  if (load(base, name, handle, fn) < 0)
    return rt_fail(ctx, UBG_ECOMPILE, "gcc backend: %s was built but does not load: %s", name, dlerror());
  return UBG_OK;
}

void rt_gcc_free(void *handle) {
  if (handle) dlclose(handle);
}
