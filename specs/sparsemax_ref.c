/* Sparsemax over the last dimension in double precision (Liger's
 * LigerSparsemaxFunction), tau by the sort of Martins & Astudillo 2016 (not
 * the kernel's Newton steps: an independent route to the same tau).
 *   fwd args: x, y, rows, cols
 *   bwd args: dy, y, dx, rows, cols
 * z = the row sorted descending, k = the largest j with 1 + j z_j > z_1 +
 * ... + z_j, tau = (z_1 + ... + z_k - 1) / k, y = max(x - tau, 0); a row
 * with a NaN or an infinity gives NaN. dx = dy - mean(dy over y > 0) where
 * y > 0, 0 elsewhere, from the y it is given (as the kernel). */
#include "ubgen_ref.h"

/* z[i] moved down the min-heap z[0, n) to its place */
static void sift_down(double *z, int64_t i, int64_t n) {
  for (int64_t c = 2 * i + 1; c < n; i = c, c = 2 * i + 1) {
    if (c + 1 < n && z[c + 1] < z[c]) c++;
    if (z[i] <= z[c]) return;
    const double t = z[i];
    z[i] = z[c], z[c] = t;
  }
}

/* z[0, n) sorted descending: heapsort on a min-heap (the freestanding
 * reference has no qsort) */
static void sort_desc(double *z, int64_t n) {
  for (int64_t i = n / 2 - 1; i >= 0; i--) sift_down(z, i, n);
  for (int64_t end = n - 1; end > 0; end--) {
    const double t = z[0];
    z[0] = z[end], z[end] = t;
    sift_down(z, 0, end);
  }
}

UBGEN_REF(sparsemax, fwd) {
  const int64_t rows = a[2].i, D = a[3].i;
  double *z = malloc((size_t)D * sizeof(double));
  for (int64_t r = 0; r < rows; r++) {
    int finite = 1;
    for (int64_t d = 0; d < D; d++) {
      z[d] = ref_load(a[0].p, r * D + d, dt);
      finite &= z[d] - z[d] == 0;
    }
    sort_desc(z, D);
    double cum = 0, support_sum = 0;
    int64_t k = 0;
    for (int64_t j = 0; j < D; j++) {
      cum += z[j];
      if (1 + (double)(j + 1) * z[j] > cum) k = j + 1, support_sum = cum;
    }
    const double tau = finite ? (support_sum - 1) / (double)k : NAN;
    for (int64_t d = 0; d < D; d++) {
      const double v = ref_load(a[0].p, r * D + d, dt) - tau;
      outs[1][r * D + d] = v < 0 ? 0 : v;
    }
  }
  free(z);
}

UBGEN_REF(sparsemax, bwd) {
  const int64_t rows = a[3].i, D = a[4].i;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    int64_t k = 0;
    for (int64_t d = 0; d < D; d++)
      if (ref_load(a[1].p, r * D + d, dt) > 0) s += ref_load(a[0].p, r * D + d, dt), k++;
    const double mean = k ? s / (double)k : 0;
    for (int64_t d = 0; d < D; d++)
      outs[2][r * D + d] = ref_load(a[1].p, r * D + d, dt) > 0 ? ref_load(a[0].p, r * D + d, dt) - mean : 0;
  }
}
