#include "shape_arg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int ug_shape_env(const ug_pass *p, const char *shape, int64_t *env) {
  const ug_kernel *k = p->kernel;
  bool set[UG_MAX_ARGS * 2] = {false};
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_TENSOR) env[p->sym_of_arg[i]] = 1;
    if (a->kind != UG_ARG_INT) continue;
    env[p->sym_of_arg[i]] = a->has_dflt ? (int64_t)a->dflt : a->nvalues ? a->values[0] : a->has_min ? a->min : 0;
  }
  char *copy = strdup(shape ? shape : "");
  if (!copy) return -1;
  int rc = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      cli_error("--shape: \"%s\" is not name=value", tok);
      rc = -1;
      break;
    }
    *eq = '\0';
    int s = ug_pass_sym(p, tok);
    if (s < 0 || (p->syms[s].kind != UG_SYM_INT && p->syms[s].kind != UG_SYM_HAS)) {
      cli_error("--shape: %s.%s has no int argument \"%s\"", k->name, p->name, tok);
      rc = -1;
      break;
    }
    errno = 0;
    char *end;
    long long v = strtoll(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end) {
      cli_error("--shape: %s=\"%s\" is not an integer", tok, eq + 1);
      rc = -1;
      break;
    }
    const ug_arg *a = &p->args[p->syms[s].ref];
    if (p->syms[s].kind == UG_SYM_INT && ((a->has_min && v < a->min) || (a->has_max && v > a->max))) {
      cli_error("--shape: %s=%lld is outside its range [%lld, %lld]", tok, v, a->has_min ? (long long)a->min : -1LL,
                a->has_max ? (long long)a->max : (long long)INT64_MAX);
      rc = -1;
      break;
    }
    env[s] = v;
    set[s] = true;
  }
  free(copy);
  for (int i = 0; i < k->nshape && !rc; i++) {
    int s = ug_pass_sym(p, k->shape[i]);
    if (s >= 0 && !set[s]) {
      char names[256] = "";
      for (int j = 0; j < k->nshape; j++) {
        strncat(names, k->shape[j], sizeof names - strlen(names) - 2);
        if (j + 1 < k->nshape) strncat(names, ",", sizeof names - strlen(names) - 1);
      }
      cli_error("--shape must give %s (the shape of %s is %s)", k->shape[i], k->name, names);
      rc = -1;
    }
  }
  return rc;
}
