/* UB arenas and workspace blocks, reused across launches.
 *
 * An arena is exactly ub_bytes (rounded up to 64) of memory a worker owns
 * during one launch. In guard mode (UBGEN_UB_GUARD=1) it ends right where
 * an inaccessible page begins, so a kernel that writes past its UB faults at
 * the offending instruction instead of corrupting a neighbour. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static rt_block *arena_new(size_t ub_bytes, bool guard) {
  rt_block *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  size_t size = round_up(ub_bytes, 64);
  b->size = size;
  if (guard) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = round_up(size, page);
    void *m = mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      free(b);
      return NULL;
    }
    if (mprotect((unsigned char *)m + body, page, PROT_NONE) < 0) {
      munmap(m, body + page);
      free(b);
      return NULL;
    }
    b->base = m;
    b->map_len = body + page;
    b->p = (unsigned char *)m + body - size; /* the arena's last byte touches the guard */
  } else {
    b->base = aligned_alloc(64, size);
    if (!b->base) {
      free(b);
      return NULL;
    }
    b->p = b->base;
  }
  return b;
}

static void block_free(rt_block *b) {
  if (b->map_len) munmap(b->base, b->map_len);
  else free(b->base);
  free(b);
}

ubg_status rt_arenas_take(ubg_ctx *ctx, int n, rt_block **out) {
  int got = 0;
  pthread_mutex_lock(&ctx->lock);
  while (got < n && ctx->free_arenas) {
    out[got] = ctx->free_arenas;
    ctx->free_arenas = out[got]->next;
    got++;
  }
  pthread_mutex_unlock(&ctx->lock);
  for (; got < n; got++) {
    out[got] = arena_new((size_t)ctx->budget.ub_bytes, ctx->guard);
    if (!out[got]) {
      rt_arenas_give(ctx, out, got);
      return rt_fail(ctx, UBG_ENOMEM, "cannot allocate %d UB arenas of %lld bytes", n, (long long)ctx->budget.ub_bytes);
    }
  }
  return UBG_OK;
}

void rt_arenas_give(ubg_ctx *ctx, rt_block **arenas, int n) {
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < n; i++) {
    arenas[i]->next = ctx->free_arenas;
    ctx->free_arenas = arenas[i];
  }
  pthread_mutex_unlock(&ctx->lock);
}

/* Workspace blocks are kept for reuse, so a steady stream of calls does not
 * fault in fresh pages every time; the pool keeps at most a few. */
ubg_status rt_workspace_take(ubg_ctx *ctx, size_t bytes, rt_block **out) {
  bytes = round_up(bytes ? bytes : 64, 64);
  pthread_mutex_lock(&ctx->lock);
  rt_block **best = NULL;
  for (rt_block **b = &ctx->free_workspace; *b; b = &(*b)->next)
    if ((*b)->size >= bytes && (!best || (*b)->size < (*best)->size)) best = b;
  if (best) {
    *out = *best;
    *best = (*best)->next;
    pthread_mutex_unlock(&ctx->lock);
    return UBG_OK;
  }
  pthread_mutex_unlock(&ctx->lock);
  rt_block *b = calloc(1, sizeof *b);
  if (b) b->base = aligned_alloc(64, bytes);
  if (!b || !b->base) {
    free(b);
    return rt_fail(ctx, UBG_ENOMEM, "cannot allocate a workspace of %zu bytes", bytes);
  }
  b->p = b->base;
  b->size = bytes;
  *out = b;
  return UBG_OK;
}

void rt_workspace_give(ubg_ctx *ctx, rt_block *b) {
  enum { KEEP = 4 };
  pthread_mutex_lock(&ctx->lock);
  b->next = ctx->free_workspace;
  ctx->free_workspace = b;
  /* drop the smallest blocks beyond KEEP */
  int n = 0;
  for (rt_block *x = ctx->free_workspace; x; x = x->next) n++;
  while (n > KEEP) {
    rt_block **smallest = &ctx->free_workspace;
    for (rt_block **x = &ctx->free_workspace; *x; x = &(*x)->next)
      if ((*x)->size < (*smallest)->size) smallest = x;
    rt_block *drop = *smallest;
    *smallest = drop->next;
    block_free(drop);
    n--;
  }
  pthread_mutex_unlock(&ctx->lock);
}

void rt_pools_free(ubg_ctx *ctx) {
  for (rt_block *b = ctx->free_arenas, *next; b; b = next) {
    next = b->next;
    block_free(b);
  }
  for (rt_block *b = ctx->free_workspace, *next; b; b = next) {
    next = b->next;
    block_free(b);
  }
  ctx->free_arenas = ctx->free_workspace = NULL;
}
