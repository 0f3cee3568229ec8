/* Checked int64 arithmetic, as C23's ckd_add, ckd_sub and ckd_mul (which
 * GCC 12 lacks): *r gets the result wrapped to 64 bits, and the call
 * returns true when the exact result does not fit. Plain C, so every
 * compiler builds it the same; the callers are size and shape checks,
 * not hot loops. */
#ifndef UG_CKD_H
#define UG_CKD_H

#include <stdbool.h>
#include <stdint.h>

static inline bool ug_ckd_add(int64_t *r, int64_t a, int64_t b) {
  *r = (int64_t)((uint64_t)a + (uint64_t)b);
  return b > 0 ? a > INT64_MAX - b : a < INT64_MIN - b;
}

static inline bool ug_ckd_sub(int64_t *r, int64_t a, int64_t b) {
  *r = (int64_t)((uint64_t)a - (uint64_t)b);
  return b < 0 ? a > INT64_MAX + b : a < INT64_MIN + b;
}

static inline bool ug_ckd_mul(int64_t *r, int64_t a, int64_t b) {
  *r = (int64_t)((uint64_t)a * (uint64_t)b);
  if (a > 0) return b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a;
  if (a < 0) return b > 0 ? a < INT64_MIN / b : b < 0 && a < INT64_MAX / b;
  return false;
}

#endif
