/* --shape name=values,...: values for a pass's int args (and has_<tensor>
 * flags). A value is an integer, a list of them joined by "/", or a range:
 * A:B doubles from A up to B (1024:8192 is 1024/2048/4096/8192, the way
 * Liger's benchmarks step their sizes), A:B:S steps by S. Several names with
 * several values give every combination. */
#include "shape_arg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "suggest.h"

enum { MAX_VALUES = 256, MAX_SHAPES = 4096 };

static int parse_int(const char *name, const char *s, const char *whole, long long *v) {
  errno = 0;
  char *end;
  *v = strtoll(s, &end, 10);
  if (errno || end == s || *end) {
    cli_error("--shape: %s=\"%s\" is not an integer, a list a/b/c or a range a:b[:step]", name, whole);
    return -1;
  }
  return 0;
}

/* the values of one name=spec into vals (at most MAX_VALUES); their count, or -1 */
static int parse_values(const char *name, const char *spec, long long *vals) {
  size_t len = strlen(spec);
  if (len == 0 || spec[0] == '/' || spec[len - 1] == '/' || strstr(spec, "//")) {
    cli_error("--shape: %s=\"%s\" has an empty item", name, spec);
    return -1;
  }
  char *copy = strdup(spec);
  if (!copy) return -1;
  int n = 0, rc = 0;
  for (char *save = NULL, *item = strtok_r(copy, "/", &save); item && !rc; item = strtok_r(NULL, "/", &save)) {
    char *c1 = strchr(item, ':');
    long long a, b, step = 0;
    if (!c1) {
      if ((rc = parse_int(name, item, spec, &a)) < 0) break;
      b = a;
    } else {
      *c1 = '\0';
      char *c2 = strchr(c1 + 1, ':');
      if (c2) *c2 = '\0';
      if ((rc = parse_int(name, item, spec, &a)) < 0 || (rc = parse_int(name, c1 + 1, spec, &b)) < 0 ||
          (c2 && (rc = parse_int(name, c2 + 1, spec, &step)) < 0))
        break;
      if (b < a || (!c2 && a <= 0) || (c2 && step <= 0)) {
        cli_error("--shape: %s=\"%s\": a range a:b needs 0 < a <= b, and a:b:step a step > 0", name, spec);
        rc = -1;
        break;
      }
    }
    for (long long v = a; v <= b; v = step ? v + step : 2 * v) {
      if (n == MAX_VALUES) {
        cli_error("--shape: %s=\"%s\" gives more than %d values", name, spec, MAX_VALUES);
        rc = -1;
        break;
      }
      vals[n++] = v;
      if (a == b || v > INT64_MAX / 2 || (step && v > INT64_MAX - step)) break;
    }
  }
  if (!rc && n == 0) {
    cli_error("--shape: %s has no value", name);
    rc = -1;
  }
  free(copy);
  return rc < 0 ? -1 : n;
}

int cli_shape_envs(const ug_pass *p, const char *shape, int64_t **envs_out, int *nenvs) {
  const ug_kernel *k = p->kernel;
  int ns = p->nsyms + 1;
  int64_t *base = calloc((size_t)ns, sizeof *base);
  int *nvals = calloc((size_t)ns, sizeof *nvals); /* per env slot: how many values --shape gives */
  long long **vals = calloc((size_t)ns, sizeof *vals);
  char *copy = strdup(shape ? shape : "");
  int rc = base && nvals && vals && copy ? 0 : -1;
  for (int i = 0; i < p->nargs && !rc; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_TENSOR) base[p->sym_of_arg[i]] = 1;
    if (a->kind != UG_ARG_INT) continue;
    base[p->sym_of_arg[i]] = a->has_dflt ? (int64_t)a->dflt : a->nvalues ? a->values[0] : a->has_min ? a->min : 0;
  }
  for (char *save = NULL, *tok = rc ? NULL : strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      cli_error("--shape: \"%s\" is not name=value", tok);
      rc = -1;
      break;
    }
    *eq = '\0';
    int s = ug_pass_sym(p, tok);
    if (s < 0 || (p->syms[s].kind != UG_SYM_INT && p->syms[s].kind != UG_SYM_HAS)) {
      const char *names[64];
      char list[512] = "";
      int n = 0;
      for (int i = 0; i < p->nsyms && n < 64; i++)
        if (p->syms[i].kind == UG_SYM_INT || p->syms[i].kind == UG_SYM_HAS) {
          names[n++] = p->syms[i].name;
          snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n > 1 ? ", " : "", p->syms[i].name);
        }
      const char *near = cli_suggest(tok, names, n);
      cli_error("--shape: %s.%s has no int argument \"%s\"%s%s%s (it has: %s)", k->name, p->name, tok,
                near ? "; did you mean " : "", near ? near : "", near ? "?" : "", list);
      rc = -1;
      break;
    }
    if (vals[s]) {
      cli_error("--shape: %s is given twice", tok);
      rc = -1;
      break;
    }
    if (!(vals[s] = malloc(MAX_VALUES * sizeof **vals)) || (nvals[s] = parse_values(tok, eq + 1, vals[s])) < 0) {
      rc = -1;
      break;
    }
    const ug_arg *a = &p->args[p->syms[s].ref];
    for (int j = 0; j < nvals[s] && p->syms[s].kind == UG_SYM_INT; j++) {
      long long v = vals[s][j];
      if ((a->has_min && v < a->min) || (a->has_max && v > a->max)) {
        cli_error("--shape: %s=%lld is outside its range [%lld, %lld]", tok, v, a->has_min ? (long long)a->min : -1LL,
                  a->has_max ? (long long)a->max : (long long)INT64_MAX);
        rc = -1;
        break;
      }
    }
  }
  for (int i = 0; i < k->nshape && !rc; i++) {
    int s = ug_pass_sym(p, k->shape[i]);
    if (s >= 0 && !vals[s]) {
      char names[256] = "";
      for (int j = 0; j < k->nshape; j++) {
        strncat(names, k->shape[j], sizeof names - strlen(names) - 2);
        if (j + 1 < k->nshape) strncat(names, ",", sizeof names - strlen(names) - 1);
      }
      cli_error("--shape must give %s (the shape of %s is %s)", k->shape[i], k->name, names);
      rc = -1;
    }
  }
  /* every combination, the last name given varying fastest */
  long long total = 1;
  for (int s = 0; s < ns - 1 && !rc; s++)
    if (vals[s] && (total *= nvals[s]) > MAX_SHAPES) {
      cli_error("--shape \"%s\" gives more than %d shapes", shape, MAX_SHAPES);
      rc = -1;
    }
  int64_t *envs = rc ? NULL : calloc((size_t)total * (size_t)ns, sizeof *envs);
  if (!rc && !envs) rc = -1;
  for (long long e = 0; e < total && !rc; e++) {
    int64_t *env = envs + e * ns;
    memcpy(env, base, (size_t)ns * sizeof *env);
    long long rest = e;
    for (int s = ns - 2; s >= 0; s--)
      if (vals[s]) {
        env[s] = vals[s][rest % nvals[s]];
        rest /= nvals[s];
      }
  }
  for (int s = 0; vals && s < ns - 1; s++) free(vals[s]);
  free(vals);
  free(nvals);
  free(copy);
  free(base);
  if (rc) {
    free(envs);
    return -1;
  }
  *envs_out = envs;
  *nenvs = (int)total;
  return 0;
}

json_t *cli_shape_json(const ug_pass *p, const int64_t *env) {
  json_t *o = json_object();
  for (int i = 0; o && i < p->kernel->nshape; i++)
    json_object_set_new(o, p->kernel->shape[i], json_integer(env[ug_pass_sym(p, p->kernel->shape[i])]));
  return o;
}

int cli_shape_env(const ug_pass *p, const char *shape, int64_t *env) {
  int64_t *envs;
  int n;
  if (cli_shape_envs(p, shape, &envs, &n) < 0) return -1;
  if (n != 1) {
    cli_error("--shape \"%s\" gives %d shapes; this command takes one (lists and ranges are for tune)", shape, n);
    free(envs);
    return -1;
  }
  memcpy(env, envs, (size_t)(p->nsyms + 1) * sizeof *env);
  free(envs);
  return 0;
}
