/* Double-precision references: what every kernel is checked against.
 *
 * A reference reads the same argument slots a kernel gets (spec order;
 * tensors in their storage dtype) and writes each output tensor as double.
 * It rounds to the storage dtype only at the intermediate steps the
 * semantics name (DESIGN.md "Kernel semantics"); the final rounding of an
 * output is left to the comparison's tolerance. Its dtype conversions are
 * written here from frexp/ldexp, independent of the kernels' prelude. */
#ifndef UBG_REF_H
#define UBG_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef union {
  void *p;
  int64_t i;
  double f;
} ref_slot;

/* outs[i] is a double buffer for output tensor arg i (NULL otherwise). */
typedef void (*ref_fn)(const ref_slot *args, int dtype, double *const *outs);

typedef struct {
  const char *kernel;
  const char *pass;
  ref_fn fn;
} ref_entry;

void ref_register(const ref_entry *e);
const ref_entry *ref_find(const char *kernel, const char *pass);

#define REF_REGISTER(k, p, f)                                                  \
  static const ref_entry ref_entry_##k##_##p = {#k, #p, f};                    \
  __attribute__((constructor)) static void ref_register_##k##_##p(void) {      \
    ref_register(&ref_entry_##k##_##p);                                        \
  }

enum { REF_F32 = 0, REF_F16 = 1, REF_BF16 = 2 };

/* x rounded to the dtype's precision and range, round to nearest even */
double ref_round(double x, int dtype);
/* element i of a tensor in dtype, as double (exact) */
double ref_load(const void *p, int64_t i, int dtype);
/* store rounded to dtype (for building inputs) */
void ref_store(void *p, int64_t i, int dtype, double v);
size_t ref_dtype_bytes(int dtype);

/* |got - want| <= atol + rtol * |want|, NaN matching NaN, like torch.allclose.
 * Returns the index of the worst violation, or -1 when all pass. */
int64_t ref_compare(const void *got, int got_dtype, const double *want, int64_t n, double atol, double rtol,
                    double *worst_err);

#endif
