#include "ubplan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckd.h"

int ug_plan(const ug_pass *p, const ug_point *pt, ug_variant *v, ug_diag *d) {
  /* UB counts use only variant slots (the loader enforces it) */
  int64_t *e = calloc((size_t)p->nsyms + 1, sizeof *e);
  if (!e) return ug_fail(d, p->kernel->path, p->at, "out of memory");
  ug_point_env(p, pt, e);
  int64_t off = 0;
  int rc = 0;
  for (int i = 0; i < p->nub; i++) {
    const ug_buffer *b = &p->ub[i];
    int64_t count, bytes, padded;
    ug_expr_err err;
    if (ug_expr_eval(b->count, e, &count, &err) < 0) {
      rc = ug_fail(d, p->kernel->path, b->at, "UB buffer \"%s\" of %s: %s", b->name, v->name, err.msg);
      break;
    }
    if (count < 0) {
      rc = ug_fail(d, p->kernel->path, b->at, "UB buffer \"%s\" of %s has %lld elements", b->name, v->name, (long long)count);
      break;
    }
    int64_t esize = (int64_t)ug_elem_bytes(b->elem, pt->dtype);
    if (ug_ckd_mul(&bytes, count, esize) || bytes > ((int64_t)1 << 50)) {
      rc = ug_fail(d, p->kernel->path, b->at, "UB buffer \"%s\" of %s is too large (%lld elements)", b->name, v->name,
                   (long long)count);
      break;
    }
    padded = (bytes + UG_UB_ALIGN - 1) / UG_UB_ALIGN * UG_UB_ALIGN;
    v->ub[i].offset = off;
    v->ub[i].count = count;
    v->ub[i].bytes = bytes;
    off += padded;
  }
  v->footprint = off;
  free(e);
  return rc;
}

double ug_budget_margin(const ug_budget *b, const ug_kernel *k) {
  if (b->margin > 0) return b->margin;
  if (k && k->safety_margin > 0) return k->safety_margin;
  return UG_DEFAULT_MARGIN;
}

int64_t ug_budget_usable(const ug_budget *b, const ug_kernel *k) {
  return (int64_t)floor((double)b->ub_bytes * ug_budget_margin(b, k));
}

bool ug_fits(const ug_variant *v, const ug_budget *b) {
  return v->footprint <= ug_budget_usable(b, v->pass->kernel);
}

static int64_t cache_size(int level) {
  /* sysfs first: glibc's sysconf answers 0 on some virtual machines */
  for (int idx = 0; idx < 8; idx++) {
    char path[128], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
    FILE *f = fopen(path, "r");
    if (!f) break;
    int lvl = 0;
    if (fscanf(f, "%d", &lvl) != 1) lvl = -1;
    fclose(f);
    if (lvl != level) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
    f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
    fclose(f);
    if (strncmp(buf, "Instruction", 11) == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
    f = fopen(path, "r");
    if (!f) continue;
    long kb = 0;
    char unit = 'K';
    int got = fscanf(f, "%ld%c", &kb, &unit);
    fclose(f);
    if (got >= 1 && kb > 0) return unit == 'M' ? (int64_t)kb << 20 : (int64_t)kb << 10;
  }
  long v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : _SC_LEVEL2_CACHE_SIZE);
  return v > 0 ? v : -1;
}

int ug_parse_size(const char *s, int64_t *out, char *err, size_t errlen) {
  if (!s || !*s) {
    snprintf(err, errlen, "empty size");
    return -1;
  }
  if (strcmp(s, "l1") == 0 || strcmp(s, "l2") == 0) {
    int64_t v = cache_size(s[1] - '0');
    if (v <= 0) {
      snprintf(err, errlen, "cannot read this CPU's %s cache size", s);
      return -1;
    }
    *out = v;
    return 0;
  }
  const char *c = s;
  uint64_t v = 0;
  if (!isdigit((unsigned char)*c)) goto bad;
  while (isdigit((unsigned char)*c)) {
    if (v > (UINT64_MAX - 9) / 10) goto big;
    v = v * 10 + (uint64_t)(*c++ - '0');
  }
  static const struct { const char *suffix; int shift; uint64_t mul; } units[] = {
      {"", 0, 1},        {"B", 0, 1},        {"KiB", 10, 1},   {"K", 10, 1},     {"k", 10, 1}, {"KB", 0, 1000},
      {"kB", 0, 1000},   {"MiB", 20, 1},     {"M", 20, 1},     {"MB", 0, 1000000}, {"GiB", 30, 1}, {"G", 30, 1},
  };
  for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
    if (strcmp(c, units[k].suffix) != 0) continue;
    if (v > (uint64_t)INT64_MAX / units[k].mul || (v * units[k].mul) > ((uint64_t)INT64_MAX >> units[k].shift)) goto big;
    v = (v * units[k].mul) << units[k].shift;
    if (v == 0) {
      snprintf(err, errlen, "size \"%s\" is zero", s);
      return -1;
    }
    if (v > ((uint64_t)1 << 40)) goto big;
    *out = (int64_t)v;
    return 0;
  }
bad:
  snprintf(err, errlen, "size \"%s\" is not a number of bytes with an optional KiB/MiB/GiB/KB/MB suffix, nor l1 or l2", s);
  return -1;
big:
  snprintf(err, errlen, "size \"%s\" is larger than 1 TiB", s);
  return -1;
}

int ug_check_ub(int64_t ub, const char *what, char *err, size_t errlen) {
  if (ub >= UG_MIN_UB_BYTES && ub <= UG_MAX_UB_BYTES) return 0;
  snprintf(err, errlen, "%s = %lld bytes is outside [%lld, %lld]", what, (long long)ub, (long long)UG_MIN_UB_BYTES,
           (long long)UG_MAX_UB_BYTES);
  return -1;
}

int ug_ub_from_env(int64_t *out, bool *ignored, char *err, size_t errlen) {
  const char *env = getenv("UBGEN_UB_BYTES");
  const char *ascend = getenv("ASCEND_UB_CAPACITY_BITS");
  *ignored = false;
  *out = UG_DEFAULT_UB_BYTES;
  if (env && *env) {
    char why[256];
    if (ug_parse_size(env, out, why, sizeof why) < 0) {
      snprintf(err, errlen, "UBGEN_UB_BYTES: %s", why);
      return -1;
    }
    return ug_check_ub(*out, "UBGEN_UB_BYTES", err, errlen);
  }
  if (ascend && *ascend) {
    char *end;
    errno = 0;
    long long bits = strtoll(ascend, &end, 10);
    if (!errno && !*end && bits / 8 >= UG_MIN_UB_BYTES && bits / 8 <= UG_MAX_UB_BYTES) *out = bits / 8;
    else *ignored = true;
  }
  return 0;
}
