{{! Sums of many terms kept in double, in the prelude's 64 lanes (element j
    of a row in lane j % 64): DyT's dalpha and GroupNorm's dw and db. }}
/* the 64 lanes' sum, in a fixed order */
UBG_INLINE double fold64(const double *acc) {
  double a[16], s = 0.0;
  int l;
  for (l = 0; l < 16; l++) a[l] = (acc[l] + acc[l + 16]) + (acc[l + 32] + acc[l + 48]);
  for (l = 0; l < 16; l++) s += a[l];
  return s;
}
