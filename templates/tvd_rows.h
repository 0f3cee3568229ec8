{{! The rows a TVD call keeps and its reduction's factor, pasted into
    tvd_fwd.c.tmpl and tvd_bwd.c.tmpl. }}
/* the spec's values of reduction */
enum { TVD_MEAN = 0, TVD_SUM = 1, TVD_NONE = 2, TVD_BATCHMEAN = 3 };

/* row r counts: there are no labels, or its label is not ignore_index */
UBG_INLINE int tvd_kept(const ubg_i64 *labels, ubg_i64 r, ubg_i64 ignore_index) {
  return !labels || labels[r] != ignore_index;
}

/* what the reduction multiplies a sum of 0.5 |p - q| by: 1 / rows kept
 * (batchmean), 1 / (rows kept x cols) (mean), 1 (sum, none); 0 when no row
 * is kept, so that such a call's loss and gradient are 0, not 0 / 0 */
UBG_INLINE double tvd_scale(const ubg_i64 *labels, ubg_i64 rows, ubg_i64 cols, ubg_i64 ignore_index,
                            ubg_i64 reduction) {
  ubg_i64 r, kept = 0;
  if (reduction == TVD_SUM || reduction == TVD_NONE) return 1.0;
  for (r = 0; r < rows; r++) kept += tvd_kept(labels, r, ignore_index);
  if (kept == 0) return 0.0;
  return reduction == TVD_MEAN ? 1.0 / ((double)kept * (double)cols) : 1.0 / (double)kept;
}
