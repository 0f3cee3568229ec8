{{! RMSNorm's row scalars from the prelude's lanes, for every RMSNorm
    forward and backward (plain, fused add, modulated), so that all give
    the same bits. The including template defines RND and the CAST_ modes. }}
/* rstd = 1 / sqrt(sum(x^2) / cols + eps) from the lanes of sum(x^2), none
 * rounding it to the dtype */
UBG_INLINE float rstd_of(const float *acc, ubg_i64 cols, float eps, int casting) {
  float r = 1.0f / sqrtf(ubg_lanes_fold(acc) / (float)cols + eps);
  return casting == CAST_NONE ? RND(r) : r;
}

/* the backward's coefficient of x, -(rstd^3 / cols) sum(m x), from the
 * lanes of sum(m x) */
UBG_INLINE float corr_of(const float *acc, float r, ubg_i64 cols) {
  return r * (-(1.0f / (float)cols) * r * r * ubg_lanes_fold(acc));
}
