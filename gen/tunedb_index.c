/* The tuning DB in memory (tunedb.h): its entries, and an index by key
 * (kernel, pass, dtype, shape by name), so n entries load in O(n) and a
 * lookup takes O(1). The file's reader (tunedb_read.c) and its writer and
 * merge (tunedb.c) sit on top of this. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

int64_t ug_tune_bucket(int64_t v) {
  if (v <= 1 || v > INT64_C(1) << 62) return v; /* 2^63 is not an int64_t */
  int64_t p = 2;
  while (p < v) p <<= 1;
  return p;
}

/* ---- the table ------------------------------------------------------------ */

/* the fixed buffers may come from a caller unterminated: compare within them */
#define SAME(a, b, f) (strncmp((a)->f, (b)->f, sizeof (a)->f) == 0)

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

/* The key's hash. A shape is a set of (name, value) pairs: their hashes
 * are summed, so the order a file lists them in does not matter. */
static uint64_t key_hash(const char *kernel, size_t nk, const char *pass, size_t np, int dtype, int nshape,
                         const char *const *names, size_t name_size, const int64_t *shape, int64_t ub_bytes) {
  uint64_t h = fnv(0xcbf29ce484222325ULL, kernel, strnlen(kernel, nk));
  h = fnv(h, "", 1);
  h = fnv(h, pass, strnlen(pass, np));
  h = mix(h ^ (uint64_t)dtype) ^ mix((uint64_t)ub_bytes * 31 + (uint64_t)nshape);
  uint64_t sh = 0;
  for (int i = 0; i < nshape; i++)
    sh += mix(fnv(0xcbf29ce484222325ULL, names[i], strnlen(names[i], name_size)) ^ mix((uint64_t)shape[i]));
  return mix(h + sh);
}

static uint64_t entry_hash(const ug_tune_entry *e) {
  const char *names[UG_TUNE_MAX_SHAPE];
  for (int i = 0; i < e->nshape; i++) names[i] = e->shape_names[i];
  return key_hash(e->kernel, sizeof e->kernel, e->pass, sizeof e->pass, e->dtype, e->nshape, names,
                  sizeof e->shape_names[0], e->shape, e->ub_bytes);
}

/* the value of shape name in e, by name; false when e has no such name */
static bool shape_value(const ug_tune_entry *e, const char *name, size_t name_size, int64_t *v) {
  for (int i = 0; i < e->nshape; i++)
    if (strncmp(e->shape_names[i], name, name_size < sizeof e->shape_names[0] ? name_size : sizeof e->shape_names[0]) ==
        0) {
      *v = e->shape[i];
      return true;
    }
  return false;
}

static bool same_key(const ug_tune_entry *a, const ug_tune_entry *b) {
  if (!SAME(a, b, kernel) || !SAME(a, b, pass) || a->dtype != b->dtype || a->nshape != b->nshape ||
      a->ub_bytes != b->ub_bytes)
    return false;
  for (int i = 0; i < a->nshape; i++) {
    int64_t v;
    if (!shape_value(b, a->shape_names[i], sizeof a->shape_names[i], &v) || v != a->shape[i]) return false;
  }
  return true;
}

/* ---- the index: open addressing over entry numbers, at most half full */

static void index_insert(ug_tunedb *db, int i, uint64_t h) {
  size_t mask = (size_t)db->nslots - 1, at = (size_t)h & mask;
  while (db->slots[at] >= 0) at = (at + 1) & mask;
  db->slots[at] = i;
}

static int index_rebuild(ug_tunedb *db, int nslots) {
  int *slots = malloc((size_t)nslots * sizeof *slots);
  if (!slots) return -1;
  free(db->slots);
  db->slots = slots;
  db->nslots = nslots;
  for (int k = 0; k < nslots; k++) db->slots[k] = -1;
  for (int i = 0; i < db->n; i++) index_insert(db, i, entry_hash(&db->e[i]));
  return 0;
}

static int find_index(const ug_tunedb *db, const ug_tune_entry *e, uint64_t h) {
  if (!db->nslots) return -1;
  size_t mask = (size_t)db->nslots - 1;
  for (size_t at = (size_t)h & mask; db->slots[at] >= 0; at = (at + 1) & mask)
    if (same_key(&db->e[db->slots[at]], e)) return db->slots[at];
  return -1;
}

/* -1 also for an nshape outside 0..UG_TUNE_MAX_SHAPE, or a shape name given
 * twice: such an entry has no key */
int ug_tunedb_put(ug_tunedb *db, const ug_tune_entry *e) {
  if (e->nshape < 0 || e->nshape > UG_TUNE_MAX_SHAPE) return -1;
  for (int i = 0; i < e->nshape; i++)
    for (int j = i + 1; j < e->nshape; j++)
      if (!strncmp(e->shape_names[i], e->shape_names[j], sizeof e->shape_names[0])) return -1;
  const uint64_t h = entry_hash(e);
  int i = find_index(db, e, h);
  if (i >= 0) {
    db->e[i] = *e;
    return 0;
  }
  if (db->n == db->cap) {
    if (db->cap > (1 << 26)) return -1;
    int cap = db->cap ? db->cap * 2 : 16;
    ug_tune_entry *ne = realloc(db->e, (size_t)cap * sizeof *ne);
    if (!ne) return -1;
    db->e = ne;
    db->cap = cap;
  }
  if (2 * (db->n + 1) > db->nslots && index_rebuild(db, db->nslots ? 2 * db->nslots : 32) < 0) return -1;
  db->e[db->n] = *e;
  index_insert(db, db->n, h);
  db->n++;
  return 0;
}

const ug_tune_entry *ug_tunedb_find(const ug_tunedb *db, const char *kernel, const char *pass, int dtype, int nshape,
                                    const char *const *names, const int64_t *shape, int64_t ub_bytes) {
  if (nshape < 0 || nshape > UG_TUNE_MAX_SHAPE || !db->nslots) return NULL;
  ug_tune_entry key;
  memset(&key, 0, sizeof key);
  snprintf(key.kernel, sizeof key.kernel, "%s", kernel);
  snprintf(key.pass, sizeof key.pass, "%s", pass);
  key.dtype = dtype;
  key.nshape = nshape;
  key.ub_bytes = ub_bytes;
  for (int i = 0; i < nshape; i++) {
    if (strlen(names[i]) >= sizeof key.shape_names[i]) return NULL;
    snprintf(key.shape_names[i], sizeof key.shape_names[i], "%s", names[i]);
    key.shape[i] = shape[i];
  }
  if (strlen(kernel) >= sizeof key.kernel || strlen(pass) >= sizeof key.pass) return NULL;
  int i = find_index(db, &key, entry_hash(&key));
  return i < 0 ? NULL : &db->e[i];
}

int ug_tunedb_keep_if(ug_tunedb *db, bool (*keep)(const ug_tune_entry *e, void *arg), void *arg) {
  int kept = 0;
  for (int i = 0; i < db->n; i++)
    if (keep(&db->e[i], arg)) db->e[kept++] = db->e[i];
  int dropped = db->n - kept;
  db->n = kept;
  if (dropped && db->nslots && index_rebuild(db, db->nslots) < 0) return -1;
  return dropped;
}

void ug_tunedb_free(ug_tunedb *db) {
  free(db->e);
  free(db->slots);
  memset(db, 0, sizeof *db);
}
