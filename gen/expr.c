#include "expr.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckd.h"

typedef enum {
  OP_CONST, OP_SLOT, OP_NEG, OP_NOT,
  OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR, OP_COND,
  OP_MIN, OP_MAX, OP_CDIV, OP_NEXT_POW2, OP_IS_POW2, OP_LOG2, OP_ALIGN, OP_ABS, OP_CLAMP
} opcode;

typedef struct {
  opcode op;
  int64_t value; /* OP_CONST: the value; OP_SLOT: the slot */
  int nargs;
  int *args; /* node indices */
  size_t pos;
  int depth; /* of the tree under it, itself included */
} node;

struct ug_expr {
  char *src;
  node *nodes;
  int nnodes, cap;
  int root;
  int *slots;
  size_t nslots;
};

typedef struct {
  const char *s;
  size_t i;
  ug_expr *e;
  ug_resolve_fn resolve;
  void *ud;
  ug_expr_err *err;
  int depth;
  bool failed;
} parser;

static int perr(parser *p, size_t pos, const char *fmt, ...) {
  if (p->failed) return -1;
  p->failed = true;
  if (p->err) {
    p->err->pos = pos;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int add_node(parser *p, opcode op, int64_t value, size_t pos, int nargs, const int *args) {
  ug_expr *e = p->e;
  if (e->nnodes == e->cap) {
    int cap = e->cap ? e->cap * 2 : 16;
    node *nn = realloc(e->nodes, (size_t)cap * sizeof *nn);
    if (!nn) return perr(p, pos, "out of memory");
    e->nodes = nn;
    e->cap = cap;
  }
  int depth = 1;
  for (int k = 0; k < nargs; k++)
    if (e->nodes[args[k]].depth >= depth) depth = e->nodes[args[k]].depth + 1;
  if (depth > UG_EXPR_MAX_DEPTH) return perr(p, pos, "expression nested too deeply (more than %d levels)", UG_EXPR_MAX_DEPTH);
  node *n = &e->nodes[e->nnodes];
  n->depth = depth;
  n->op = op;
  n->value = value;
  n->pos = pos;
  n->nargs = nargs;
  n->args = NULL;
  if (nargs) {
    n->args = malloc((size_t)nargs * sizeof *n->args);
    if (!n->args) return perr(p, pos, "out of memory");
    memcpy(n->args, args, (size_t)nargs * sizeof *args);
  }
  return e->nnodes++;
}

static void skip(parser *p) {
  while (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r') p->i++;
}

static bool accept(parser *p, const char *tok) {
  skip(p);
  size_t n = strlen(tok);
  if (strncmp(p->s + p->i, tok, n) != 0) return false;
  /* do not split '<=' into '<' and '=', or '&&' into '&' */
  if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!' || tok[0] == '=') && p->s[p->i + 1] == '=')
    return false;
  p->i += n;
  return true;
}

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

static int parse_expr(parser *p);

static const struct { const char *name; opcode op; int min_args, max_args; } functions[] = {
    {"min", OP_MIN, 2, 16},        {"max", OP_MAX, 2, 16},     {"cdiv", OP_CDIV, 2, 2},
    {"next_pow2", OP_NEXT_POW2, 1, 1}, {"is_pow2", OP_IS_POW2, 1, 1}, {"log2", OP_LOG2, 1, 1},
    {"align", OP_ALIGN, 2, 2},     {"abs", OP_ABS, 1, 1},      {"clamp", OP_CLAMP, 3, 3},
};

static int parse_primary(parser *p) {
  skip(p);
  size_t pos = p->i;
  char c = p->s[p->i];
  if (c >= '0' && c <= '9') {
    int64_t v = 0;
    while (p->s[p->i] >= '0' && p->s[p->i] <= '9') {
      int d = p->s[p->i] - '0';
      if (v > (INT64_MAX - d) / 10) return perr(p, pos, "integer literal does not fit in 64 bits");
      v = v * 10 + d;
      p->i++;
    }
    if (is_ident_char(p->s[p->i]) || p->s[p->i] == '.')
      return perr(p, p->i, "integer literal expected (no fractions or suffixes)");
    return add_node(p, OP_CONST, v, pos, 0, NULL);
  }
  if (c == '(') {
    p->i++;
    int r = parse_expr(p);
    if (r < 0) return r;
    if (!accept(p, ")")) return perr(p, p->i, "')' expected");
    return r;
  }
  if (is_ident_start(c)) {
    size_t len = 0;
    while (is_ident_char(p->s[p->i + len])) len++;
    const char *name = p->s + p->i;
    p->i += len;
    if (len == 4 && strncmp(name, "true", 4) == 0) return add_node(p, OP_CONST, 1, pos, 0, NULL);
    if (len == 5 && strncmp(name, "false", 5) == 0) return add_node(p, OP_CONST, 0, pos, 0, NULL);
    skip(p);
    if (p->s[p->i] == '(') {
      for (size_t f = 0; f < sizeof functions / sizeof functions[0]; f++) {
        if (strlen(functions[f].name) != len || strncmp(functions[f].name, name, len) != 0) continue;
        p->i++;
        int args[16];
        int n = 0;
        skip(p);
        if (p->s[p->i] != ')') {
          for (;;) {
            if (n == functions[f].max_args)
              return perr(p, p->i, "%s() takes at most %d arguments", functions[f].name, functions[f].max_args);
            int a = parse_expr(p);
            if (a < 0) return a;
            args[n++] = a;
            if (accept(p, ",")) continue;
            break;
          }
        }
        if (!accept(p, ")")) return perr(p, p->i, "')' or ',' expected in call of %s()", functions[f].name);
        if (n < functions[f].min_args)
          return perr(p, pos, "%s() takes %s%d argument%s, got %d", functions[f].name,
                      functions[f].min_args == functions[f].max_args ? "" : "at least ",
                      functions[f].min_args, functions[f].min_args == 1 ? "" : "s", n);
        return add_node(p, functions[f].op, 0, pos, n, args);
      }
      return perr(p, pos, "unknown function '%.*s' (known: min, max, cdiv, next_pow2, is_pow2, log2, align, abs, clamp)",
                  (int)len, name);
    }
    const char *why = NULL;
    int slot = p->resolve ? p->resolve(p->ud, name, len, &why) : -1;
    if (slot == -2) return perr(p, pos, "'%.*s' cannot be used here: %s", (int)len, name, why ? why : "not allowed");
    if (slot < 0) return perr(p, pos, "undefined name '%.*s'%s%s", (int)len, name, why ? ": " : "", why ? why : "");
    return add_node(p, OP_SLOT, slot, pos, 0, NULL);
  }
  if (c == '\0') return perr(p, pos, "unexpected end of expression");
  return perr(p, pos, "unexpected character '%c'", c);
}

static int parse_unary(parser *p) {
  skip(p);
  size_t pos = p->i;
  if (++p->depth > UG_EXPR_MAX_DEPTH) return perr(p, pos, "expression nested too deeply (more than %d levels)", UG_EXPR_MAX_DEPTH);
  int r;
  if (accept(p, "-")) {
    int a = parse_unary(p);
    r = a < 0 ? a : add_node(p, OP_NEG, 0, pos, 1, &a);
  } else if (accept(p, "!")) {
    int a = parse_unary(p);
    r = a < 0 ? a : add_node(p, OP_NOT, 0, pos, 1, &a);
  } else {
    r = parse_primary(p);
  }
  p->depth--;
  return r;
}

static int parse_binary_level(parser *p, int level);

/* precedence levels, loosest first */
static const struct { const char *tok; opcode op; } levels[][6] = {
    {{"||", OP_OR}},
    {{"&&", OP_AND}},
    {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE}, {">=", OP_GE}, {"<", OP_LT}, {">", OP_GT}},
    {{"+", OP_ADD}, {"-", OP_SUB}},
    {{"*", OP_MUL}, {"/", OP_DIV}, {"%", OP_MOD}},
};
enum { NLEVELS = 5, CMP_LEVEL = 2 };

static int parse_binary_level(parser *p, int level) {
  if (level == NLEVELS) return parse_unary(p);
  int lhs = parse_binary_level(p, level + 1);
  if (lhs < 0) return lhs;
  for (;;) {
    skip(p);
    size_t pos = p->i;
    int matched = -1;
    for (int k = 0; k < 6 && levels[level][k].tok; k++) {
      if (accept(p, levels[level][k].tok)) {
        matched = k;
        break;
      }
    }
    if (matched < 0) return lhs;
    /* '&' and '|' alone are not operators here */
    int rhs = parse_binary_level(p, level + 1);
    if (rhs < 0) return rhs;
    int args[2] = {lhs, rhs};
    lhs = add_node(p, levels[level][matched].op, 0, pos, 2, args);
    if (lhs < 0) return lhs;
    if (level == CMP_LEVEL) {
      skip(p);
      const char *s = p->s + p->i;
      if (strncmp(s, "==", 2) == 0 || strncmp(s, "!=", 2) == 0 || *s == '<' || *s == '>')
        return perr(p, p->i, "comparisons do not chain; use && between them");
      return lhs;
    }
  }
}

static int parse_cond(parser *p) {
  int c = parse_binary_level(p, 0);
  if (c < 0) return c;
  skip(p);
  size_t pos = p->i;
  if (!accept(p, "?")) return c;
  int a = parse_expr(p);
  if (a < 0) return a;
  if (!accept(p, ":")) return perr(p, p->i, "':' expected after the '?' branch");
  int b = parse_cond(p);
  if (b < 0) return b;
  int args[3] = {c, a, b};
  return add_node(p, OP_COND, 0, pos, 3, args);
}

static int parse_expr(parser *p) {
  if (++p->depth > UG_EXPR_MAX_DEPTH) return perr(p, p->i, "expression nested too deeply (more than %d levels)", UG_EXPR_MAX_DEPTH);
  int r = parse_cond(p);
  p->depth--;
  return r;
}

static int collect_slots(ug_expr *e) {
  for (int k = 0; k < e->nnodes; k++) {
    if (e->nodes[k].op != OP_SLOT) continue;
    int s = (int)e->nodes[k].value;
    bool seen = false;
    for (size_t j = 0; j < e->nslots; j++) seen |= e->slots[j] == s;
    if (seen) continue;
    int *ns = realloc(e->slots, (e->nslots + 1) * sizeof *ns);
    if (!ns) return -1;
    e->slots = ns;
    e->slots[e->nslots++] = s;
  }
  return 0;
}

ug_expr *ug_expr_parse(const char *src, ug_resolve_fn resolve, void *ud, ug_expr_err *err) {
  ug_expr *e = calloc(1, sizeof *e);
  if (!e || !(e->src = strdup(src))) {
    free(e);
    if (err) { err->pos = 0; snprintf(err->msg, sizeof err->msg, "out of memory"); }
    return NULL;
  }
  parser p = {e->src, 0, e, resolve, ud, err, 0, false};
  if (strlen(src) > UG_EXPR_MAX_LEN) {
    perr(&p, UG_EXPR_MAX_LEN, "expression longer than %d characters", UG_EXPR_MAX_LEN);
    ug_expr_free(e);
    return NULL;
  }
  skip(&p);
  if (!p.s[p.i]) {
    perr(&p, 0, "empty expression");
    ug_expr_free(e);
    return NULL;
  }
  e->root = parse_expr(&p);
  if (e->root >= 0) {
    skip(&p);
    if (p.s[p.i]) perr(&p, p.i, "unexpected '%c' after the end of the expression", p.s[p.i]);
  }
  if (p.failed || e->root < 0 || collect_slots(e) < 0) {
    if (!p.failed) perr(&p, 0, "out of memory");
    ug_expr_free(e);
    return NULL;
  }
  return e;
}

void ug_expr_free(ug_expr *e) {
  if (!e) return;
  for (int k = 0; k < e->nnodes; k++) free(e->nodes[k].args);
  free(e->nodes);
  free(e->slots);
  free(e->src);
  free(e);
}

const char *ug_expr_source(const ug_expr *e) { return e->src; }

size_t ug_expr_slots(const ug_expr *e, const int **slots) {
  *slots = e->slots;
  return e->nslots;
}

typedef struct {
  const ug_expr *e;
  const int64_t *env;
  ug_expr_err *err;
  bool failed;
} evaluator;

static int64_t efail(evaluator *ev, const node *n, const char *fmt, ...) {
  if (!ev->failed && ev->err) {
    ev->err->pos = n->pos;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->err->msg, sizeof ev->err->msg, fmt, ap);
    va_end(ap);
  }
  ev->failed = true;
  return 0;
}

static int64_t eval_node(evaluator *ev, int idx) {
  const node *n = &ev->e->nodes[idx];
  int64_t a = 0, b = 0, r = 0;
  switch (n->op) {
  case OP_CONST: return n->value;
  case OP_SLOT: return ev->env[n->value];
  case OP_COND:
    a = eval_node(ev, n->args[0]);
    if (ev->failed) return 0;
    return eval_node(ev, a ? n->args[1] : n->args[2]);
  case OP_AND:
    a = eval_node(ev, n->args[0]);
    if (ev->failed || !a) return 0;
    return eval_node(ev, n->args[1]) != 0;
  case OP_OR:
    a = eval_node(ev, n->args[0]);
    if (ev->failed) return 0;
    if (a) return 1;
    return eval_node(ev, n->args[1]) != 0;
  default: break;
  }
  int64_t v[16] = {0};
  for (int k = 0; k < n->nargs; k++) {
    v[k] = eval_node(ev, n->args[k]);
    if (ev->failed) return 0;
  }
  a = n->nargs > 0 ? v[0] : 0;
  b = n->nargs > 1 ? v[1] : 0;
  switch (n->op) {
  case OP_NEG:
    if (a == INT64_MIN) return efail(ev, n, "overflow in -(%lld)", (long long)a);
    return -a;
  case OP_NOT: return !a;
  case OP_ADD:
    if (ug_ckd_add(&r, a, b)) return efail(ev, n, "overflow in %lld + %lld", (long long)a, (long long)b);
    return r;
  case OP_SUB:
    if (ug_ckd_sub(&r, a, b)) return efail(ev, n, "overflow in %lld - %lld", (long long)a, (long long)b);
    return r;
  case OP_MUL:
    if (ug_ckd_mul(&r, a, b)) return efail(ev, n, "overflow in %lld * %lld", (long long)a, (long long)b);
    return r;
  case OP_DIV:
  case OP_MOD:
    if (b == 0) return efail(ev, n, "division by zero (%lld %c 0)", (long long)a, n->op == OP_DIV ? '/' : '%');
    if (a == INT64_MIN && b == -1) return efail(ev, n, "overflow in %lld / -1", (long long)a);
    return n->op == OP_DIV ? a / b : a % b;
  case OP_EQ: return a == b;
  case OP_NE: return a != b;
  case OP_LT: return a < b;
  case OP_LE: return a <= b;
  case OP_GT: return a > b;
  case OP_GE: return a >= b;
  case OP_MIN:
    r = a;
    for (int k = 1; k < n->nargs; k++) r = v[k] < r ? v[k] : r;
    return r;
  case OP_MAX:
    r = a;
    for (int k = 1; k < n->nargs; k++) r = v[k] > r ? v[k] : r;
    return r;
  case OP_CDIV:
  case OP_ALIGN: {
    if (b <= 0) return efail(ev, n, "%s(%lld, %lld): the divisor must be positive",
                             n->op == OP_CDIV ? "cdiv" : "align", (long long)a, (long long)b);
    /* ceiling division without forming a + b - 1, which could overflow */
    int64_t q = a / b;
    if (a % b != 0 && a > 0) q++;
    if (n->op == OP_CDIV) return q;
    if (ug_ckd_mul(&r, q, b)) return efail(ev, n, "overflow in align(%lld, %lld)", (long long)a, (long long)b);
    return r;
  }
  case OP_NEXT_POW2: {
    if (a <= 1) return 1;
    if (a > ((int64_t)1 << 62)) return efail(ev, n, "overflow in next_pow2(%lld)", (long long)a);
    int64_t p2 = 1;
    while (p2 < a) p2 <<= 1;
    return p2;
  }
  case OP_IS_POW2: return a > 0 && (a & (a - 1)) == 0;
  case OP_LOG2: {
    if (a < 1) return efail(ev, n, "log2(%lld): the argument must be >= 1", (long long)a);
    int64_t l = 0;
    while (a > 1) { a >>= 1; l++; }
    return l;
  }
  case OP_ABS:
    if (a == INT64_MIN) return efail(ev, n, "overflow in abs(%lld)", (long long)a);
    return a < 0 ? -a : a;
  case OP_CLAMP: {
    int64_t lo = v[1], hi = v[2];
    if (lo > hi) return efail(ev, n, "clamp(%lld, %lld, %lld): lo > hi", (long long)a, (long long)lo, (long long)hi);
    return a < lo ? lo : a > hi ? hi : a;
  }
  default: return efail(ev, n, "internal error: bad opcode");
  }
}

int ug_expr_eval(const ug_expr *e, const int64_t *env, int64_t *out, ug_expr_err *err) {
  evaluator ev = {e, env, err, false};
  int64_t v = eval_node(&ev, e->root);
  if (ev.failed) return -1;
  *out = v;
  return 0;
}
