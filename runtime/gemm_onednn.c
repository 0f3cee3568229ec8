/* gemm_onednn.h's GEMM on oneDNN's matmul (Debian's libdnnl-dev 2.x, or a
 * 3.x: the two differ only in how descriptors are made, below). oneDNN is
 * used because its matmul has what a hand-written GEMM here would need a
 * kernel per CPU for: AMX and AVX512-BF16 tiles, blocking for the cache,
 * packing; on the machines measured it runs at the speed of the GEMM
 * inside PyTorch (docs/performance.md). */
#include "gemm_onednn.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/spec.h"

#ifndef UBG_HAVE_ONEDNN

const char *rt_dnnl_missing(void) { return "this library was built without oneDNN (libdnnl-dev)"; }
bool rt_dnnl_runs(ubg_dtype dtype) { return (void)dtype, false; }
rt_dnnl_cache *rt_dnnl_cache_new(void) { return NULL; }
void rt_dnnl_cache_free(rt_dnnl_cache *cache) { (void)cache; }
size_t rt_dnnl_scratch(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, const char **why) {
  (void)cache, (void)g, (void)threads;
  *why = rt_dnnl_missing();
  return SIZE_MAX;
}
int rt_dnnl_run(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, void *scratch, size_t bytes,
                const char **why) {
  (void)cache, (void)g, (void)threads, (void)scratch, (void)bytes;
  *why = rt_dnnl_missing();
  return -1;
}

#else

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

/* ---- the two APIs: a memory descriptor is a struct in 2.x, a handle in 3.x ---- */
#if DNNL_VERSION_MAJOR >= 3
typedef dnnl_memory_desc_t md_t;
#define MD(x) (x)
static dnnl_status_t md_make(md_t *md, int64_t rows, int64_t cols, dnnl_data_type_t dt, int64_t rs, int64_t cs) {
  const dnnl_dims_t dims = {rows, cols}, strides = {rs, cs};
  return dnnl_memory_desc_create_with_strides(md, 2, dims, dt, strides);
}
static void md_drop(md_t md) {
  if (md) dnnl_memory_desc_destroy(md);
}
static dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t e, md_t a, md_t b, const md_t *bias, md_t c,
                               dnnl_primitive_attr_t attr) {
  return dnnl_matmul_primitive_desc_create(pd, e, a, b, bias ? *bias : NULL, c, attr);
}
static dnnl_status_t append_sum(dnnl_post_ops_t po) { return dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef); }
#else
typedef dnnl_memory_desc_t md_t;
#define MD(x) (&(x))
static dnnl_status_t md_make(md_t *md, int64_t rows, int64_t cols, dnnl_data_type_t dt, int64_t rs, int64_t cs) {
  const dnnl_dims_t dims = {rows, cols}, strides = {rs, cs};
  return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
}
static void md_drop(md_t md) { (void)md; }
static dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t e, md_t a, md_t b, const md_t *bias, md_t c,
                               dnnl_primitive_attr_t attr) {
  dnnl_matmul_desc_t d;
  dnnl_status_t s = dnnl_matmul_desc_init(&d, &a, &b, bias, &c);
  return s != dnnl_success ? s : dnnl_primitive_desc_create(pd, &d, attr, e, NULL);
}
static dnnl_status_t append_sum(dnnl_post_ops_t po) { return dnnl_post_ops_append_sum(po, 1.0f); }
#endif

/* ---- one engine for the process ---- */
static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static void engine_make(void) {
  if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}
const char *rt_dnnl_missing(void) {
  pthread_once(&engine_once, engine_make);
  return engine ? NULL : "oneDNN could not make a CPU engine";
}

static dnnl_data_type_t dnnl_type(ubg_dtype dt) {
  return dt == UBG_F32 ? dnnl_f32 : dt == UBG_BF16 ? dnnl_bf16 : dnnl_f16;
}

/* ---- primitives, made once per key ---- */
typedef struct {
  int64_t m, n, k;
  int a_t, b_t, ab, c_dt, accumulate, bias, threads;
} gemm_key;

typedef struct entry {
  struct entry *next;
  gemm_key key;
  dnnl_primitive_t prim;
  md_t a, b, c, bias;
  size_t scratch;
  md_t scratch_md;
  int users; /* calls running it; under the cache's lock */
  uint64_t used; /* the cache's clock at its last use */
} entry;

enum { CACHE_MAX = 32 };

struct rt_dnnl_cache {
  pthread_mutex_t lock;
  entry *head;
  int n;
  uint64_t clock;
};

rt_dnnl_cache *rt_dnnl_cache_new(void) {
  rt_dnnl_cache *c = calloc(1, sizeof *c);
  if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

static void entry_free(entry *e) {
  if (e->prim) dnnl_primitive_destroy(e->prim);
  md_drop(e->a), md_drop(e->b), md_drop(e->c), md_drop(e->bias), md_drop(e->scratch_md);
  free(e);
}

void rt_dnnl_cache_free(rt_dnnl_cache *cache) {
  if (!cache) return;
  for (entry *e = cache->head, *next; e; e = next) next = e->next, entry_free(e);
  pthread_mutex_destroy(&cache->lock);
  free(cache);
}

static gemm_key key_of(const rt_dnnl_gemm *g, int threads) {
  gemm_key k;
  memset(&k, 0, sizeof k); /* compared with memcmp: no stray padding */
  k.m = g->m, k.n = g->n, k.k = g->k, k.a_t = g->a_t, k.b_t = g->b_t, k.ab = g->ab, k.c_dt = g->c_dt;
  k.accumulate = g->accumulate, k.bias = g->bias != NULL, k.threads = threads;
  return k;
}

/* a new entry for key on `threads` OpenMP threads (oneDNN sizes its work to
 * omp_get_max_threads() when the primitive is made and when it runs) */
static entry *entry_make(const gemm_key *key, const char **why) {
  entry *e = calloc(1, sizeof *e);
  if (!e) return *why = "out of memory", NULL;
  e->key = *key;
  const int64_t m = key->m, n = key->n, k = key->k;
  const dnnl_data_type_t ab = dnnl_type(key->ab);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_primitive_desc_t pd = NULL;
  bool ok = md_make(&e->a, m, k, ab, key->a_t ? 1 : k, key->a_t ? m : 1) == dnnl_success &&
            md_make(&e->b, k, n, ab, key->b_t ? 1 : n, key->b_t ? k : 1) == dnnl_success &&
            md_make(&e->c, m, n, dnnl_type(key->c_dt), n, 1) == dnnl_success &&
            (!key->bias || md_make(&e->bias, 1, n, ab, n, 1) == dnnl_success) &&
            dnnl_primitive_attr_create(&attr) == dnnl_success &&
            dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
  if (ok && key->accumulate)
    ok = dnnl_post_ops_create(&po) == dnnl_success && append_sum(po) == dnnl_success &&
         dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
  ok = ok && matmul_pd(&pd, engine, e->a, e->b, key->bias ? &e->bias : NULL, e->c, attr) == dnnl_success;
  if (ok) {
#if DNNL_VERSION_MAJOR >= 3
    ok = dnnl_memory_desc_clone(&e->scratch_md, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)) ==
         dnnl_success;
#else
    e->scratch_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
#endif
    e->scratch = ok ? dnnl_memory_desc_get_size(MD(e->scratch_md)) : 0;
    ok = ok && dnnl_primitive_create(&e->prim, pd) == dnnl_success;
  }
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (!ok) {
    entry_free(e);
    return *why = "oneDNN has no matmul for these types on this CPU", NULL;
  }
  return e;
}

/* the entry for g on `threads` threads, taken (users + 1), made if new */
static entry *acquire(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, const char **why) {
  if ((*why = rt_dnnl_missing())) return NULL;
  if (!cache) return *why = "out of memory", NULL;
  const gemm_key key = key_of(g, threads);
  pthread_mutex_lock(&cache->lock);
  for (entry *e = cache->head; e; e = e->next)
    if (!memcmp(&e->key, &key, sizeof key)) {
      e->users++, e->used = ++cache->clock;
      pthread_mutex_unlock(&cache->lock);
      return e;
    }
  pthread_mutex_unlock(&cache->lock);
  /* made outside the lock (it takes milliseconds); a twin made meanwhile is harmless */
  const int outer = omp_get_max_threads();
  omp_set_num_threads(threads);
  entry *e = entry_make(&key, why);
  omp_set_num_threads(outer);
  if (!e) return NULL;
  pthread_mutex_lock(&cache->lock);
  if (cache->n >= CACHE_MAX) { /* drop the least recently used idle entry */
    entry **victim = NULL;
    for (entry **p = &cache->head; *p; p = &(*p)->next)
      if (!(*p)->users && (!victim || (*p)->used < (*victim)->used)) victim = p;
    if (victim) {
      entry *v = *victim;
      *victim = v->next;
      entry_free(v);
      cache->n--;
    }
  }
  e->next = cache->head, cache->head = e, cache->n++;
  e->users = 1, e->used = ++cache->clock;
  pthread_mutex_unlock(&cache->lock);
  return e;
}

static void release(rt_dnnl_cache *cache, entry *e) {
  pthread_mutex_lock(&cache->lock);
  e->users--;
  pthread_mutex_unlock(&cache->lock);
}

/* f16 and bf16 are asked of the library once: a 1 x 1 x 1 matmul */
static int runs_dtype[UG_NDTYPES];
static pthread_once_t runs_once = PTHREAD_ONCE_INIT;
static void runs_probe(void) {
  if (rt_dnnl_missing()) return;
  for (int dt = 0; dt < UG_NDTYPES; dt++) {
    const gemm_key key = {1, 1, 1, 0, 0, dt, dt, 0, 0, 1};
    const char *why;
    entry *e = entry_make(&key, &why);
    runs_dtype[dt] = e != NULL;
    if (e) entry_free(e);
  }
}
bool rt_dnnl_runs(ubg_dtype dtype) {
  pthread_once(&runs_once, runs_probe);
  return (int)dtype >= 0 && (int)dtype < UG_NDTYPES && runs_dtype[dtype];
}

size_t rt_dnnl_scratch(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, const char **why) {
  entry *e = acquire(cache, g, threads, why);
  if (!e) return SIZE_MAX;
  const size_t bytes = e->scratch;
  release(cache, e);
  return bytes;
}

int rt_dnnl_run(rt_dnnl_cache *cache, const rt_dnnl_gemm *g, int threads, void *scratch, size_t bytes,
                const char **why) {
  entry *e = acquire(cache, g, threads, why);
  if (!e) return -1;
  void *own = NULL;
  if (e->scratch > bytes) scratch = own = aligned_alloc(64, (e->scratch + 63) / 64 * 64);
  dnnl_stream_t stream = NULL;
  dnnl_memory_t mem[5] = {0};
  bool ok = (scratch || !e->scratch) && dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success &&
            dnnl_memory_create(&mem[0], MD(e->a), engine, (void *)g->a) == dnnl_success &&
            dnnl_memory_create(&mem[1], MD(e->b), engine, (void *)g->b) == dnnl_success &&
            dnnl_memory_create(&mem[2], MD(e->c), engine, g->c) == dnnl_success &&
            (!g->bias || dnnl_memory_create(&mem[3], MD(e->bias), engine, (void *)g->bias) == dnnl_success) &&
            (!e->scratch || dnnl_memory_create(&mem[4], MD(e->scratch_md), engine, scratch) == dnnl_success);
  if (ok) {
    dnnl_exec_arg_t args[5];
    int nargs = 0;
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem[0]};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mem[1]};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mem[2]};
    if (mem[3]) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mem[3]};
    if (mem[4]) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem[4]};
    const int outer = omp_get_max_threads();
    omp_set_num_threads(threads);
    ok = dnnl_primitive_execute(e->prim, stream, nargs, args) == dnnl_success && dnnl_stream_wait(stream) == dnnl_success;
    omp_set_num_threads(outer);
  }
  for (int i = 0; i < 5; i++)
    if (mem[i]) dnnl_memory_destroy(mem[i]);
  if (stream) dnnl_stream_destroy(stream);
  if (!ok) *why = scratch || !e->scratch ? "oneDNN's matmul failed" : "out of memory";
  free(own);
  release(cache, e);
  return ok ? 0 : -1;
}

#endif
