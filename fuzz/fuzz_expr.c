/* libFuzzer target: the expression parser and evaluator (gen/expr.c).
 * Input: one expression, a NUL, then up to 8 int64 values for the names
 * a..h (the rest of the bytes, little-endian; missing bytes are zero).
 * Any input must parse or fail with a message and a position inside the
 * source, and evaluate or fail (overflow, division by zero): never crash,
 * never undefined behaviour (the build has UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

static int resolve(void *ud, const char *name, size_t len, const char **why) {
  (void)ud;
  if (len == 1 && name[0] >= 'a' && name[0] <= 'h') return name[0] - 'a';
  if (len == 1 && name[0] == 'z') {
    *why = "z is known but not allowed here";
    return -2;
  }
  return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t len = nul ? (size_t)(nul - data) : size;
  char *src = malloc(len + 1);
  if (!src) return 0;
  memcpy(src, data, len);
  src[len] = '\0';
  int64_t env[8] = {0};
  if (nul) memcpy(env, nul + 1, size - len - 1 < sizeof env ? size - len - 1 : sizeof env);
  ug_expr_err err;
  ug_expr *e = ug_expr_parse(src, resolve, NULL, &err);
  if (!e) {
    if (err.pos > len || !err.msg[0]) abort(); /* a failure says what and where */
  } else {
    int64_t out;
    if (ug_expr_eval(e, env, &out, &err) < 0 && !err.msg[0]) abort();
    ug_expr_free(e);
  }
  free(src);
  return 0;
}
