{{! The row sums of the norms' forwards (layer_norm_fwd.c.tmpl,
    group_norm_fwd.c.tmpl) in the prelude's 64 lanes, element j of a tile in
    lane j % 64 (tiles start at multiples of 64), so every BLOCK_D gives the
    same bits; the including template defines LD first. }}
/* n elements of x from base into t, and acc[l] += t[j] for j = l, l + 64,
 * ... < n in the same pass */
UBG_INLINE void load_lanes_add(float *UBG_RESTRICT t, float *UBG_RESTRICT acc, const void *x, ubg_i64 base, ubg_i64 n) {
  ubg_i64 j = 0;
  int l;
  for (; j + UBG_LANES4 <= n; j += UBG_LANES4)
    for (l = 0; l < UBG_LANES4; l++) {
      const float v = LD(x, base + j + l);
      t[j + l] = v;
      acc[l] += v;
    }
  for (l = 0; j + l < n; l++) {
    const float v = LD(x, base + j + l);
    t[j + l] = v;
    acc[l] += v;
  }
}

/* acc[l] += (t[j] - mu)^2 for j = l, l + 64, ... < n */
UBG_INLINE void lanes_centred_squares(float *UBG_RESTRICT acc, const float *UBG_RESTRICT t, float mu, ubg_i64 n) {
  ubg_i64 j = 0;
  int l;
  for (; j + UBG_LANES4 <= n; j += UBG_LANES4)
    for (l = 0; l < UBG_LANES4; l++) acc[l] += (t[j + l] - mu) * (t[j + l] - mu);
  for (l = 0; j + l < n; l++) acc[l] += (t[j + l] - mu) * (t[j + l] - mu);
}
