#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* O_NONBLOCK: a FIFO (or a device) at the path cannot hang the open
 * before fstat refuses it; for a regular file the flag changes nothing */
static int open_regular(const char *path, size_t max_bytes, ug_diag *d) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    ug_fail(d, path, (ug_loc){0, 0}, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    ug_fail(d, path, (ug_loc){0, 0}, "not a regular file");
    return -1;
  }
  if ((size_t)st.st_size > max_bytes) {
    close(fd);
    ug_fail(d, path, (ug_loc){0, 0}, "larger than %zu bytes", max_bytes);
    return -1;
  }
  return fd;
}

/* the whole of fd (closed here), NUL-terminated */
static char *read_all(int fd, const char *path, size_t max_bytes, size_t *len, ug_diag *d) {
  struct stat st;
  size_t cap = (fstat(fd, &st) == 0 ? (size_t)st.st_size : 0) + 1, n = 0;
  char *buf = malloc(cap);
  if (!buf) {
    close(fd);
    ug_fail(d, path, (ug_loc){0, 0}, "out of memory");
    return NULL;
  }
  for (;;) {
    if (n + 1 == cap) {
      if (cap > max_bytes) {
        free(buf);
        close(fd);
        ug_fail(d, path, (ug_loc){0, 0}, "larger than %zu bytes", max_bytes);
        return NULL;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        close(fd);
        ug_fail(d, path, (ug_loc){0, 0}, "out of memory");
        return NULL;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t got = read(fd, buf + n, cap - 1 - n);
    if (got < 0) {
      if (errno == EINTR) continue;
      free(buf);
      close(fd);
      ug_fail(d, path, (ug_loc){0, 0}, "read error: %s", strerror(errno));
      return NULL;
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  close(fd);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

char *ug_read_file(const char *path, size_t max_bytes, size_t *len, ug_diag *d) {
  int fd = open_regular(path, max_bytes, d);
  return fd < 0 ? NULL : read_all(fd, path, max_bytes, len, d);
}

/* 0 when the file open at fd lies inside the directory that path names it
 * in (its dirname), both resolved; what was opened is asked of /proc, so a
 * link swapped after the open cannot fool the check */
static int check_within(int fd, const char *path, ug_diag *d) {
  char dir[4096], link[64];
  if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return ug_fail(d, path, (ug_loc){0, 0}, "path too long");
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else slash[slash == dir] = '\0'; /* keep "/" itself */
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char *real_dir = realpath(dir, NULL), *real_file = realpath(link, NULL);
  if (!real_file) real_file = realpath(path, NULL);
  int rc = 0;
  if (!real_dir || !real_file) {
    rc = ug_fail(d, path, (ug_loc){0, 0}, "cannot resolve the path: %s", strerror(errno));
  } else {
    size_t n = strlen(real_dir);
    bool inside = strncmp(real_file, real_dir, n) == 0 && (real_file[n] == '/' || (n == 1 && real_dir[0] == '/'));
    if (!inside)
      rc = ug_fail(d, path, (ug_loc){0, 0},
                   "resolves to %s, outside its directory %s (a symbolic link?): specs and templates are read only "
                   "from the directory that holds them",
                   real_file, real_dir);
  }
  free(real_dir);
  free(real_file);
  return rc;
}

char *ug_read_file_within(const char *path, size_t max_bytes, size_t *len, ug_diag *d) {
  int fd = open_regular(path, max_bytes, d);
  if (fd < 0) return NULL;
  if (check_within(fd, path, d) < 0) {
    close(fd);
    return NULL;
  }
  return read_all(fd, path, max_bytes, len, d);
}

int ug_write_atomic(const char *path, const void *data, size_t len, ug_diag *d) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
    return ug_fail(d, path, (ug_loc){0, 0}, "path too long");
  int fd = mkstemp(tmp);
  if (fd < 0) return ug_fail(d, path, (ug_loc){0, 0}, "cannot create a temporary file: %s", strerror(errno));
  mode_t mask = umask(0);
  umask(mask);
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      unlink(tmp);
      return ug_fail(d, path, (ug_loc){0, 0}, "write error: %s", strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (fchmod(fd, 0644 & ~mask) < 0 || close(fd) < 0) {
    int e = errno;
    unlink(tmp);
    return ug_fail(d, path, (ug_loc){0, 0}, "cannot finish the temporary file: %s", strerror(e));
  }
  if (rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return ug_fail(d, path, (ug_loc){0, 0}, "cannot rename into place: %s", strerror(e));
  }
  return 0;
}

bool ug_file_equals(const char *path, const void *data, size_t len) {
  size_t n;
  char *old = ug_read_file(path, len + 1, &n, NULL);
  bool same = old && n == len && memcmp(old, data, len) == 0;
  free(old);
  return same;
}

int ug_mkdirs(const char *path, ug_diag *d) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return ug_fail(d, path, (ug_loc){0, 0}, "path too long");
  for (char *c = buf + 1;; c++) {
    if (*c == '/' || *c == '\0') {
      char saved = *c;
      *c = '\0';
      if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return ug_fail(d, buf, (ug_loc){0, 0}, "cannot create directory: %s", strerror(errno));
      *c = saved;
      if (!saved) break;
    }
  }
  if (!ug_is_dir(path)) return ug_fail(d, path, (ug_loc){0, 0}, "exists and is not a directory");
  return 0;
}

int ug_mkdir_private(const char *path, ug_diag *d) {
  if (mkdir(path, 0700) == 0 || errno == EEXIST) return 0;
  if (ug_mkdirs(path, d) < 0) return -1;
  chmod(path, 0700);
  return 0;
}

bool ug_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool ug_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
