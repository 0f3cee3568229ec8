#include "specset.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"

#ifndef UBGEN_SOURCE_DIR
#define UBGEN_SOURCE_DIR "."
#endif

int ug_specset_add(ug_specset *s, ug_kernel *k, ug_diag *d) {
  if (ug_specset_find(s, k->name)) {
    ug_spec_free(k);
    return 0;
  }
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 8;
    ug_kernel **nk = realloc(s->k, (size_t)cap * sizeof *nk);
    if (!nk) {
      ug_spec_free(k);
      return ug_fail(d, NULL, (ug_loc){0, 0}, "out of memory");
    }
    s->k = nk;
    s->cap = cap;
  }
  s->k[s->n++] = k;
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int ug_specset_add_dir(ug_specset *s, const char *dir, ug_diag *d) {
  DIR *dp = opendir(dir);
  if (!dp) return ug_fail(d, dir, (ug_loc){0, 0}, "cannot open the spec directory");
  char **names = NULL;
  int n = 0, cap = 0, rc = 0;
  struct dirent *e;
  while ((e = readdir(dp))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, (size_t)cap * sizeof *nn);
      if (!nn) { rc = -1; break; }
      names = nn;
    }
    if (!(names[n] = strdup(e->d_name))) { rc = -1; break; }
    n++;
  }
  closedir(dp);
  if (rc < 0) ug_fail(d, dir, (ug_loc){0, 0}, "out of memory");
  if (n) qsort(names, (size_t)n, sizeof *names, cmp_str);
  const int before = s->n; /* kernels from earlier directories: these hide ours */
  for (int i = 0; i < n && rc == 0; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    bool skipped;
    ug_kernel *k = ug_spec_load_dir_file(path, &skipped, d);
    if (skipped) continue; /* another tool's JSON (a tuning DB) */
    if (!k) {
      rc = -1;
      break;
    }
    /* two specs of one kernel in one directory: which one is meant? */
    for (int j = before; j < s->n; j++)
      if (!strcmp(s->k[j]->name, k->name)) {
        rc = ug_fail(d, path, k->name_at, "kernel \"%s\" is also defined by %s, in the same directory", k->name,
                     s->k[j]->path);
        ug_spec_free(k);
        k = NULL;
        break;
      }
    if (k && ug_specset_add(s, k, d) < 0) rc = -1;
  }
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
}

int ug_specset_add_path(ug_specset *s, const char *path, ug_diag *d) {
  if (!path) return 0;
  char *copy = strdup(path);
  if (!copy) return ug_fail(d, NULL, (ug_loc){0, 0}, "out of memory");
  int rc = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ":", &save); tok && rc == 0; tok = strtok_r(NULL, ":", &save))
    if (*tok) rc = ug_specset_add_dir(s, tok, d);
  free(copy);
  return rc;
}

const ug_kernel *ug_specset_find(const ug_specset *s, const char *kernel) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->k[i]->name, kernel) == 0) return s->k[i];
  return NULL;
}

void ug_specset_free(ug_specset *s) {
  for (int i = 0; i < s->n; i++) ug_spec_free(s->k[i]);
  free(s->k);
  memset(s, 0, sizeof *s);
}

const char *ug_data_dir(const char *anchor, char *buf, size_t n) {
  const char *env = getenv("UBGEN_DATA_DIR");
  if (env && *env) {
    snprintf(buf, n, "%s", env);
    return buf;
  }
  if (anchor) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", anchor);
    char *slash = strrchr(dir, '/');
    if (slash) {
      *slash = '\0';
      snprintf(buf, n, "%s/../share/ubgen", dir);
      char probe[4200];
      snprintf(probe, sizeof probe, "%s/specs", buf);
      if (ug_is_dir(probe)) return buf;
    }
  }
  snprintf(buf, n, "%s", UBGEN_SOURCE_DIR);
  return buf;
}
