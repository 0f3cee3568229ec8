/* Unit tests of the integer expression language (gen/expr.h): parsing,
 * precedence, functions, and the exact byte position of every error. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/expr.h"

/* ---- helpers ---------------------------------------------------------------- */

/* Names a, b, c, ab map to slots 0..3; "forbidden" is known but refused;
 * "hinted" is unknown with a hint; everything else is unknown. */
typedef struct {
  int calls;
  char last[64];
} resolver_log;

static int resolve(void *ud, const char *name, size_t len, const char **why) {
  static const char *const names[] = {"a", "b", "c", "ab"};
  resolver_log *log = ud;
  if (log) {
    log->calls++;
    snprintf(log->last, sizeof log->last, "%.*s", (int)len, name);
  }
  for (int i = 0; i < 4; i++)
    if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0) return i;
  if (len == 9 && strncmp(name, "forbidden", 9) == 0) {
    *why = "because the test says so";
    return -2;
  }
  if (len == 6 && strncmp(name, "hinted", 6) == 0) {
    *why = "did you mean a?";
    return -1;
  }
  return -1;
}

/* Parses and evaluates src with env; asserts success and returns the value. */
static int64_t ev_env(const char *src, const int64_t *env) {
  ug_expr_err err = {0};
  ug_expr *e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_not_null(e, "parse of \"%s\" failed at %zu: %s", src, err.pos, err.msg);
  int64_t out = -12345;
  int rc = ug_expr_eval(e, env, &out, &err);
  cr_assert_eq(rc, 0, "eval of \"%s\" failed at %zu: %s", src, err.pos, err.msg);
  ug_expr_free(e);
  return out;
}

static int64_t ev(const char *src) {
  static const int64_t env[4] = {0, 0, 0, 0};
  return ev_env(src, env);
}

/* Asserts that src fails to parse at byte pos with a message containing
 * `part` (when not NULL). */
static void parse_fails(const char *src, size_t pos, const char *part) {
  ug_expr_err err;
  memset(&err, 0, sizeof err);
  err.pos = (size_t)-1;
  ug_expr *e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_null(e, "\"%s\" should not parse", src);
  cr_assert_eq(err.pos, pos, "\"%s\": error at %zu, expected %zu (%s)", src, err.pos, pos, err.msg);
  cr_assert_neq(err.msg[0], '\0', "\"%s\": empty message", src);
  if (part) cr_assert_not_null(strstr(err.msg, part), "\"%s\": message \"%s\" lacks \"%s\"", src, err.msg, part);
}

/* Asserts that src parses but fails to evaluate at byte pos with a message
 * containing `part`. */
static void eval_fails_env(const char *src, const int64_t *env, size_t pos, const char *part) {
  ug_expr_err err;
  memset(&err, 0, sizeof err);
  ug_expr *e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_not_null(e, "parse of \"%s\" failed at %zu: %s", src, err.pos, err.msg);
  int64_t out = 777;
  err.pos = (size_t)-1;
  int rc = ug_expr_eval(e, env, &out, &err);
  cr_assert_eq(rc, -1, "\"%s\" should fail to evaluate, gave %lld", src, (long long)out);
  cr_assert_eq(out, 777, "\"%s\": a failed evaluation wrote *out", src);
  cr_assert_eq(err.pos, pos, "\"%s\": error at %zu, expected %zu (%s)", src, err.pos, pos, err.msg);
  if (part) cr_assert_not_null(strstr(err.msg, part), "\"%s\": message \"%s\" lacks \"%s\"", src, err.msg, part);
  ug_expr_free(e);
}

static void eval_fails(const char *src, size_t pos, const char *part) {
  static const int64_t env[4] = {0, 0, 0, 0};
  eval_fails_env(src, env, pos, part);
}

/* ---- literals and names ------------------------------------------------------ */

Test(expr, literals) {
  cr_assert_eq(ev("0"), 0);
  cr_assert_eq(ev("42"), 42);
  cr_assert_eq(ev("  \t7\n "), 7);
  cr_assert_eq(ev("007"), 7);
  cr_assert_eq(ev("true"), 1);
  cr_assert_eq(ev("false"), 0);
  cr_assert_eq(ev("true + true"), 2);
  cr_assert_eq(ev("9223372036854775807"), INT64_MAX);
  cr_assert_eq(ev("-9223372036854775807 - 1"), INT64_MIN);
}

Test(expr, names_resolve_to_slots) {
  int64_t env[4] = {10, 20, 30, 5};
  cr_assert_eq(ev_env("a", env), 10);
  cr_assert_eq(ev_env("a + b * c", env), 610);
  /* "ab" is its own name, not "a" followed by "b" */
  cr_assert_eq(ev_env("ab", env), 5);
  cr_assert_eq(ev_env("ab*a", env), 50);
  /* the environment is read at evaluation time, not at parse time */
  ug_expr_err err;
  ug_expr *e = ug_expr_parse("a - b", resolve, NULL, &err);
  cr_assert_not_null(e);
  int64_t out;
  cr_assert_eq(ug_expr_eval(e, env, &out, &err), 0);
  cr_assert_eq(out, -10);
  env[0] = 100;
  cr_assert_eq(ug_expr_eval(e, env, &out, &err), 0);
  cr_assert_eq(out, 80);
  ug_expr_free(e);
}

Test(expr, resolver_sees_exact_name_and_not_functions) {
  resolver_log log = {0};
  ug_expr_err err;
  ug_expr *e = ug_expr_parse("max(ab, 3)", resolve, &log, &err);
  cr_assert_not_null(e, "%s", err.msg);
  cr_assert_eq(log.calls, 1, "the resolver was called %d times", log.calls);
  cr_assert_str_eq(log.last, "ab");
  ug_expr_free(e);
  log.calls = 0;
  e = ug_expr_parse("true || false", resolve, &log, &err);
  cr_assert_not_null(e);
  cr_assert_eq(log.calls, 0, "true/false are literals, not names");
  ug_expr_free(e);
}

Test(expr, no_resolver_means_every_name_is_undefined) {
  ug_expr_err err;
  ug_expr *e = ug_expr_parse("1 + x", NULL, NULL, &err);
  cr_assert_null(e);
  cr_assert_eq(err.pos, 4);
  cr_assert_not_null(strstr(err.msg, "undefined name 'x'"), "%s", err.msg);
}

/* ---- precedence and associativity ------------------------------------------- */

Test(expr, arithmetic_precedence) {
  cr_assert_eq(ev("1 + 2 * 3"), 7);
  cr_assert_eq(ev("(1+2)*3"), 9);
  cr_assert_eq(ev("2 * 3 + 1"), 7);
  cr_assert_eq(ev("10 - 4 - 3"), 3);    /* left associative */
  cr_assert_eq(ev("100 / 10 / 5"), 2);  /* left associative */
  cr_assert_eq(ev("2 * 7 % 4"), 2);     /* (2*7)%4, not 2*(7%4)=6 */
  cr_assert_eq(ev("7 % 4 * 2"), 6);
  cr_assert_eq(ev("1 + 10 / 3"), 4);
  cr_assert_eq(ev("((((5))))"), 5);
}

Test(expr, division_truncates_like_c) {
  cr_assert_eq(ev("7 / 2"), 3);
  cr_assert_eq(ev("-7 / 2"), -3);
  cr_assert_eq(ev("7 / -2"), -3);
  cr_assert_eq(ev("-7 % 2"), -1);
  cr_assert_eq(ev("7 % -2"), 1);
  cr_assert_eq(ev("-8 / 2"), -4);
}

Test(expr, unary_operators) {
  cr_assert_eq(ev("-5"), -5);
  cr_assert_eq(ev("- - 5"), 5);
  cr_assert_eq(ev("-2 * 3"), -6);
  cr_assert_eq(ev("-2 * -3"), 6);
  cr_assert_eq(ev("2 - -3"), 5);
  cr_assert_eq(ev("!0"), 1);
  cr_assert_eq(ev("!7"), 0);
  cr_assert_eq(ev("!!7"), 1);
  cr_assert_eq(ev("!0 + 1"), 2);    /* ! binds tighter than + */
  cr_assert_eq(ev("!(0 + 1)"), 0);
  cr_assert_eq(ev("-(2 + 3) * 2"), -10);
}

Test(expr, comparisons) {
  cr_assert_eq(ev("3 == 3"), 1);
  cr_assert_eq(ev("3 == 4"), 0);
  cr_assert_eq(ev("3 != 4"), 1);
  cr_assert_eq(ev("3 != 3"), 0);
  cr_assert_eq(ev("3 < 4"), 1);
  cr_assert_eq(ev("4 < 4"), 0);
  cr_assert_eq(ev("4 <= 4"), 1);
  cr_assert_eq(ev("5 <= 4"), 0);
  cr_assert_eq(ev("5 > 4"), 1);
  cr_assert_eq(ev("4 > 4"), 0);
  cr_assert_eq(ev("4 >= 4"), 1);
  cr_assert_eq(ev("3 >= 4"), 0);
  cr_assert_eq(ev("-1 < 0"), 1);
  /* arithmetic binds tighter than comparison, comparison than && */
  cr_assert_eq(ev("2 + 3 == 5"), 1);
  cr_assert_eq(ev("1 + 2 < 4 && 3 > 2"), 1);
  cr_assert_eq(ev("1 + 2 < 3 || 0"), 0);
  cr_assert_eq(ev("(1 < 2) < 3"), 1); /* parenthesized: allowed */
}

Test(expr, logical_operators_and_short_circuit) {
  cr_assert_eq(ev("2 && 3"), 1); /* normalized to 0/1 */
  cr_assert_eq(ev("0 || 7"), 1);
  cr_assert_eq(ev("0 || 0"), 0);
  cr_assert_eq(ev("1 && 0"), 0);
  cr_assert_eq(ev("1 || 0 && 0"), 1); /* && binds tighter than || */
  cr_assert_eq(ev("(1 || 0) && 0"), 0);
  /* the right side is not evaluated when the left decides */
  cr_assert_eq(ev("0 && 1/0"), 0);
  cr_assert_eq(ev("1 || 1/0"), 1);
  cr_assert_eq(ev("0 && 9223372036854775807 + 1"), 0);
  /* and is evaluated when it does not */
  eval_fails("1 && 1/0", 6, "division by zero");
  eval_fails("0 || 1/0", 6, "division by zero");
}

Test(expr, ternary) {
  cr_assert_eq(ev("1 ? 10 : 20"), 10);
  cr_assert_eq(ev("0 ? 10 : 20"), 20);
  cr_assert_eq(ev("5 ? 10 : 20"), 10);
  /* right associative: 1 ? 2 : (0 ? 3 : 4) = 2; left would give (2) ? 3 : 4 = 3 */
  cr_assert_eq(ev("1 ? 2 : 0 ? 3 : 4"), 2);
  cr_assert_eq(ev("0 ? 2 : 0 ? 3 : 4"), 4);
  cr_assert_eq(ev("0 ? 2 : 1 ? 3 : 4"), 3);
  cr_assert_eq(ev("1 ? 0 ? 5 : 6 : 7"), 6);
  /* lower than ||: (0 || 1) ? 10 : 20 */
  cr_assert_eq(ev("0 || 1 ? 10 : 20"), 10);
  cr_assert_eq(ev("1 + 1 ? 3 + 4 : 5"), 7);
  /* only the chosen branch is evaluated */
  cr_assert_eq(ev("1 ? 5 : 1/0"), 5);
  cr_assert_eq(ev("0 ? 1/0 : 6"), 6);
  eval_fails("1 ? 1/0 : 6", 5, "division by zero");
}

/* ---- functions ------------------------------------------------------------------ */

Test(expr, min_max_variadic) {
  cr_assert_eq(ev("min(3, 1)"), 1);
  cr_assert_eq(ev("min(3, 1, 2)"), 1);
  cr_assert_eq(ev("max(3, 1, 2, 9, -4)"), 9);
  cr_assert_eq(ev("min(-3, -1)"), -3);
  cr_assert_eq(ev("max(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)"), 16);
  cr_assert_eq(ev("min(16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1)"), 1);
  cr_assert_eq(ev("max(min(4, 9), 2) * 2"), 8);
  cr_assert_eq(ev("min ( 5 , 6 )"), 5);
}

Test(expr, cdiv_is_ceiling_division) {
  cr_assert_eq(ev("cdiv(7, 2)"), 4);
  cr_assert_eq(ev("cdiv(8, 2)"), 4);
  cr_assert_eq(ev("cdiv(1, 4096)"), 1);
  cr_assert_eq(ev("cdiv(0, 5)"), 0);
  /* negatives round towards +inf: ceil(-3.5) = -3, ceil(-2.25) = -2. For a < 0
   * that is C's truncation; the naive (a + b - 1) / b would give -3 for
   * cdiv(-8, 2) and -1 for cdiv(-9, 4). */
  cr_assert_eq(ev("cdiv(-7, 2)"), -3);
  cr_assert_eq(ev("cdiv(-8, 2)"), -4);
  cr_assert_eq(ev("cdiv(-1, 4)"), 0);
  cr_assert_eq(ev("cdiv(-9, 4)"), -2);
  cr_assert_eq(ev("cdiv(-9, 4)"), ev("-9 / 4"));
  cr_assert_eq(ev("cdiv(9223372036854775807, 2)"), 4611686018427387904LL);
  cr_assert_eq(ev("cdiv(9223372036854775807, 1)"), INT64_MAX);
}

Test(expr, next_pow2_is_pow2_log2) {
  cr_assert_eq(ev("next_pow2(-5)"), 1);
  cr_assert_eq(ev("next_pow2(0)"), 1);
  cr_assert_eq(ev("next_pow2(1)"), 1);
  cr_assert_eq(ev("next_pow2(2)"), 2);
  cr_assert_eq(ev("next_pow2(3)"), 4);
  cr_assert_eq(ev("next_pow2(123)"), 128);
  cr_assert_eq(ev("next_pow2(1024)"), 1024);
  cr_assert_eq(ev("next_pow2(1025)"), 2048);
  cr_assert_eq(ev("next_pow2(4611686018427387904)"), 4611686018427387904LL);
  cr_assert_eq(ev("is_pow2(0)"), 0);
  cr_assert_eq(ev("is_pow2(1)"), 1);
  cr_assert_eq(ev("is_pow2(64)"), 1);
  cr_assert_eq(ev("is_pow2(96)"), 0);
  cr_assert_eq(ev("is_pow2(-4)"), 0);
  cr_assert_eq(ev("is_pow2(4611686018427387904)"), 1);
  cr_assert_eq(ev("log2(1)"), 0);
  cr_assert_eq(ev("log2(2)"), 1);
  cr_assert_eq(ev("log2(3)"), 1);
  cr_assert_eq(ev("log2(1023)"), 9);
  cr_assert_eq(ev("log2(1024)"), 10);
  cr_assert_eq(ev("log2(9223372036854775807)"), 62);
}

Test(expr, align_abs_clamp) {
  cr_assert_eq(ev("align(10, 8)"), 16);
  cr_assert_eq(ev("align(16, 8)"), 16);
  cr_assert_eq(ev("align(0, 64)"), 0);
  cr_assert_eq(ev("align(1, 64)"), 64);
  cr_assert_eq(ev("align(-10, 8)"), -8);
  cr_assert_eq(ev("abs(-5)"), 5);
  cr_assert_eq(ev("abs(5)"), 5);
  cr_assert_eq(ev("abs(0)"), 0);
  cr_assert_eq(ev("abs(-9223372036854775807)"), INT64_MAX);
  cr_assert_eq(ev("clamp(5, 0, 3)"), 3);
  cr_assert_eq(ev("clamp(-1, 0, 3)"), 0);
  cr_assert_eq(ev("clamp(2, 0, 3)"), 2);
  cr_assert_eq(ev("clamp(4, 4, 4)"), 4);
}

Test(expr, functions_over_names) {
  int64_t env[4] = {4097, 1024, 0, 3};
  cr_assert_eq(ev_env("cdiv(a, b)", env), 5);
  cr_assert_eq(ev_env("next_pow2(a)", env), 8192);
  cr_assert_eq(ev_env("min(next_pow2(a), 65536)", env), 8192);
  cr_assert_eq(ev_env("b * ab <= a ? 1 : 2", env), 1);
  cr_assert_eq(ev_env("is_pow2(b) && !is_pow2(a)", env), 1);
}

/* ---- parse errors, with positions ----------------------------------------------- */

Test(expr, error_undefined_name) {
  parse_fails("1 + nope", 4, "undefined name 'nope'");
  parse_fails("nope", 0, "nope");
  parse_fails("a + b + zz * 2", 8, "'zz'");
  /* the resolver's hint is passed on */
  parse_fails("2 * hinted", 4, "did you mean a?");
}

Test(expr, error_name_not_allowed) {
  parse_fails("2*forbidden", 2, "because the test says so");
  parse_fails("forbidden", 0, "'forbidden'");
}

Test(expr, error_unknown_function) {
  parse_fails("1 + foo(2)", 4, "unknown function 'foo'");
  /* a known name is not a function */
  parse_fails("a(1)", 0, "unknown function 'a'");
  parse_fails("MIN(1, 2)", 0, "unknown function 'MIN'");
}

Test(expr, error_wrong_argument_count) {
  parse_fails("cdiv(1)", 0, "cdiv() takes 2 arguments, got 1");
  parse_fails("1 + min(1)", 4, "at least 2");
  parse_fails("next_pow2()", 0, "got 0");
  parse_fails("clamp(1, 2)", 0, "clamp() takes 3 arguments");
  /* too many: at the first argument too many */
  parse_fails("abs(1,2)", 6, "at most 1");
  parse_fails("cdiv(1,2,3)", 9, "at most 2");
  parse_fails("max(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)", 43, "at most 16");
}

Test(expr, error_missing_paren) {
  parse_fails("(1 + 2", 6, "')' expected");
  parse_fails("((1)", 4, "')'");
  parse_fails("min(1, 2", 8, "')'");
  parse_fails("min(1 2)", 6, "')' or ','");
  parse_fails("1 ? 2", 5, "':' expected");
}

Test(expr, error_trailing_garbage) {
  parse_fails("1 + 2 )", 6, "')'");
  parse_fails("3 4", 2, "after the end");
  parse_fails("1 & 2", 2, "'&'");
  parse_fails("1 | 2", 2, "'|'");
  parse_fails("a b", 2, NULL);
}

Test(expr, error_bad_tokens) {
  parse_fails("1 + $", 4, "unexpected character '$'");
  parse_fails("12abc", 2, "integer literal");
  parse_fails("1.5", 1, "integer literal");
  parse_fails("1 +", 3, "unexpected end");
  parse_fails("* 2", 0, NULL);
  parse_fails("()", 1, NULL);
  parse_fails("1 = 1", 2, NULL);
}

Test(expr, error_empty) {
  parse_fails("", 0, "empty expression");
  parse_fails("   \t\n", 0, "empty expression");
}

Test(expr, error_literal_overflow) {
  parse_fails("9223372036854775808", 0, "64 bits");
  parse_fails("1 + 99999999999999999999", 4, "64 bits");
  /* INT64_MIN cannot be written as a literal: its magnitude overflows */
  parse_fails("-9223372036854775808", 1, "64 bits");
}

Test(expr, error_chained_comparison) {
  parse_fails("1 < 2 < 3", 6, "do not chain");
  parse_fails("1 == 1 == 1", 7, "do not chain");
  parse_fails("a <= b > c", 7, "do not chain");
  parse_fails("1 != 2 >= 0", 7, "do not chain");
}

Test(expr, error_nesting_too_deep) {
  char src[2100];
  memset(src, '(', 1000);
  src[1000] = '1';
  memset(src + 1001, ')', 1000);
  src[2001] = '\0';
  ug_expr_err err = {0};
  ug_expr *e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_null(e);
  cr_assert_not_null(strstr(err.msg, "nested too deeply"), "%s", err.msg);
  cr_assert(err.pos > 0 && err.pos < 1000, "error at %zu, expected inside the parentheses", err.pos);
  cr_assert_eq(src[err.pos], '(', "error at %zu, not at a parenthesis", err.pos);

  /* the same depth by unary operators */
  memset(src, '-', 1000);
  src[1000] = '1';
  src[1001] = '\0';
  e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_null(e);
  cr_assert_not_null(strstr(err.msg, "nested too deeply"), "%s", err.msg);

  /* a sensible depth is fine */
  memset(src, '(', 50);
  src[50] = '3';
  memset(src + 51, ')', 50);
  src[101] = '\0';
  cr_assert_eq(ev(src), 3);

  /* a left-leaning chain is as deep as it is long (its evaluation recursed
   * 47,450 frames deep once): 1+0+0+... refused past the depth */
  strcpy(src, "1");
  for (int i = 0; i < 300; i++) strcat(src, "+0");
  e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_null(e);
  cr_assert_not_null(strstr(err.msg, "nested too deeply (more than 200 levels)"), "%s", err.msg);
  src[2 * 150 + 1] = '\0';
  cr_assert_eq(ev(src), 1);
}

Test(expr, error_too_long) {
  static char src[UG_EXPR_MAX_LEN + 2];
  memset(src, ' ', sizeof src - 2);
  src[0] = '7';
  src[sizeof src - 2] = '\0';
  cr_assert_eq(ev(src), 7, "%d characters are fine", UG_EXPR_MAX_LEN);
  src[sizeof src - 2] = ' ';
  ug_expr_err err = {0};
  cr_assert_null(ug_expr_parse(src, resolve, NULL, &err));
  cr_assert_not_null(strstr(err.msg, "longer than 4096 characters"), "%s", err.msg);
}

Test(expr, errors_without_err_struct_do_not_crash) {
  cr_assert_null(ug_expr_parse("1 +", resolve, NULL, NULL));
  cr_assert_null(ug_expr_parse("", resolve, NULL, NULL));
  ug_expr *e = ug_expr_parse("1 / 0", resolve, NULL, NULL);
  cr_assert_not_null(e);
  int64_t out;
  cr_assert_eq(ug_expr_eval(e, NULL, &out, NULL), -1);
  ug_expr_free(e);
  ug_expr_free(NULL);
}

/* ---- evaluation errors ------------------------------------------------------------ */

Test(expr, eval_division_by_zero) {
  int64_t env[4] = {7, 0, 0, 0};
  eval_fails_env("a / b", env, 2, "division by zero");
  eval_fails_env("a % b", env, 2, "division by zero");
  eval_fails("1 + 5 / (3 - 3)", 6, "division by zero");
}

Test(expr, eval_overflow) {
  int64_t env[4] = {INT64_MAX, INT64_MIN, 2, -1};
  eval_fails_env("a + 1", env, 2, "overflow");
  eval_fails_env("1 + a", env, 2, "overflow");
  eval_fails_env("b - 1", env, 2, "overflow");
  eval_fails_env("0 - b", env, 2, "overflow");
  eval_fails_env("a * c", env, 2, "overflow");
  eval_fails_env("b * ab", env, 2, "overflow"); /* INT64_MIN * -1 */
  eval_fails_env("-b", env, 0, "overflow");
  eval_fails_env("1 + -b", env, 4, "overflow");
  eval_fails_env("b / ab", env, 2, "overflow"); /* INT64_MIN / -1 */
  eval_fails_env("b % ab", env, 2, NULL);        /* INT64_MIN % -1 traps in C */
  eval_fails_env("abs(b)", env, 0, "overflow");
  eval_fails("9223372036854775807 + 1", 20, "overflow");
  eval_fails("3037000500 * 3037000500", 11, "overflow");
  eval_fails_env("b * c", env, 2, "overflow");   /* INT64_MIN * 2 */
  eval_fails_env("ab * b", env, 3, "overflow");  /* -1 * INT64_MIN */
  eval_fails_env("c * -a", env, 2, "overflow");  /* 2 * -INT64_MAX */
  eval_fails("-3037000500 * 3037000500", 12, "overflow");
  eval_fails_env("ab - a - 1", env, 7, "overflow"); /* INT64_MIN - 1 */
  /* just inside the range is fine */
  cr_assert_eq(ev_env("a - 1 + 1", env), INT64_MAX);
  cr_assert_eq(ev_env("b + 1 - 1", env), INT64_MIN);
  cr_assert_eq(ev_env("-a", env), -INT64_MAX);
  cr_assert_eq(ev("3037000499 * 3037000499"), 9223372030926249001LL);
  cr_assert_eq(ev_env("a * ab", env), -INT64_MAX);
  cr_assert_eq(ev("-4611686018427387904 * 2"), INT64_MIN);
  cr_assert_eq(ev("2 * -4611686018427387904"), INT64_MIN);
  cr_assert_eq(ev_env("ab - a", env), INT64_MIN);
}

Test(expr, eval_function_domain_errors) {
  eval_fails("cdiv(5, 0)", 0, "positive");
  eval_fails("cdiv(5, -2)", 0, "positive");
  eval_fails("1 + cdiv(5, 1 - 1)", 4, "cdiv(5, 0)");
  eval_fails("align(5, 0)", 0, "positive");
  eval_fails("align(9223372036854775807, 2)", 0, "overflow");
  eval_fails("log2(0)", 0, "log2(0)");
  eval_fails("log2(-4)", 0, ">= 1");
  eval_fails("next_pow2(4611686018427387905)", 0, "overflow");
  eval_fails("clamp(5, 10, 1)", 0, "lo > hi");
}

/* ---- slots and source ---------------------------------------------------------------- */

Test(expr, slots_are_distinct_in_first_use_order) {
  ug_expr_err err;
  ug_expr *e = ug_expr_parse("c + a * c + b", resolve, NULL, &err);
  cr_assert_not_null(e);
  const int *slots = NULL;
  size_t n = ug_expr_slots(e, &slots);
  cr_assert_eq(n, 3);
  cr_assert_eq(slots[0], 2);
  cr_assert_eq(slots[1], 0);
  cr_assert_eq(slots[2], 1);
  ug_expr_free(e);

  e = ug_expr_parse("max(ab, b, ab) ? b : ab", resolve, NULL, &err);
  cr_assert_not_null(e);
  n = ug_expr_slots(e, &slots);
  cr_assert_eq(n, 2);
  cr_assert_eq(slots[0], 3);
  cr_assert_eq(slots[1], 1);
  ug_expr_free(e);

  e = ug_expr_parse("1 + 2", resolve, NULL, &err);
  cr_assert_not_null(e);
  cr_assert_eq(ug_expr_slots(e, &slots), 0);
  ug_expr_free(e);
}

Test(expr, source_is_kept_verbatim) {
  const char *src = "  cdiv( a ,b )\t";
  ug_expr_err err;
  ug_expr *e = ug_expr_parse(src, resolve, NULL, &err);
  cr_assert_not_null(e);
  cr_assert_str_eq(ug_expr_source(e), src);
  cr_assert_neq(ug_expr_source(e), src, "the source must be copied, not borrowed");
  ug_expr_free(e);
}
