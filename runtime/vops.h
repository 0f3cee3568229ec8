/* The vector operations tcc-compiled kernels call (runtime/vops.c); the
 * prelude declares the same functions for the kernels. */
#ifndef UBG_VOPS_H
#define UBG_VOPS_H

#define UBG_VOPS_HIDDEN __attribute__((visibility("hidden")))

UBG_VOPS_HIDDEN void ubg_vop_load(float *dst, const void *src, long long i0, long long n, int dtype);
UBG_VOPS_HIDDEN void ubg_vop_store(void *dst, long long i0, const float *src, long long n, int dtype, int stream);
UBG_VOPS_HIDDEN void ubg_vop_rnd(float *dst, const float *src, long long n, int dtype);
UBG_VOPS_HIDDEN void ubg_vop_muls(float *dst, const float *a, float s, long long n);
UBG_VOPS_HIDDEN void ubg_vop_mul(float *dst, const float *a, const float *b, long long n);
UBG_VOPS_HIDDEN void ubg_vop_adds(float *dst, const float *a, float s, long long n);
UBG_VOPS_HIDDEN void ubg_vop_add(float *dst, const float *a, const float *b, long long n);
UBG_VOPS_HIDDEN void ubg_vop_axpby(float *dst, float alpha, const float *x, float beta, const float *y, long long n);
UBG_VOPS_HIDDEN void ubg_vop_mac(float *acc, const float *a, const float *b, long long n);
UBG_VOPS_HIDDEN void ubg_vop_fill(float *dst, float v, long long n);
UBG_VOPS_HIDDEN void ubg_vop_copy(float *dst, const float *src, long long n);
UBG_VOPS_HIDDEN void ubg_vop_lanes_dot(float *acc, const float *a, const float *b, long long n);

typedef struct {
  const char *name;
  const void *fn;
} ubg_vop_symbol;
UBG_VOPS_HIDDEN extern const ubg_vop_symbol ubg_vop_symbols[];

#endif
