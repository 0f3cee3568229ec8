/* Integer expressions of specs and templates.
 *
 *   expr    := cond
 *   cond    := or [ '?' expr ':' cond ]
 *   or      := and { '||' and }
 *   and     := cmp { '&&' cmp }
 *   cmp     := sum [ ('=='|'!='|'<'|'<='|'>'|'>=') sum ]
 *   sum     := prod { ('+'|'-') prod }
 *   prod    := unary { ('*'|'/'|'%') unary }
 *   unary   := ('-'|'!') unary | primary
 *   primary := INT | 'true' | 'false' | NAME | NAME '(' expr {',' expr} ')'
 *            | '(' expr ')'
 *
 * Values are int64; booleans are 0 and 1. '/' and '%' truncate like C.
 * Functions: min(a, b, ...), max(a, b, ...), cdiv(a, b) (ceiling division),
 * next_pow2(a), is_pow2(a), log2(a) (floor), align(a, b), abs(a),
 * clamp(x, lo, hi). Overflow and division by zero are evaluation errors,
 * never undefined behaviour.
 *
 * Names are resolved once, at parse time, to slots of an int64 environment
 * by a callback, so evaluation is an array walk with no string lookups. */
#ifndef UG_EXPR_H
#define UG_EXPR_H

#include <stddef.h>
#include <stdint.h>

typedef struct ug_expr ug_expr;

typedef struct {
  size_t pos;     /* byte offset in the source where the problem is */
  char msg[256];
} ug_expr_err;

/* Returns the slot of `name` (len bytes, not NUL-terminated), or -1 when the
 * name is unknown, or -2 when known but not allowed here (*why says why). */
typedef int (*ug_resolve_fn)(void *ud, const char *name, size_t len, const char **why);

/* Every expression, wherever a spec or a caller writes one: at most
 * UG_EXPR_MAX_LEN characters and a tree at most UG_EXPR_MAX_DEPTH deep
 * (m+0+0+... is as deep as it is long), so that evaluating it, which
 * recurses, stays within a small stack. */
enum { UG_EXPR_MAX_LEN = 4096, UG_EXPR_MAX_DEPTH = 200 };
ug_expr *ug_expr_parse(const char *src, ug_resolve_fn resolve, void *ud, ug_expr_err *err);
void ug_expr_free(ug_expr *e);

/* 0 on success; -1 with err set on overflow or division by zero. */
int ug_expr_eval(const ug_expr *e, const int64_t *env, int64_t *out, ug_expr_err *err);

const char *ug_expr_source(const ug_expr *e);
/* The distinct slots the expression reads, in first-use order. */
size_t ug_expr_slots(const ug_expr *e, const int **slots);

#endif
