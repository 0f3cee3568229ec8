/* The AOT registries: ubg_aot_main (emitted into the library by `make`) and
 * any table registered at load time. Registration happens from constructors,
 * before main, but is still locked: a library dlopen'ed later may register
 * while another thread looks up. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { MAX_TABLES = 64 };

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static const ubg_aot_table *extra[MAX_TABLES];
static int nextra;

void ubg_aot_register(const ubg_aot_table *t) {
  pthread_mutex_lock(&tables_lock);
  if (nextra < MAX_TABLES) extra[nextra++] = t;
  pthread_mutex_unlock(&tables_lock);
}

void rt_aot_each(void (*fn)(const ubg_aot_table *t, void *ud), void *ud) {
  const ubg_aot_table *tables[MAX_TABLES + 1];
  int n = 0;
  tables[n++] = &ubg_aot_main;
  pthread_mutex_lock(&tables_lock);
  for (int i = 0; i < nextra; i++) tables[n++] = extra[i];
  pthread_mutex_unlock(&tables_lock);
  for (int i = 0; i < n; i++) fn(tables[i], ud);
}

static int cmp_entry(const void *key, const void *e) {
  return strcmp((const char *)key, ((const ubg_aot_entry *)e)->name);
}

typedef struct {
  const char *name;
  uint64_t hash;
  ubg_kernel_fn fn;
} lookup;

static void find_in(const ubg_aot_table *t, void *ud) {
  lookup *l = ud;
  if (l->fn || !t->nentries) return;
  const ubg_aot_entry *e = bsearch(l->name, t->entries, t->nentries, sizeof *t->entries, cmp_entry);
  /* a variant of the same name from another version of the spec is not it */
  if (e && (size_t)e->spec < t->nspecs && t->specs[e->spec].hash == l->hash) l->fn = e->fn;
}

ubg_kernel_fn rt_aot_lookup(const char *name, uint64_t spec_hash) {
  lookup l = {name, spec_hash, NULL};
  rt_aot_each(find_in, &l);
  return l.fn;
}
