/* What a kernel's reference needs: the argument slots, the storage dtypes
 * and their exact conversions to and from double.
 *
 * A reference is a C file beside its spec (the spec's "reference" key) that
 * defines, for each pass P of kernel K,
 *
 *   UBGEN_REF(K, P) { ... }   i.e. void K_P_ref(const ref_slot *a, int dt, double *const *outs)
 *
 * It reads the same argument slots a kernel gets (spec order; tensors in
 * their storage dtype, dt one of REF_F32/F16/BF16 for the spec's type T)
 * and writes each output tensor i as double into outs[i] (NULL for an
 * input, or an omitted optional tensor). It rounds to the storage dtype
 * only where the kernel's semantics name a rounding; the final rounding of
 * an output is left to the comparison's tolerance.
 *
 * `ubgen check` and `ubgen tune` compile the file with tcc in memory,
 * freestanding (UBGEN_REF_FREESTANDING defined): this header then declares
 * the few C library functions a reference may call (those below) instead
 * of including the system's headers. The conversions are written from
 * frexp/ldexp, independent of the kernels' prelude. */
#ifndef UBGEN_REF_H
#define UBGEN_REF_H

#ifdef UBGEN_REF_FREESTANDING
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned char uint8_t;
typedef unsigned long size_t;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)
double sqrt(double), exp(double), log(double), tanh(double), erf(double), pow(double, double);
double fabs(double), floor(double), ceil(double), nearbyint(double), copysign(double, double);
double frexp(double, int *), ldexp(double, int), expm1(double), log1p(double);
void *malloc(size_t), *calloc(size_t, size_t), *memcpy(void *, const void *, size_t), *memset(void *, int, size_t);
void free(void *), abort(void);
#define INFINITY (1e308 * 10.0)
#define NAN (INFINITY - INFINITY)
#define isnan(x) ((x) != (x))
#define isinf(x) (!isnan(x) && isnan((x) - (x)))
#define signbit(x) (copysign(1.0, (double)(x)) < 0)
#else
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#endif

/* one argument: a tensor's address, an int, a float (as double) */
typedef union {
  void *p;
  int64_t i;
  double f;
} ref_slot;

enum { REF_F32 = 0, REF_F16 = 1, REF_BF16 = 2 };

#define UBGEN_REF(kernel, pass)                                                         \
  void kernel##_##pass##_ref(const ref_slot *a, int dt, double *const *outs);          \
  void kernel##_##pass##_ref(const ref_slot *a, int dt, double *const *outs)

static inline size_t ref_dtype_bytes(int dtype) { return dtype == REF_F32 ? 4 : 2; }

/* x rounded to the dtype's precision and range, round to nearest even */
static inline double ref_round(double x, int dtype) {
  int mant = dtype == REF_F32 ? 23 : dtype == REF_F16 ? 10 : 7;
  int min_exp = dtype == REF_F16 ? -14 : -126;
  double max = dtype == REF_F32 ? 3.4028234663852886e38 : dtype == REF_F16 ? 65504.0 : 3.3895313892515355e38;
  if (isnan(x) || isinf(x) || x == 0) return x;
  int e;
  frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
  int exp2 = e - 1;
  if (exp2 < min_exp) exp2 = min_exp; /* subnormals: a fixed quantum */
  double q = ldexp(1.0, exp2 - mant);
  double r = nearbyint(x / q) * q; /* x / q is exact: q is a power of two */
  if (fabs(r) > max) return copysign(INFINITY, x);
  return r;
}

/* element i of a tensor in dtype, as double (exact) */
static inline double ref_load(const void *p, int64_t i, int dtype) {
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

/* the mean of the n elements of a tensor in dtype from base, and rstd = 1 /
 * sqrt(var + eps) with their biased variance taken in a second pass: the row
 * statistics of LayerNorm and GroupNorm, one definition for both */
static inline void ref_mean_rstd(const void *p, int64_t base, int64_t n, int dtype, double eps, double *mean,
                                 double *rstd) {
  double s = 0, v = 0;
  for (int64_t i = 0; i < n; i++) s += ref_load(p, base + i, dtype);
  const double m = s / (double)n;
  for (int64_t i = 0; i < n; i++) {
    const double c = ref_load(p, base + i, dtype) - m;
    v += c * c;
  }
  *mean = m;
  *rstd = 1.0 / sqrt(v / (double)n + eps);
}

/* element i of a tensor in dtype := v rounded to it (building inputs) */
/* The generalized JSD's term of one element, x = log q (the student's),
 * y = log p (the teacher's), and *g its gradient over x (jsd's and the
 * fused linear JSD's references); a term whose probability is 0 is 0:
 *   beta in (0, 1): beta p (y - log m) + (1 - beta) q (x - log m), m = beta p + (1 - beta) q
 *   beta = 0: p (y - x);  beta = 1: q (x - y) */
static inline double ref_jsd_term(double x, double y, double beta, double *g) {
  const double q = exp(x), p = exp(y);
  if (beta == 0) {
    *g = -p;
    return p == 0 ? 0 : p * (y - x);
  }
  if (beta == 1) {
    const double t = q == 0 ? 0 : q * (x - y);
    *g = q == 0 ? 0 : t + q;
    return t;
  }
  const double log_m = log(beta * p + (1 - beta) * q);
  const double tq = q == 0 ? 0 : (1 - beta) * q * (x - log_m);
  *g = tq;
  return (p == 0 ? 0 : beta * p * (y - log_m)) + tq;
}

static inline void ref_store(void *p, int64_t i, int dtype, double v) {
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

/* |got - want| <= atol + rtol * |want|, NaN matching NaN, like torch.allclose.
 * Returns the index of the worst violation, or -1 when all pass. */
static inline int64_t ref_compare(const void *got, int got_dtype, const double *want, int64_t n, double atol,
                                  double rtol, double *worst_err) {
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

#endif
