/* Embedding in double precision (docs/semantics.md "What each kernel computes").
 *   fwd args: table, indices, out, num_embeddings, dim, n
 *   bwd args: indices, dout, dtable, num_embeddings, dim, n, padding_idx
 * The backward sums in double; the kernel's f32 chain differs from it by at
 * most the recursive-summation bound, which tests/test_embedding.c adds to
 * the tolerance where rows repeat many times. */
#include "ubgen_ref.h"

UBGEN_REF(embedding, fwd) {
  const void *table = a[0].p;
  const int64_t *indices = a[1].p;
  double *out = outs[2];
  int64_t dim = a[4].i, n = a[5].i;
  for (int64_t i = 0; i < n; i++)
    for (int64_t d = 0; d < dim; d++) out[i * dim + d] = ref_load(table, indices[i] * dim + d, dt);
}

UBGEN_REF(embedding, bwd) {
  const int64_t *indices = a[0].p;
  const void *dout = a[1].p;
  double *dtable = outs[2];
  int64_t v = a[3].i, dim = a[4].i, n = a[5].i, padding_idx = a[6].i;
  for (int64_t k = 0; k < v * dim; k++) dtable[k] = 0;
  for (int64_t i = 0; i < n; i++) {
    if (indices[i] == padding_idx) continue;
    for (int64_t d = 0; d < dim; d++) dtable[indices[i] * dim + d] += ref_load(dout, i * dim + d, dt);
  }
}
