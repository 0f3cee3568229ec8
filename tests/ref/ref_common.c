#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ref.h"

static const ref_entry *entries[64];
static int nentries;

void ref_register(const ref_entry *e) {
  if (nentries < 64) entries[nentries++] = e;
}

const ref_entry *ref_find(const char *kernel, const char *pass) {
  for (int i = 0; i < nentries; i++)
    if (!strcmp(entries[i]->kernel, kernel) && !strcmp(entries[i]->pass, pass)) return entries[i];
  return NULL;
}

size_t ref_dtype_bytes(int dtype) { return dtype == REF_F32 ? 4 : 2; }

double ref_round(double x, int dtype) {
  int mant = dtype == REF_F32 ? 23 : dtype == REF_F16 ? 10 : 7;
  int min_exp = dtype == REF_F16 ? -14 : -126;
  double max = dtype == REF_F32 ? 3.4028234663852886e38 : dtype == REF_F16 ? 65504.0 : 3.3895313892515355e38;
  if (isnan(x) || isinf(x) || x == 0) return x;
  int e;
  frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
  int exp = e - 1;
  if (exp < min_exp) exp = min_exp; /* subnormals: a fixed quantum */
  double q = ldexp(1.0, exp - mant);
  double r = nearbyint(x / q) * q;  /* x / q is exact: q is a power of two */
  if (fabs(r) > max) return copysign(INFINITY, x);
  return r;
}

double ref_load(const void *p, int64_t i, int dtype) {
  if (dtype == REF_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  if (dtype == REF_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, -24);
  else v = ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

void ref_store(void *p, int64_t i, int dtype, double v) {
  double r = ref_round(v, dtype);
  if (dtype == REF_F32) {
    ((float *)p)[i] = (float)r;
    return;
  }
  uint16_t h;
  if (dtype == REF_BF16) {
    float f = (float)r; /* exact: r has bf16 precision */
    uint32_t u;
    memcpy(&u, &f, 4);
    h = isnan(r) ? 0x7fc0 : (uint16_t)(u >> 16);
  } else {
    uint16_t sign = signbit(r) ? 0x8000 : 0;
    double a = fabs(r);
    if (isnan(r)) h = 0x7e00;
    else if (isinf(a)) h = sign | 0x7c00;
    else if (a < ldexp(1, -14)) h = sign | (uint16_t)(a / ldexp(1, -24));
    else {
      int e;
      double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
      h = sign | (uint16_t)((e + 14) << 10) | (uint16_t)(m * 2048 - 1024);
    }
  }
  ((uint16_t *)p)[i] = h;
}

int64_t ref_compare(const void *got, int got_dtype, const double *want, int64_t n, double atol, double rtol,
                    double *worst_err) {
  int64_t worst = -1;
  double worst_excess = 0;
  if (worst_err) *worst_err = 0;
  for (int64_t i = 0; i < n; i++) {
    double g = ref_load(got, i, got_dtype), w = want[i];
    if (isnan(w) && isnan(g)) continue;
    if (isinf(w) && g == w) continue;
    double err = fabs(g - w);
    double excess = err - (atol + rtol * fabs(w));
    if (worst_err && err > *worst_err) *worst_err = err;
    if (!(excess <= 0) && (worst < 0 || excess > worst_excess || isnan(excess))) {
      worst = i;
      worst_excess = isnan(excess) ? INFINITY : excess;
    }
  }
  return worst;
}
