#include "strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"

#include <stdarg.h>

/* appends to c->why, never past its end */
static void why(ug_choice *c, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why(ug_choice *c, size_t *len, const char *fmt, ...) {
  if (*len >= sizeof c->why - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(c->why + *len, sizeof c->why - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
  if (*len >= sizeof c->why) *len = sizeof c->why - 1;
}

static int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x && p < ((int64_t)1 << 62)) p <<= 1;
  return p;
}

int ug_default_strategy(const ug_pass *p, const ug_variant *vs, int nv, int64_t *env, int64_t usable, ug_choice *c,
                        ug_diag *d) {
  c->chosen = -1;
  c->why[0] = '\0';
  if (nv == 0) {
    snprintf(c->why, sizeof c->why, "the pass has no variants");
    return 0;
  }
  char *alive = calloc((size_t)nv, 1);
  if (!alive) return ug_fail(d, NULL, (ug_loc){0, 0}, "out of memory");
  const ug_axis *a0 = p->naxes > 0 ? &p->axes[0] : NULL;
  int64_t want = 0;
  size_t wl = 0;
  if (a0) {
    if (a0->tiles >= 0) {
      int64_t dim = env[p->sym_of_arg[a0->tiles]];
      want = next_pow2(dim);
      if (want < dim) /* beyond 2^62: larger than any block size anyway */
        why(c, &wl, "next_pow2(%s=%lld) > 2^62", p->args[a0->tiles].name, (long long)dim);
      else
        why(c, &wl, "next_pow2(%s=%lld) = %lld", p->args[a0->tiles].name, (long long)dim, (long long)want);
    } else if (a0->dflt) {
      /* a first axis that tiles no argument (a GEMM's BLOCK_N) starts from
       * its default, like the other axes */
      ug_point_env(p, &vs[0].pt, env);
      ug_expr_err err;
      if (ug_expr_eval(a0->dflt, env, &want, &err) < 0) {
        free(alive);
        return ug_fail(d, p->kernel->path, a0->at, "default of axis %s (%s): %s", a0->name, ug_expr_source(a0->dflt),
                       err.msg);
      }
      why(c, &wl, "%s default %s = %lld", a0->name, ug_expr_source(a0->dflt), (long long)want);
    } else {
      want = a0->values[a0->nvalues - 1];
    }
    if (want < a0->values[0]) {
      want = a0->values[0];
      why(c, &wl, ", raised to the smallest %s %lld", a0->name, (long long)want);
    }
  }
  int64_t smallest_fp = -1;
  int rc = 0;
  /* 2: non-tiled (or the only kind) with the first axis == want */
  int found = 0;
  for (int i = 0; i < nv; i++) {
    const ug_variant *v = &vs[i];
    if (smallest_fp < 0 || v->footprint < smallest_fp) smallest_fp = v->footprint;
    if (v->pt.tiled > 0 || (a0 && v->pt.axis[0] != want) || v->footprint > usable) continue;
    int failed;
    int b = ug_bind(p, &v->pt, env, &failed, d);
    if (b < 0) { rc = -1; goto out; }
    if (b == 0) { alive[i] = 1; found++; }
  }
  if (found) {
    why(c, &wl, "%s", p->has_tiled ? "; non-tiled fits" : "; fits");
  } else {
    /* 3: tiled (or the only kind), the largest first axis <= want that fits */
    int64_t best = -1;
    for (int i = 0; i < nv; i++) {
      const ug_variant *v = &vs[i];
      if ((p->has_tiled && v->pt.tiled != 1) || v->footprint > usable) continue;
      if (a0 && v->pt.axis[0] > want) continue;
      int failed;
      int b = ug_bind(p, &v->pt, env, &failed, d);
      if (b < 0) { rc = -1; goto out; }
      if (b != 0) continue;
      alive[i] = 1;
      if (a0 && v->pt.axis[0] > best) best = v->pt.axis[0];
      found++;
    }
    if (a0)
      for (int i = 0; i < nv; i++)
        if (alive[i] && vs[i].pt.axis[0] != best) { alive[i] = 0; found--; }
    if (!found) {
      why(c, &wl, "; no variant fits the UB budget of %lld bytes and applies (smallest footprint %lld)",
               (long long)usable, (long long)smallest_fp);
      goto out;
    }
    why(c, &wl, "; %s, largest fitting %s = %lld",
                           p->has_tiled ? (p->tiled_values[0] ? "non-tiled does not fit, so tiled" : "tiled") : "does not fit",
                           a0 ? a0->name : "variant", (long long)best);
  }
  /* 4: the other axes in order */
  for (int ax = 1; ax < p->naxes; ax++) {
    const ug_axis *a = &p->axes[ax];
    int first = -1;
    for (int i = 0; i < nv && first < 0; i++)
      if (alive[i]) first = i;
    int64_t pref = INT64_MIN;
    if (a->dflt) {
      ug_point_env(p, &vs[first].pt, env);
      ug_expr_err err;
      if (ug_expr_eval(a->dflt, env, &pref, &err) < 0) {
        rc = ug_fail(d, p->kernel->path, a->at, "default of axis %s (%s): %s", a->name, ug_expr_source(a->dflt), err.msg);
        goto out;
      }
    }
    int64_t below = INT64_MIN, lowest = INT64_MAX;
    for (int i = 0; i < nv; i++) {
      if (!alive[i]) continue;
      int64_t x = vs[i].pt.axis[ax];
      if (x <= pref && x > below) below = x;
      if (x < lowest) lowest = x;
    }
    int64_t pick = below != INT64_MIN ? below : lowest;
    for (int i = 0; i < nv; i++)
      if (alive[i] && vs[i].pt.axis[ax] != pick) alive[i] = 0;
    if (a->dflt)
      why(c, &wl, "; %s = %lld (default %s = %lld)", a->name, (long long)pick,
                             ug_expr_source(a->dflt), (long long)pref);
    else
      why(c, &wl, "; %s = %lld (smallest)", a->name, (long long)pick);
  }
  for (int i = 0; i < nv; i++)
    if (alive[i]) {
      c->chosen = i;
      break;
    }
  if (c->chosen >= 0) {
    int failed;
    if (ug_bind(p, &vs[c->chosen].pt, env, &failed, d) < 0) rc = -1;
  }
out:
  free(alive);
  return rc;
}
