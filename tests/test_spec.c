/* Unit tests of the spec loader (gen/spec.h), variants (gen/variant.h), the
 * UB plan (gen/ubplan.h), binding (gen/bind.h) and the default strategy
 * (gen/strategy.h), on the shipped rms_norm spec and a small inline spec. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/bind.h"
#include "../gen/spec.h"
#include "../gen/strategy.h"
#include "../gen/ubplan.h"
#include "../gen/variant.h"

#define RMS_NORM_SPEC UBGEN_SRC "/specs/rms_norm.json"

/* ---- a small spec, one JSON token group per line so positions can be checked ---- */

static const char TOY[] =
    "{\n"
    "  \"ubgen_spec\": 1,\n"
    "  \"kernel\": \"toy\",\n"
    "  \"description\": \"unit test spec\",\n"
    "  \"shape\": [\"rows\", \"cols\"],\n"
    "  \"dtypes\": [\"f32\", \"bf16\"],\n"
    "  \"axes\": [\n"
    "    {\"name\": \"BLOCK_D\", \"tag\": \"d\", \"pow2\": [16, 256], \"tiles\": \"cols\"},\n"
    "    {\"name\": \"BLOCK_M\", \"tag\": \"m\", \"values\": [1, 2, 4], \"default\": \"64 / BLOCK_D\"}\n"
    "  ],\n"
    "  \"tiled\": [false, true],\n"
    "  \"passes\": {\n"
    "    \"fwd\": {\n"
    "      \"template\": \"toy_fwd.c.tmpl\",\n"
    "      \"args\": [\n"
    "        {\"name\": \"x\", \"type\": \"T\", \"role\": \"in\", \"shape\": [\"rows\", \"cols\"]},\n"
    "        {\"name\": \"w\", \"type\": \"T\", \"role\": \"in\", \"shape\": [\"cols\"], \"optional\": true},\n"
    "        {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\", \"shape\": [\"rows\", \"cols\"]},\n"
    "        {\"name\": \"rows\", \"type\": \"int\", \"min\": 0},\n"
    "        {\"name\": \"cols\", \"type\": \"int\", \"min\": 1},\n"
    "        {\"name\": \"eps\", \"type\": \"float\", \"default\": 1e-6}\n"
    "      ],\n"
    "      \"derived\": [\n"
    "        {\"name\": \"groups\", \"value\": \"cdiv(rows, BLOCK_M)\"},\n"
    "        {\"name\": \"half\", \"value\": \"groups / 2\"},\n"
    "        {\"name\": \"per\", \"value\": \"4096 / cols\"}\n"
    "      ],\n"
    "      \"constraints\": [\n"
    "        {\"require\": \"tiled || BLOCK_D >= cols\", \"why\": \"a non-tiled variant holds a whole row\"},\n"
    "        {\"require\": \"!tiled || BLOCK_M == 1\"}\n"
    "      ],\n"
    "      \"stages\": [\n"
    "        {\"name\": \"main\", \"grid\": \"groups\"}\n"
    "      ],\n"
    "      \"ub\": [\n"
    "        {\"name\": \"x_tile\", \"type\": \"f32\", \"count\": \"BLOCK_M * BLOCK_D\"},\n"
    "        {\"name\": \"three\", \"type\": \"f32\", \"count\": \"3\"},\n"
    "        {\"name\": \"t_tile\", \"type\": \"T\", \"count\": \"BLOCK_D\"},\n"
    "        {\"name\": \"flags\", \"type\": \"u8\", \"count\": \"tiled ? 0 : 5\"}\n"
    "      ]\n"
    "    }\n"
    "  }\n"
    "}\n";

/* ---- helpers ------------------------------------------------------------------- */

/* base with the only occurrence of `from` replaced by `to`; malloc'd */
static char *subst(const char *base, const char *from, const char *to) {
  const char *at = strstr(base, from);
  cr_assert_not_null(at, "\"%s\" is not in the text", from);
  cr_assert_null(strstr(at + 1, from), "\"%s\" occurs more than once", from);
  size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  cr_assert_not_null(out);
  snprintf(out, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
  return out;
}

/* 1-based line and column of byte `off` of the only occurrence of needle */
static ug_loc loc_in(const char *text, const char *needle, size_t off) {
  const char *at = strstr(text, needle);
  cr_assert_not_null(at, "\"%s\" is not in the text", needle);
  cr_assert_null(strstr(at + 1, needle), "\"%s\" occurs more than once", needle);
  ug_loc l = {1, 1};
  for (const char *c = text; c < at + off; c++) {
    if (*c == '\n') {
      l.line++;
      l.col = 1;
    } else {
      l.col++;
    }
  }
  return l;
}

static ug_kernel *parse(const char *text, ug_diag *d) {
  return ug_spec_parse("toy.json", NULL, text, strlen(text), d);
}

static ug_kernel *parse_ok(const char *text) {
  ug_diag d;
  ug_kernel *k = parse(text, &d);
  cr_assert_not_null(k, "spec rejected: %s:%d:%d: %s", d.file, d.at.line, d.at.col, d.text);
  return k;
}

/* The spec `text` must be rejected at byte `off` of `needle` with a message
 * containing `part`. */
static void rejects_at(const char *text, const char *needle, size_t off, const char *part) {
  ug_loc want = loc_in(text, needle, off);
  ug_diag d;
  ug_kernel *k = parse(text, &d);
  if (k) ug_spec_free(k);
  cr_assert_null(k, "the spec should be rejected (%s)", part);
  cr_assert_neq(d.text[0], '\0');
  cr_assert_str_eq(d.file, "toy.json");
  cr_assert(d.at.line == want.line && d.at.col == want.col, "at %d:%d, expected %d:%d (%s)", d.at.line, d.at.col,
            want.line, want.col, d.text);
  cr_assert_not_null(strstr(d.text, part), "message \"%s\" lacks \"%s\"", d.text, part);
}

/* TOY with `from` replaced by `to`, rejected at byte off of `needle` (in the
 * modified text). */
static void toy_rejects(const char *from, const char *to, const char *needle, size_t off, const char *part) {
  char *text = subst(TOY, from, to);
  rejects_at(text, needle, off, part);
  free(text);
}

static ug_kernel *load_rms_norm(void) {
  ug_diag d;
  ug_kernel *k = ug_spec_load_file(RMS_NORM_SPEC, &d);
  cr_assert_not_null(k, "%s:%d:%d: %s", d.file, d.at.line, d.at.col, d.text);
  return k;
}

static const ug_variant *by_name(const ug_variant *vs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(vs[i].name, name) == 0) return &vs[i];
  return NULL;
}

static int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

/* ---- the shipped spec ---------------------------------------------------------------- */

Test(spec, rms_norm_loads) {
  ug_kernel *k = load_rms_norm();
  cr_assert_str_eq(k->name, "rms_norm");
  cr_assert_str_eq(k->path, RMS_NORM_SPEC);
  cr_assert_str_eq(k->dir, UBGEN_SRC "/specs");
  cr_assert_eq(k->npasses, 2);
  cr_assert_eq(k->nshape, 2);
  cr_assert_str_eq(k->shape[0], "rows");
  cr_assert_str_eq(k->shape[1], "cols");
  cr_assert(k->safety_margin == 0.0);
  cr_assert_eq(k->hash, ug_fnv1a(k->text, k->text_len));
  cr_assert_eq(strlen(k->text), k->text_len);
  const ug_pass *fwd = ug_spec_pass(k, "fwd"), *bwd = ug_spec_pass(k, "bwd");
  cr_assert_not_null(fwd);
  cr_assert_not_null(bwd);
  cr_assert_null(ug_spec_pass(k, "nope"));
  cr_assert_eq(fwd->kernel, k);
  cr_assert_str_eq(fwd->template_name, "rms_norm_fwd.c.tmpl");
  cr_assert_str_eq(bwd->template_name, "rms_norm_bwd.c.tmpl");
  int ndt = 0;
  for (int dt = 0; dt < UG_NDTYPES; dt++) ndt += fwd->dtypes[dt] + bwd->dtypes[dt];
  cr_assert_eq(ndt, 6, "3 dtypes in each pass");
  cr_assert_eq(fwd->naxes, 2);
  cr_assert_str_eq(fwd->axes[0].name, "BLOCK_D");
  cr_assert_str_eq(fwd->axes[0].tag, "d");
  cr_assert_eq(fwd->axes[0].nvalues, 13);
  cr_assert_eq(fwd->axes[0].values[0], 16);
  cr_assert_eq(fwd->axes[0].values[12], 65536);
  cr_assert_eq(fwd->axes[0].tiles, ug_pass_arg(fwd, "cols"));
  cr_assert_str_eq(fwd->axes[1].name, "BLOCK_M");
  cr_assert_eq(fwd->axes[1].nvalues, 7);
  cr_assert_eq(fwd->axes[1].values[6], 64);
  cr_assert_eq(fwd->axes[1].tiles, -1);
  cr_assert_not_null(fwd->axes[1].dflt);
  cr_assert_str_eq(ug_expr_source(fwd->axes[1].dflt), "2048 / BLOCK_D");
  cr_assert(fwd->has_tiled && fwd->tiled_values[0] && fwd->tiled_values[1]);
  cr_assert_eq(fwd->nub, 2);
  cr_assert_eq(bwd->nub, 5);
  cr_assert_eq(bwd->nws, 1);
  cr_assert_eq(fwd->nconstraints, 3);
  cr_assert_eq(bwd->nchecks, 1);
  cr_assert_eq(bwd->nderived, 3); /* row_groups, group_rows, stream */
  cr_assert_eq(fwd->nderived, 3);
  cr_assert_eq(bwd->nstages, 2);
  cr_assert_eq(fwd->ncases, 7);
  /* constraints on axes alone filter the enumeration; those on the shape do not */
  cr_assert(!fwd->constraints[0].variant_only);
  cr_assert(fwd->constraints[1].variant_only);
  cr_assert(fwd->constraints[2].variant_only);
  cr_assert_str_eq(fwd->constraints[0].why, "a non-tiled variant holds the whole row in UB");
  ug_spec_free(k);
}

Test(spec, rms_norm_args_and_symbols) {
  ug_kernel *k = load_rms_norm();
  const ug_pass *p = ug_spec_pass(k, "fwd");
  cr_assert_eq(p->nargs, 9);
  int x = ug_pass_arg(p, "x"), w = ug_pass_arg(p, "w"), y = ug_pass_arg(p, "y"), eps = ug_pass_arg(p, "eps");
  int casting = ug_pass_arg(p, "casting"), cols = ug_pass_arg(p, "cols");
  cr_assert_eq(x, 0);
  cr_assert_eq(eps, 6);
  cr_assert_eq(ug_pass_arg(p, "nope"), -1);
  cr_assert_eq(p->args[x].kind, UG_ARG_TENSOR);
  cr_assert_eq(p->args[x].elem, UG_ELEM_T);
  cr_assert_eq(p->args[x].rank, 2);
  cr_assert(!p->args[x].optional);
  cr_assert(p->args[w].optional);
  cr_assert_eq(p->args[y].role, UG_ROLE_OUT);
  cr_assert_eq(p->args[y].nmay_alias, 1);
  cr_assert_str_eq(p->args[y].may_alias[0], "x");
  cr_assert_eq(p->args[ug_pass_arg(p, "rstd")].elem, UG_ELEM_F32);
  cr_assert_eq(p->args[eps].kind, UG_ARG_FLOAT);
  cr_assert(p->args[eps].has_dflt && p->args[eps].dflt == 1e-6);
  cr_assert_eq(p->args[cols].kind, UG_ARG_INT);
  cr_assert(p->args[cols].has_min && p->args[cols].min == 1 && !p->args[cols].has_max);
  cr_assert_eq(p->args[casting].nvalues, 3);
  cr_assert_str_eq(p->args[casting].value_names[1], "gemma");
  /* symbols: axes, tiled, dtype_bytes, then int args and has_<tensor> in arg order */
  cr_assert_eq(ug_pass_sym(p, "BLOCK_D"), 0);
  cr_assert_eq(ug_pass_sym(p, "BLOCK_M"), 1);
  cr_assert_eq(ug_pass_sym(p, "tiled"), 2);
  cr_assert_eq(p->sym_tiled, 2);
  cr_assert_eq(ug_pass_sym(p, "dtype_bytes"), 3);
  cr_assert_eq(ug_pass_sym(p, "has_x"), 4);
  cr_assert_eq(ug_pass_sym(p, "has_w"), 5);
  cr_assert_eq(ug_pass_sym(p, "rows"), 8);
  cr_assert_eq(ug_pass_sym(p, "cols"), 9);
  cr_assert_eq(p->sym_of_arg[cols], 9);
  cr_assert_eq(p->sym_of_arg[w], 5);
  cr_assert_eq(p->sym_of_arg[eps], -1);
  cr_assert_eq(ug_pass_sym(p, "eps"), -1, "floats are not symbols");
  cr_assert_eq(ug_pass_sym(p, "x"), -1, "tensors are not symbols");
  cr_assert_eq(p->syms[ug_pass_sym(p, "has_w")].kind, UG_SYM_HAS);
  const ug_pass *b = ug_spec_pass(k, "bwd");
  int rg = ug_pass_sym(b, "row_groups");
  cr_assert_geq(rg, 0);
  cr_assert_eq(b->syms[rg].kind, UG_SYM_DERIVED);
  cr_assert_eq(b->sym_of_derived_base, rg);
  cr_assert_eq(ug_pass_sym(b, "group_rows"), rg + 1);
  ug_spec_free(k);
}

Test(spec, load_file_errors) {
  ug_diag d;
  cr_assert_null(ug_spec_load_file("/nonexistent/dir/x.json", &d));
  cr_assert_str_eq(d.file, "/nonexistent/dir/x.json");
  cr_assert_not_null(strstr(d.text, "cannot open"), "%s", d.text);
  /* a directory is not a spec */
  cr_assert_null(ug_spec_load_file(UBGEN_SRC "/specs", &d));
  cr_assert_neq(d.text[0], '\0');
}

Test(spec, small_helpers) {
  cr_assert_str_eq(ug_dtype_name(0), "f32");
  cr_assert_str_eq(ug_dtype_name(1), "f16");
  cr_assert_str_eq(ug_dtype_name(2), "bf16");
  cr_assert_str_eq(ug_dtype_name(3), "?");
  cr_assert_str_eq(ug_dtype_name(-1), "?");
  cr_assert_eq(ug_dtype_parse("bf16"), 2);
  cr_assert_eq(ug_dtype_parse("f32"), 0);
  cr_assert_eq(ug_dtype_parse("F32"), -1);
  cr_assert_eq(ug_dtype_parse("f64"), -1);
  cr_assert_eq(ug_dtype_parse(""), -1);
  cr_assert_eq(ug_dtype_bytes(0), 4);
  cr_assert_eq(ug_dtype_bytes(1), 2);
  cr_assert_eq(ug_dtype_bytes(2), 2);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_T, 0), 4);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_T, 2), 2);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_F32, 2), 4);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_I64, 0), 8);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_I32, 0), 4);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_U8, 0), 1);
  cr_assert_eq(ug_elem_bytes(UG_ELEM_BF16, 0), 2);
  cr_assert_str_eq(ug_elem_name(UG_ELEM_I64), "i64");
  cr_assert_str_eq(ug_elem_name(UG_ELEM_T), "T");
  cr_assert_str_eq(ug_elem_ctype(UG_ELEM_T, 0), "float");
  cr_assert_str_eq(ug_elem_ctype(UG_ELEM_T, 2), "ubg_u16");
  /* FNV-1a 64 test vectors */
  cr_assert_eq(ug_fnv1a("", 0), 0xcbf29ce484222325ull);
  cr_assert_eq(ug_fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
  cr_assert_eq(ug_fnv1a("foobar", 6), 0x85944171f73967e8ull);
  cr_assert(ug_is_ident("BLOCK_D"));
  cr_assert(ug_is_ident("_x1"));
  cr_assert(!ug_is_ident("1x"));
  cr_assert(!ug_is_ident(""));
  cr_assert(!ug_is_ident(NULL));
  cr_assert(!ug_is_ident("x; abort()"));
  cr_assert(!ug_is_ident("a b"));
  char s[70];
  memset(s, 'z', 64);
  s[64] = '\0';
  cr_assert(ug_is_ident(s));
  s[64] = 'z';
  s[65] = '\0';
  cr_assert(!ug_is_ident(s));
}

/* ---- variants -------------------------------------------------------------------- */

Test(spec, rms_norm_enumeration) {
  ug_kernel *k = load_rms_norm();
  const ug_pass *p = ug_spec_pass(k, "fwd");
  ug_variant *vs;
  int n;
  ug_diag d;
  cr_assert_eq(ug_enumerate(p, 2, &vs, &n, &d), 0, "%s", d.text);
  /* non-tiled: BLOCK_M * BLOCK_D <= 2048 or BLOCK_M == 1:
   * d16 7, d32 7, d64 6, d128 5, d256 4, d512 3, d1024 2, d2048..d65536 1 each (6) = 40;
   * tiled: BLOCK_M == 1, 13 block sizes */
  cr_assert_eq(n, 53);
  /* stable order: dtype, tiled, then the axes, last fastest */
  cr_assert_str_eq(vs[0].name, "rms_norm_fwd_bf16_d16_m1_n");
  cr_assert_str_eq(vs[1].name, "rms_norm_fwd_bf16_d16_m2_n");
  cr_assert_str_eq(vs[6].name, "rms_norm_fwd_bf16_d16_m64_n");
  cr_assert_str_eq(vs[7].name, "rms_norm_fwd_bf16_d32_m1_n");
  cr_assert_str_eq(vs[39].name, "rms_norm_fwd_bf16_d65536_m1_n");
  cr_assert_str_eq(vs[40].name, "rms_norm_fwd_bf16_d16_m1_t");
  cr_assert_str_eq(vs[52].name, "rms_norm_fwd_bf16_d65536_m1_t");
  cr_assert_not_null(by_name(vs, n, "rms_norm_fwd_bf16_d1024_m2_n"));
  cr_assert_not_null(by_name(vs, n, "rms_norm_fwd_bf16_d1024_m1_t"));
  cr_assert_null(by_name(vs, n, "rms_norm_fwd_bf16_d1024_m4_n"), "1024 * 4 > 2048");
  cr_assert_null(by_name(vs, n, "rms_norm_fwd_bf16_d1024_m2_t"), "tiled needs BLOCK_M == 1");
  cr_assert_null(by_name(vs, n, "rms_norm_fwd_f32_d1024_m2_n"), "only bf16 asked for");
  for (int i = 0; i < n; i++) {
    const ug_variant *v = &vs[i];
    int64_t bd = v->pt.axis[0], bm = v->pt.axis[1];
    cr_assert_eq(v->pass, p);
    cr_assert_eq(v->pt.dtype, 2);
    cr_assert(!(v->pt.tiled == 1 && bm > 1), "%s: tiled with BLOCK_M > 1", v->name);
    cr_assert(!(v->pt.tiled == 0 && bm != 1 && bm * bd > 2048), "%s: row block over 2048", v->name);
    /* the name is exactly <kernel>_<pass>_<dtype>_d<BLOCK_D>_m<BLOCK_M>_<t|n> */
    char want[160];
    snprintf(want, sizeof want, "rms_norm_fwd_bf16_d%lld_m%lld_%c", (long long)bd, (long long)bm,
             v->pt.tiled ? 't' : 'n');
    cr_assert_str_eq(v->name, want);
    for (int j = 0; j < i; j++) cr_assert_str_neq(vs[j].name, v->name, "duplicate name");
  }
  free(vs);
  /* every dtype */
  cr_assert_eq(ug_enumerate(p, -1, &vs, &n, &d), 0);
  cr_assert_eq(n, 3 * 53);
  cr_assert_str_eq(vs[0].name, "rms_norm_fwd_f32_d16_m1_n");
  cr_assert_str_eq(vs[53].name, "rms_norm_fwd_f16_d16_m1_n");
  cr_assert_str_eq(vs[106].name, "rms_norm_fwd_bf16_d16_m1_n");
  free(vs);
  ug_spec_free(k);
}

Test(spec, find_variant) {
  ug_kernel *k = load_rms_norm();
  const ug_pass *p = ug_spec_pass(k, "bwd");
  ug_variant v;
  ug_diag d;
  cr_assert_eq(ug_find_variant(p, "rms_norm_bwd_f16_d2048_m1_t", &v, &d), 0, "%s", d.text);
  cr_assert_str_eq(v.name, "rms_norm_bwd_f16_d2048_m1_t");
  cr_assert_eq(v.pt.dtype, 1);
  cr_assert_eq(v.pt.axis[0], 2048);
  cr_assert_eq(v.pt.axis[1], 1);
  cr_assert_eq(v.pt.tiled, 1);
  cr_assert_eq(v.pass, p);
  cr_assert_eq(ug_find_variant(p, "rms_norm_bwd_f16_d2048_m2_t", &v, &d), -1);
  cr_assert_not_null(strstr(d.text, "no variant named \"rms_norm_bwd_f16_d2048_m2_t\""), "%s", d.text);
  cr_assert_not_null(strstr(d.text, "for example rms_norm_bwd_f32_d16_m1_n"), "%s", d.text);
  cr_assert_eq(ug_find_variant(p, "rms_norm_fwd_f16_d2048_m1_t", &v, &d), -1, "a name of the other pass");
  cr_assert_eq(ug_find_variant(p, "", &v, &d), -1);
  ug_spec_free(k);
}

Test(spec, variant_name_and_point_env) {
  ug_kernel *k = load_rms_norm();
  const ug_pass *p = ug_spec_pass(k, "fwd");
  ug_point pt = {0, {512, 4}, 0};
  char name[160];
  ug_variant_name(p, &pt, name, sizeof name);
  cr_assert_str_eq(name, "rms_norm_fwd_f32_d512_m4_n");
  pt.tiled = 1;
  ug_variant_name(p, &pt, name, sizeof name);
  cr_assert_str_eq(name, "rms_norm_fwd_f32_d512_m4_t");
  int64_t env[32];
  for (int i = 0; i < 32; i++) env[i] = -7;
  pt.dtype = 2;
  ug_point_env(p, &pt, env);
  cr_assert_eq(env[ug_pass_sym(p, "BLOCK_D")], 512);
  cr_assert_eq(env[ug_pass_sym(p, "BLOCK_M")], 4);
  cr_assert_eq(env[ug_pass_sym(p, "tiled")], 1);
  cr_assert_eq(env[ug_pass_sym(p, "dtype_bytes")], 2);
  cr_assert_eq(env[ug_pass_sym(p, "cols")], -7, "other slots are left as they are");
  ug_spec_free(k);

  /* a pass without a tiled axis has no _t/_n suffix */
  ug_diag d;
  k = ug_spec_load_file(UBGEN_SRC "/tests/specs/guard_probe.json", &d);
  cr_assert_not_null(k, "%s", d.text);
  p = ug_spec_pass(k, "fwd");
  cr_assert(!p->has_tiled);
  cr_assert_eq(p->sym_tiled, -1);
  ug_variant *vs;
  int n;
  cr_assert_eq(ug_enumerate(p, -1, &vs, &n, &d), 0);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(vs[0].name, "guard_probe_fwd_f32_d16");
  cr_assert_eq(vs[0].pt.tiled, -1);
  cr_assert_eq(vs[0].footprint, 64);
  free(vs);
  ug_spec_free(k);
}

/* ---- UB plan --------------------------------------------------------------------- */

Test(spec, rms_norm_footprints_by_hand) {
  ug_kernel *k = load_rms_norm();
  ug_variant v;
  ug_diag d;
  const ug_pass *fwd = ug_spec_pass(k, "fwd"), *bwd = ug_spec_pass(k, "bwd");
  /* x_tile f32 [1 * 4096] + w_tile f32 [4096] */
  cr_assert_eq(ug_find_variant(fwd, "rms_norm_fwd_f32_d4096_m1_n", &v, &d), 0);
  cr_assert_eq(v.footprint, 4096 * 4 + 4096 * 4);
  cr_assert_eq(v.footprint, 32768);
  cr_assert_eq(v.ub[0].offset, 0);
  cr_assert_eq(v.ub[0].count, 4096);
  cr_assert_eq(v.ub[0].bytes, 16384);
  cr_assert_eq(v.ub[1].offset, 16384);
  /* the buffers are f32 whatever the dtype */
  cr_assert_eq(ug_find_variant(fwd, "rms_norm_fwd_bf16_d4096_m1_n", &v, &d), 0);
  cr_assert_eq(v.footprint, 32768);
  cr_assert_eq(ug_find_variant(fwd, "rms_norm_fwd_f16_d128_m16_n", &v, &d), 0);
  cr_assert_eq(v.footprint, 16 * 128 * 4 + 128 * 4);
  cr_assert_eq(v.ub[1].offset, 8192);
  /* bwd: x_tile [tiled ? BLOCK_D : 0], m_tile [tiled ? 0 : BLOCK_M * BLOCK_D],
   * dy_tile [tiled ? BLOCK_D : 0], w_tile [BLOCK_D], dw_acc [tiled ? 0 : BLOCK_D] */
  cr_assert_eq(ug_find_variant(bwd, "rms_norm_bwd_bf16_d1024_m2_n", &v, &d), 0);
  cr_assert_eq(v.footprint, 8192 + 4096 + 4096);
  cr_assert_eq(v.ub[0].bytes, 0);
  cr_assert_eq(v.ub[1].offset, 0);
  cr_assert_eq(v.ub[1].bytes, 8192);
  cr_assert_eq(v.ub[2].bytes, 0);
  cr_assert_eq(v.ub[3].offset, 8192);
  cr_assert_eq(v.ub[4].offset, 12288);
  cr_assert_eq(ug_find_variant(bwd, "rms_norm_bwd_bf16_d1024_m1_t", &v, &d), 0);
  cr_assert_eq(v.footprint, 4096 * 3);
  cr_assert_eq(v.ub[1].count, 0);
  cr_assert_eq(v.ub[1].bytes, 0);
  cr_assert_eq(v.ub[2].offset, 4096);
  cr_assert_eq(v.ub[3].offset, 8192);
  cr_assert_eq(v.ub[4].count, 0);
  cr_assert_eq(v.ub[4].offset, 12288);
  ug_spec_free(k);
}

Test(spec, layout_invariants_on_every_variant) {
  ug_kernel *k = load_rms_norm();
  for (int pi = 0; pi < k->npasses; pi++) {
    const ug_pass *p = &k->passes[pi];
    ug_variant *vs;
    int n;
    ug_diag d;
    cr_assert_eq(ug_enumerate(p, -1, &vs, &n, &d), 0);
    for (int i = 0; i < n; i++) {
      int64_t off = 0;
      for (int b = 0; b < p->nub; b++) {
        cr_assert_eq(vs[i].ub[b].offset % 64, 0, "%s buffer %d", vs[i].name, b);
        cr_assert_eq(vs[i].ub[b].offset, off, "%s buffer %d: buffers in declaration order", vs[i].name, b);
        cr_assert_eq(vs[i].ub[b].bytes,
                     vs[i].ub[b].count * (int64_t)ug_elem_bytes(p->ub[b].elem, vs[i].pt.dtype));
        off += align64(vs[i].ub[b].bytes);
      }
      cr_assert_eq(vs[i].footprint, off, "%s", vs[i].name);
    }
    free(vs);
  }
  ug_spec_free(k);
}

Test(spec, toy_footprints_align_each_buffer) {
  ug_kernel *k = parse_ok(TOY);
  const ug_pass *p = ug_spec_pass(k, "fwd");
  ug_variant v;
  ug_diag d;
  /* x_tile f32 2*64 = 512; three f32 = 12 -> 64; t_tile f32 64 = 256; flags u8 5 -> 64 */
  cr_assert_eq(ug_find_variant(p, "toy_fwd_f32_d64_m2_n", &v, &d), 0, "%s", d.text);
  cr_assert_eq(v.ub[1].bytes, 12);
  cr_assert_eq(v.ub[3].bytes, 5);
  cr_assert_eq(v.ub[0].offset, 0);
  cr_assert_eq(v.ub[1].offset, 512);
  cr_assert_eq(v.ub[2].offset, 576);
  cr_assert_eq(v.ub[3].offset, 832);
  cr_assert_eq(v.footprint, 896);
  /* bf16 tiled d16: x_tile 64; three 64; t_tile bf16 16 = 32 -> 64; flags 0 -> 0 */
  cr_assert_eq(ug_find_variant(p, "toy_fwd_bf16_d16_m1_t", &v, &d), 0, "%s", d.text);
  cr_assert_eq(v.ub[2].bytes, 32);
  cr_assert_eq(v.ub[3].count, 0);
  cr_assert_eq(v.ub[3].offset, 192);
  cr_assert_eq(v.footprint, 192);
  /* ug_plan on a point of its own */
  ug_point pt = {0, {256, 4}, 0};
  memset(&v, 0, sizeof v);
  cr_assert_eq(ug_plan(p, &pt, &v, &d), 0);
  cr_assert_eq(v.footprint, 4096 + 64 + 1024 + 64);
  ug_spec_free(k);
}

Test(spec, budget_and_margins) {
  ug_kernel *k = load_rms_norm();
  ug_budget b = {196608, 0};
  cr_assert(ug_budget_margin(&b, k) == 0.90);
  cr_assert_eq(ug_budget_usable(&b, k), 176947);
  cr_assert_eq(ug_budget_usable(&b, NULL), 176947);
  b.margin = 1.0;
  cr_assert_eq(ug_budget_usable(&b, k), 196608);
  b.margin = 0.5;
  cr_assert_eq(ug_budget_usable(&b, k), 98304);
  ug_spec_free(k);

  /* a spec's own margin serves when the budget has none; an explicit one wins */
  char *text = subst(TOY, "  \"description\": \"unit test spec\",\n",
                     "  \"description\": \"unit test spec\",\n  \"safety_margin\": 0.75,\n");
  k = parse_ok(text);
  free(text);
  cr_assert(k->safety_margin == 0.75);
  b.margin = 0;
  cr_assert(ug_budget_margin(&b, k) == 0.75);
  cr_assert_eq(ug_budget_usable(&b, k), 147456);
  b.margin = 0.9;
  cr_assert_eq(ug_budget_usable(&b, k), 176947);
  b.ub_bytes = 1000;
  b.margin = 0.333;
  cr_assert_eq(ug_budget_usable(&b, k), 333);
  ug_spec_free(k);

  /* the spec's margin must be in (0, 1] */
  toy_rejects("  \"description\": \"unit test spec\",\n",
              "  \"description\": \"unit test spec\",\n  \"safety_margin\": 1.5,\n", "1.5", 0, "outside (0, 1]");
  toy_rejects("  \"description\": \"unit test spec\",\n",
              "  \"description\": \"unit test spec\",\n  \"safety_margin\": 0,\n", "0,\n  \"shape", 0, "outside (0, 1]");
}

Test(spec, fits_is_footprint_within_usable) {
  ug_kernel *k = load_rms_norm();
  const ug_pass *p = ug_spec_pass(k, "fwd");
  ug_variant v;
  ug_diag d;
  cr_assert_eq(ug_find_variant(p, "rms_norm_fwd_f32_d16384_m1_t", &v, &d), 0);
  cr_assert_eq(v.footprint, 131072);
  ug_budget b = {196608, 0};
  cr_assert(ug_fits(&v, &b));
  b = (ug_budget){131072, 1.0};
  cr_assert(ug_fits(&v, &b), "footprint == usable fits");
  b = (ug_budget){131071, 1.0};
  cr_assert(!ug_fits(&v, &b), "one byte short");
  cr_assert_eq(ug_find_variant(p, "rms_norm_fwd_f32_d32768_m1_t", &v, &d), 0);
  cr_assert_eq(v.footprint, 262144);
  b = (ug_budget){196608, 0};
  cr_assert(!ug_fits(&v, &b));
  ug_spec_free(k);
}

Test(spec, parse_size) {
  int64_t v;
  char err[256];
  struct { const char *s; int64_t want; } ok[] = {
      {"192KiB", 196608}, {"1MiB", 1048576}, {"4096", 4096}, {"1000KB", 1000000}, {"64K", 65536},
      {"64k", 65536},     {"2M", 2097152},   {"1MB", 1000000}, {"100B", 100},     {"1GiB", 1073741824},
      {"196608", 196608}, {"1024GiB", (int64_t)1 << 40},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    v = -1;
    cr_assert_eq(ug_parse_size(ok[i].s, &v, err, sizeof err), 0, "\"%s\": %s", ok[i].s, err);
    cr_assert_eq(v, ok[i].want, "\"%s\" gave %lld", ok[i].s, (long long)v);
  }
  cr_assert_eq(ug_parse_size("l1", &v, err, sizeof err), 0, "%s", err);
  cr_assert_gt(v, 0);
  int64_t l1 = v;
  cr_assert_eq(ug_parse_size("l2", &v, err, sizeof err), 0, "%s", err);
  cr_assert_gt(v, 0);
  cr_assert_geq(v, l1, "L2 is at least as large as L1");
  static const char *const bad[] = {
      "", "12x", "-5", "0", "0KiB", "+5", " 12", "12 ", "12 KiB", "KiB", "1.5MiB", "l3", "L1", "0x10",
      "99999999999999999999999", "1025GiB", "18446744073709551615", "9223372036854775807", "1TiB", "5kib",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 12345;
    err[0] = '\0';
    cr_assert_eq(ug_parse_size(bad[i], &v, err, sizeof err), -1, "\"%s\" was accepted as %lld", bad[i], (long long)v);
    cr_assert_neq(err[0], '\0', "\"%s\": no message", bad[i]);
    cr_assert_eq(v, 12345, "\"%s\": *out written on failure", bad[i]);
  }
  cr_assert_eq(ug_parse_size(NULL, &v, err, sizeof err), -1);
}

/* ---- binding ------------------------------------------------------------------------ */

static int64_t *env_for(const ug_pass *p, int64_t rows, int64_t cols) {
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  cr_assert_not_null(env);
  for (int i = 0; i < p->nargs; i++)
    if (p->args[i].kind == UG_ARG_TENSOR) env[p->sym_of_arg[i]] = 1;
  env[ug_pass_sym(p, "rows")] = rows;
  env[ug_pass_sym(p, "cols")] = cols;
  return env;
}

Test(spec, bind_and_explain) {
  ug_kernel *k = load_rms_norm();
  const ug_pass *p = ug_spec_pass(k, "fwd");
  int64_t *env = env_for(p, 8, 4097);
  ug_variant v;
  ug_diag d;
  cr_assert_eq(ug_find_variant(p, "rms_norm_fwd_f32_d1024_m1_n", &v, &d), 0);
  int failed = -1;
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 1);
  cr_assert_eq(failed, 0);
  char why[512];
  ug_explain_rule(p, &p->constraints[failed], env, why, sizeof why);
  cr_assert_str_eq(why, "`tiled || BLOCK_D >= cols` (a non-tiled variant holds the whole row in UB) fails with "
                        "tiled=0 BLOCK_D=1024 cols=4097");
  cr_assert_eq(ug_find_variant(p, "rms_norm_fwd_f32_d1024_m1_t", &v, &d), 0);
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 0, "tiled applies to any cols");
  cr_assert_eq(ug_find_variant(p, "rms_norm_fwd_f32_d8192_m1_n", &v, &d), 0);
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 0);
  cr_assert_eq(env[ug_pass_sym(p, "BLOCK_D")], 8192, "bind sets the variant slots");
  free(env);

  /* derived values are evaluated in order */
  p = ug_spec_pass(k, "bwd");
  env = env_for(p, 100, 64);
  cr_assert_eq(ug_find_variant(p, "rms_norm_bwd_f32_d64_m1_n", &v, &d), 0);
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 0, "%s", d.text);
  cr_assert_eq(env[ug_pass_sym(p, "row_groups")], 4);  /* min(cdiv(100, 32), 64) */
  cr_assert_eq(env[ug_pass_sym(p, "group_rows")], 25); /* cdiv(100, 4) */
  env[ug_pass_sym(p, "rows")] = 0;
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 0);
  cr_assert_eq(env[ug_pass_sym(p, "row_groups")], 0);
  cr_assert_eq(env[ug_pass_sym(p, "group_rows")], 0);
  env[ug_pass_sym(p, "rows")] = 1000000;
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 0);
  cr_assert_eq(env[ug_pass_sym(p, "row_groups")], 64);
  cr_assert_eq(env[ug_pass_sym(p, "group_rows")], 15625);
  free(env);
  ug_spec_free(k);
}

Test(spec, bind_reports_evaluation_errors) {
  ug_kernel *k = parse_ok(TOY);
  const ug_pass *p = ug_spec_pass(k, "fwd");
  int64_t *env = env_for(p, 10, 0); /* cols = 0: "4096 / cols" divides by zero */
  ug_variant v;
  ug_diag d;
  cr_assert_eq(ug_find_variant(p, "toy_fwd_f32_d16_m1_t", &v, &d), 0);
  int failed = -1;
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), -1);
  cr_assert_not_null(strstr(d.text, "derived value \"per\""), "%s", d.text);
  cr_assert_not_null(strstr(d.text, "division by zero"), "%s", d.text);
  cr_assert_str_eq(d.file, "toy.json");
  ug_loc want = loc_in(TOY, "{\"name\": \"per\"", 0);
  cr_assert_eq(d.at.line, want.line);
  cr_assert_eq(d.at.col, want.col);
  env[ug_pass_sym(p, "cols")] = 100;
  cr_assert_eq(ug_bind(p, &v.pt, env, &failed, &d), 0);
  cr_assert_eq(env[ug_pass_sym(p, "groups")], 10);
  cr_assert_eq(env[ug_pass_sym(p, "half")], 5);
  cr_assert_eq(env[ug_pass_sym(p, "per")], 40);
  free(env);
  ug_spec_free(k);
}

/* ---- the default strategy ----------------------------------------------------------------- */

typedef struct {
  ug_kernel *k;
  const ug_pass *p;
  ug_variant *vs;
  int nv;
  int64_t *env;
  ug_choice c;
} strat;

static void choose(strat *s, const char *pass, int dtype, int64_t rows, int64_t cols, int64_t usable) {
  if (!s->k) s->k = load_rms_norm();
  s->p = ug_spec_pass(s->k, pass);
  free(s->vs);
  free(s->env);
  ug_diag d;
  cr_assert_eq(ug_enumerate(s->p, dtype, &s->vs, &s->nv, &d), 0);
  s->env = env_for(s->p, rows, cols);
  cr_assert_eq(ug_default_strategy(s->p, s->vs, s->nv, s->env, usable, &s->c, &d), 0, "%s", d.text);
}

static const char *chosen(const strat *s) { return s->c.chosen >= 0 ? s->vs[s->c.chosen].name : "(none)"; }

static void strat_free(strat *s) {
  free(s->vs);
  free(s->env);
  ug_spec_free(s->k);
}

Test(strategy, rms_norm_fwd_defaults) {
  strat s = {0};
  ug_budget b = {196608, 0};
  int64_t usable = 176947;
  choose(&s, "fwd", 2, 2048, 4096, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d4096_m1_n", "%s", s.c.why);
  cr_assert_not_null(strstr(s.c.why, "next_pow2(cols=4096) = 4096"), "%s", s.c.why);
  cr_assert_eq(usable, ug_budget_usable(&b, s.k));
  /* next_pow2(123) = 128, non-tiled; BLOCK_M: largest <= 2048 / 128 = 16 */
  choose(&s, "fwd", 2, 2048, 123, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d128_m16_n", "%s", s.c.why);
  /* next_pow2(1) = 1, raised to the smallest BLOCK_D 16; 2048 / 16 = 128: the largest BLOCK_M is 64 */
  choose(&s, "fwd", 2, 7, 1, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d16_m64_n", "%s", s.c.why);
  cr_assert_not_null(strstr(s.c.why, "raised to the smallest BLOCK_D 16"), "%s", s.c.why);
  choose(&s, "fwd", 2, 2048, 1024, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d1024_m2_n", "%s", s.c.why);
  choose(&s, "fwd", 2, 2048, 4097, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d8192_m1_n", "%s", s.c.why);
  /* the environment is left bound to the choice */
  cr_assert_eq(s.env[ug_pass_sym(s.p, "BLOCK_D")], 8192);
  cr_assert_eq(s.env[ug_pass_sym(s.p, "tiled")], 0);
  strat_free(&s);
}

Test(strategy, large_rows_go_tiled_with_the_largest_fitting_block) {
  strat s = {0};
  int64_t usable = 176947;
  choose(&s, "fwd", 0, 4, 32768, usable);
  /* non-tiled d32768 takes 2 * 131072 bytes: too much; tiled d16384 takes 131072 */
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_f32_d16384_m1_t", "%s", s.c.why);
  const ug_variant *v = &s.vs[s.c.chosen];
  cr_assert_leq(v->footprint, usable);
  const ug_variant *bigger = by_name(s.vs, s.nv, "rms_norm_fwd_f32_d32768_m1_t");
  cr_assert_not_null(bigger);
  cr_assert_gt(bigger->footprint, usable, "the next larger tiled variant must not fit");
  cr_assert_gt(by_name(s.vs, s.nv, "rms_norm_fwd_f32_d32768_m1_n")->footprint, usable);
  cr_assert_not_null(strstr(s.c.why, "tiled"), "%s", s.c.why);
  cr_assert_eq(s.env[ug_pass_sym(s.p, "tiled")], 1);
  /* beyond the largest block size */
  choose(&s, "fwd", 0, 4, 1000000, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_f32_d16384_m1_t", "%s", s.c.why);
  /* with a bigger budget the non-tiled row fits */
  choose(&s, "fwd", 0, 4, 32768, 262144);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_f32_d32768_m1_n", "%s", s.c.why);
  strat_free(&s);
}

Test(strategy, tiny_budgets) {
  strat s = {0};
  ug_budget b = {1024, 0};
  int64_t usable = 0;
  choose(&s, "fwd", 2, 4, 32768, 0);
  usable = ug_budget_usable(&b, s.k);
  cr_assert_eq(usable, 921);
  /* tiled d64 takes 2 * 256 = 512 bytes, d128 1024 > 921 */
  choose(&s, "fwd", 2, 4, 32768, usable);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d64_m1_t", "%s", s.c.why);
  /* nothing takes less than 128 bytes */
  choose(&s, "fwd", 2, 4, 32768, 100);
  cr_assert_eq(s.c.chosen, -1, "chose %s", chosen(&s));
  cr_assert_not_null(strstr(s.c.why, "no variant fits"), "%s", s.c.why);
  cr_assert_not_null(strstr(s.c.why, "smallest footprint 128"), "%s", s.c.why);
  choose(&s, "fwd", 2, 4, 8, 100);
  cr_assert_eq(s.c.chosen, -1, "chose %s", chosen(&s));
  /* a small row with a small budget: d16 non-tiled, BLOCK_M cut to what fits */
  choose(&s, "fwd", 2, 4, 16, 400);
  cr_assert_str_eq(chosen(&s), "rms_norm_fwd_bf16_d16_m4_n", "%s", s.c.why);
  strat_free(&s);
}

Test(strategy, rms_norm_bwd_defaults) {
  strat s = {0};
  choose(&s, "bwd", 2, 2048, 4096, 176947);
  cr_assert_str_eq(chosen(&s), "rms_norm_bwd_bf16_d4096_m1_n", "%s", s.c.why);
  cr_assert_eq(s.vs[s.c.chosen].footprint, 3 * 4096 * 4); /* m_tile, w_tile, dw_acc */
  cr_assert_eq(s.env[ug_pass_sym(s.p, "row_groups")], 64);
  cr_assert_eq(s.env[ug_pass_sym(s.p, "group_rows")], 32);
  /* bwd needs 3 row buffers non-tiled: 16384 * 4 * 3 does not fit, tiled d16384 (3 * 65536) does not either */
  choose(&s, "bwd", 0, 2048, 16384, 176947);
  cr_assert_str_eq(chosen(&s), "rms_norm_bwd_f32_d8192_m1_t", "%s", s.c.why);
  strat_free(&s);
}

/* ---- spec errors, each at file:line:col ---------------------------------------------------- */

Test(spec_errors, toy_is_valid) {
  ug_kernel *k = parse_ok(TOY);
  cr_assert_str_eq(k->name, "toy");
  cr_assert_str_eq(k->description, "unit test spec");
  cr_assert_str_eq(k->dir, "");
  const ug_pass *p = ug_spec_pass(k, "fwd");
  cr_assert_eq(p->nderived, 3);
  cr_assert_eq(p->nub, 4);
  cr_assert(p->dtypes[0] && !p->dtypes[1] && p->dtypes[2]);
  ug_variant *vs;
  int n;
  ug_diag d;
  cr_assert_eq(ug_enumerate(p, -1, &vs, &n, &d), 0);
  cr_assert_eq(n, 2 * (5 * 3 + 5));
  free(vs);
  ug_spec_free(k);
}

Test(spec_errors, json_syntax) {
  /* jansson reports the end of the token it choked on */
  toy_rejects("  \"kernel\": \"toy\",\n", "  \"kernel\": \"toy\"\n", "\"description\"", 12, "JSON");
  toy_rejects("\"dtypes\": [\"f32\", \"bf16\"]", "\"dtypes\": [\"f32\", \"bf16\",]", ",]", 1, "JSON");
  ug_diag d;
  cr_assert_null(parse("", &d));
  cr_assert_not_null(strstr(d.text, "JSON"), "%s", d.text);
  cr_assert_null(parse("[1, 2]", &d));
  cr_assert_eq(d.at.line, 1);
  cr_assert_eq(d.at.col, 1);
  cr_assert_not_null(strstr(d.text, "must be an object"), "%s", d.text);
}

Test(spec_errors, duplicate_key) {
  toy_rejects("  \"kernel\": \"toy\",\n", "  \"kernel\": \"toy\",\n  \"kernel\": \"toy2\",\n", "\"kernel\": \"toy2\"", 7,
              "duplicate");
}

Test(spec_errors, unknown_key_at_the_key) {
  toy_rejects("  \"description\": \"unit test spec\",\n",
              "  \"description\": \"unit test spec\",\n  \"kernal\": \"toy\",\n", "\"kernal\"", 0,
              "unknown key \"kernal\"");
  toy_rejects("\"tag\": \"m\", \"values\"", "\"tag\": \"m\", \"valeus\"", "\"valeus\"", 0, "unknown key \"valeus\" in an axis");
  toy_rejects("{\"name\": \"cols\", \"type\": \"int\", \"min\": 1}", "{\"name\": \"cols\", \"type\": \"int\", \"mn\": 1}",
              "\"mn\"", 0, "unknown key \"mn\"");
  toy_rejects("{\"name\": \"three\", \"type\": \"f32\", \"count\": \"3\"}",
              "{\"name\": \"three\", \"type\": \"f32\", \"count\": \"3\", \"align\": 128}", "\"align\"", 0,
              "unknown key \"align\" in a buffer");
}

Test(spec_errors, wrong_type_at_the_value) {
  toy_rejects("\"tiled\": [false, true]", "\"tiled\": \"yes\"", "\"yes\"", 0, "must be an array");
  toy_rejects("\"ubgen_spec\": 1", "\"ubgen_spec\": \"1\"", "\"1\"", 0, "must be an integer");
  toy_rejects("\"kernel\": \"toy\"", "\"kernel\": 7", "7,", 0, "must be a string");
  toy_rejects("\"optional\": true", "\"optional\": 1", "\"optional\": 1", 12, "must be a boolean");
  toy_rejects("\"values\": [1, 2, 4]", "\"values\": [1, 2.5, 4]", "2.5", 0, "must be an integer");
  toy_rejects("\"shape\": [\"rows\", \"cols\"],\n  \"dtypes\"", "\"shape\": {\"rows\": 1},\n  \"dtypes\"", "{\"rows\": 1}", 0,
              "must be an array");
  toy_rejects("\"default\": 1e-6", "\"default\": \"small\"", "\"small\"", 0, "must be a number");
  toy_rejects("\"count\": \"3\"", "\"count\": 3.5", "3.5", 0, "must be an expression");
}

Test(spec_errors, bad_expression_points_into_the_string) {
  /* the second '*' is character 10 of the expression */
  toy_rejects("\"BLOCK_M * BLOCK_D\"", "\"BLOCK_M * * BLOCK_D\"", "\"BLOCK_M * * BLOCK_D\"", 1 + 10,
              "unexpected character '*'");
  toy_rejects("\"groups / 2\"", "\"groups / (2\"", "\"groups / (2\"", 1 + 11, "')' expected");
  toy_rejects("\"tiled || BLOCK_D >= cols\"", "\"tiled || BLOCK_D >= cols >= 1\"", "\"tiled || BLOCK_D >= cols >= 1\"",
              1 + 25, "do not chain");
  toy_rejects("\"groups / 2\"", "\"groups / 2 2\"", "\"groups / 2 2\"", 1 + 11, "after the end");
  toy_rejects("\"groups / 2\"", "\"\"", "\"\"}", 1, "empty expression");
  /* escapes in the JSON string are followed: \u002a is one character of the
   * expression but six of the file */
  toy_rejects("\"BLOCK_M * BLOCK_D\"", "\"BLOCK_M \\u002a * BLOCK_D\"", "\"BLOCK_M \\u002a * BLOCK_D\"", 1 + 15,
              "unexpected character '*'");
  toy_rejects("\"BLOCK_M * BLOCK_D\"", "\"BLOCK_M\\t* $\"", "\"BLOCK_M\\t* $\"", 1 + 11, "unexpected character '$'");
}

Test(spec_errors, undefined_name) {
  toy_rejects("\"cdiv(rows, BLOCK_M)\"", "\"cdiv(rows, BLOCK_Q)\"", "BLOCK_Q", 0, "undefined name 'BLOCK_Q'");
  toy_rejects("\"grid\": \"groups\"", "\"grid\": \"grups\"", "grups", 0, "undefined name 'grups'");
  toy_rejects("\"shape\": [\"cols\"], \"optional\"", "\"shape\": [\"colz\"], \"optional\"", "colz", 0, "undefined name");
}

Test(spec_errors, names_not_allowed_where_they_are_used) {
  /* UB sizes belong to the variant, never to the shape */
  toy_rejects("\"count\": \"BLOCK_D\"", "\"count\": \"BLOCK_D + cols\"", "BLOCK_D + cols", 10, "cannot be used here");
  toy_rejects("\"count\": \"3\"", "\"count\": \"groups\"", "\"count\": \"groups\"", 10, "derived values are not known here");
  /* floats and tensors are not integers */
  toy_rejects("\"groups / 2\"", "\"groups / eps\"", "groups / eps", 9, "float arguments cannot appear");
  toy_rejects("\"groups / 2\"", "\"x + 1\"", "\"x + 1\"", 1, "tensors are not values");
  /* tensor shapes use int args only */
  toy_rejects("\"shape\": [\"cols\"], \"optional\"", "\"shape\": [\"BLOCK_D\"], \"optional\"", "\"BLOCK_D\"], \"opt", 1,
              "variant axes are not known here");
  /* a derived value may use only those declared before it */
  toy_rejects("\"cdiv(rows, BLOCK_M)\"", "\"half + 1\"", "\"half + 1\"", 1, "undefined name 'half'");
  toy_rejects("\"groups / 2\"", "\"groups / half\"", "groups / half", 9, "declared before it");
}

Test(spec_errors, axis_definitions) {
  toy_rejects("\"tag\": \"m\"", "\"tag\": \"M\"", "\"M\"", 0, "lowercase");
  toy_rejects("\"tag\": \"m\"", "\"tag\": \"m2\"", "\"m2\"", 0, "lowercase");
  toy_rejects("\"tag\": \"m\"", "\"tag\": \"d\"", "\"d\", \"values\"", 0, "used by two axes");
  toy_rejects("\"pow2\": [16, 256]", "\"pow2\": [16, 250]", "[16, 250]", 0, "powers of two");
  toy_rejects("\"pow2\": [16, 256]", "\"pow2\": [12, 256]", "[12, 256]", 0, "powers of two");
  toy_rejects("\"pow2\": [16, 256]", "\"pow2\": [256, 16]", "[256, 16]", 0, "reversed");
  toy_rejects("\"values\": [1, 2, 4]", "\"values\": [1, 4, 2]", "2]", 0, "must increase");
  toy_rejects("\"values\": [1, 2, 4]", "\"values\": [0, 2, 4]", "0, 2", 0, "outside");
  toy_rejects("\"name\": \"BLOCK_M\"", "\"name\": \"tiled\"", "\"tiled\", \"tag\"", 0, "reserved");
  toy_rejects("\"values\": [1, 2, 4], ", "\"values\": [1, 2, 4], \"pow2\": [1, 4], ",
              "{\"name\": \"BLOCK_M\"", 0, "exactly one of");
}

Test(spec_errors, identifiers_and_injection) {
  toy_rejects("\"kernel\": \"toy\"", "\"kernel\": \"toy kernel\"", "\"toy kernel\"", 0, "not an identifier");
  toy_rejects("\"kernel\": \"toy\"", "\"kernel\": \"x; abort()\"", "\"x; abort()\"", 0, "not an identifier");
  toy_rejects("\"kernel\": \"toy\"", "\"kernel\": \"toy*/\"", "\"toy*/\"", 0, "not an identifier");
  toy_rejects("{\"name\": \"y\",", "{\"name\": \"y; abort()\",", "\"y; abort()\"", 0, "not an identifier");
  toy_rejects("{\"name\": \"three\",", "{\"name\": \"three; system(\\\"sh\\\")\",", "\"three; system", 0,
              "not an identifier");
  toy_rejects("\"name\": \"BLOCK_M\"", "\"name\": \"BLOCK M\"", "\"BLOCK M\"", 0, "not an identifier");
  toy_rejects("{\"name\": \"main\",", "{\"name\": \"main()\",", "\"main()\"", 0, "not an identifier");
  toy_rejects("\"shape\": [\"rows\", \"cols\"],\n  \"dtypes\"", "\"shape\": [\"rows\", \"co ls\"],\n  \"dtypes\"",
              "\"co ls\"", 0, "not an identifier");
  toy_rejects("{\"name\": \"groups\",", "{\"name\": \"1groups\",", "\"1groups\"", 0, "not an identifier");
  /* a pass name is an object key: at the pass */
  char *text = subst(TOY, "\"fwd\": {", "\"f w d\": {");
  ug_diag d;
  cr_assert_null(parse(text, &d));
  cr_assert_not_null(strstr(d.text, "not an identifier"), "%s", d.text);
  free(text);
  /* reserved and duplicate names */
  toy_rejects("{\"name\": \"w\",", "{\"name\": \"has_w\",", "\"has_w\"", 0, "reserved");
  toy_rejects("{\"name\": \"y\",", "{\"name\": \"x\",", "\"x\", \"type\": \"T\", \"role\": \"out\"", 0, "declared twice");
  toy_rejects("{\"name\": \"three\",", "{\"name\": \"x_tile\",", "\"x_tile\", \"type\": \"f32\", \"count\": \"3\"", 0,
              "declared twice");
  toy_rejects("{\"name\": \"three\",", "{\"name\": \"rows\",", "\"rows\", \"type\": \"f32\"", 0, "already used");
}

Test(spec_errors, template_names_are_not_paths) {
  toy_rejects("\"toy_fwd.c.tmpl\"", "\"../toy_fwd.c.tmpl\"", "\"../toy_fwd.c.tmpl\"", 0, "no paths");
  toy_rejects("\"toy_fwd.c.tmpl\"", "\"sub/toy_fwd.c.tmpl\"", "\"sub/toy_fwd.c.tmpl\"", 0, "no paths");
  toy_rejects("\"toy_fwd.c.tmpl\"", "\"x/../../etc/passwd\"", "\"x/../../etc/passwd\"", 0, "no paths");
  toy_rejects("\"toy_fwd.c.tmpl\"", "\"/etc/passwd\"", "\"/etc/passwd\"", 0, "no paths");
  toy_rejects("\"toy_fwd.c.tmpl\"", "\".hidden\"", "\".hidden\"", 0, "no paths");
  toy_rejects("\"toy_fwd.c.tmpl\"", "\"\"", "\"\",\n      \"args\"", 0, "no paths");
  toy_rejects("\"toy_fwd.c.tmpl\"", "\"a b.tmpl\"", "\"a b.tmpl\"", 0, "no paths");
}

Test(spec_errors, version) {
  toy_rejects("\"ubgen_spec\": 1", "\"ubgen_spec\": 2", "\"ubgen_spec\": 2", 14, "version 1");
  toy_rejects("\"ubgen_spec\": 1", "\"ubgen_spec\": 0", "\"ubgen_spec\": 0", 14, "version 1");
  toy_rejects("\"ubgen_spec\": 1", "\"ubgen_spec\": -1", "\"ubgen_spec\": -1", 14, "version 1");
}

Test(spec_errors, missing_required_keys) {
  /* at the object that lacks the key */
  toy_rejects("  \"kernel\": \"toy\",\n", "", "{\n  \"ubgen_spec\"", 0, "needs the key \"kernel\"");
  toy_rejects("  \"ubgen_spec\": 1,\n", "", "{\n  \"kernel\"", 0, "needs the key \"ubgen_spec\"");
  toy_rejects("  \"shape\": [\"rows\", \"cols\"],\n", "", "{\n  \"ubgen_spec\"", 0, "needs the key \"shape\"");
  toy_rejects("      \"template\": \"toy_fwd.c.tmpl\",\n", "", "{\n      \"args\"", 0, "needs the key \"template\"");
  toy_rejects("      \"stages\": [\n        {\"name\": \"main\", \"grid\": \"groups\"}\n      ],\n", "",
              "{\n      \"template\"", 0, "needs the key \"stages\"");
  toy_rejects("\"type\": \"f32\", \"count\": \"3\"", "\"type\": \"f32\"", "{\"name\": \"three\"", 0,
              "needs the key \"count\"");
  toy_rejects("\"role\": \"out\", ", "", "{\"name\": \"y\"", 0, "needs the key \"role\"");
  toy_rejects("\"dtypes\": [\"f32\", \"bf16\"],\n", "", "{\n      \"template\"", 0, "needs the key \"dtypes\"");
}

Test(spec_errors, other_semantic_errors) {
  toy_rejects("\"dtypes\": [\"f32\", \"bf16\"]", "\"dtypes\": [\"f32\", \"f64\"]", "\"f64\"", 0, "unknown dtype");
  toy_rejects("\"dtypes\": [\"f32\", \"bf16\"]", "\"dtypes\": [\"f32\", \"f32\"]", "\"f32\"]", 0, "listed twice");
  toy_rejects("\"role\": \"out\"", "\"role\": \"output\"", "\"output\"", 0, "unknown role");
  toy_rejects("{\"name\": \"three\", \"type\": \"f32\"", "{\"name\": \"three\", \"type\": \"f128\"", "\"f128\"", 0,
              "unknown type");
  toy_rejects("\"tiles\": \"cols\"", "\"tiles\": \"eps\"", "\"eps\"}", 0, "must name an int argument");
  toy_rejects("\"tiled\": [false, true]", "\"tiled\": [true, true]", "true]", 0, "twice");
  /* a shape name every pass must have as an int arg */
  toy_rejects("\"shape\": [\"rows\", \"cols\"],\n  \"dtypes\"", "\"shape\": [\"rows\", \"n\"],\n  \"dtypes\"",
              "[\n        {\"name\": \"x\"", 0, "shape name \"n\"");
}

/* ---- long names ---------------------------------------------------------------------------- */

/* Variant names are the keys of the registry and the tuning DB, so two
 * variants must never share one. 64-character kernel and pass names and a
 * 60-character tag make names longer than UG_MAX_VARIANT_NAME: the loader
 * must refuse the spec rather than cut names (cut names once collided). */
Test(spec_errors, variant_names_never_collide) {
  char kname[65], tag[61];
  memset(kname, 'k', 64);
  kname[64] = '\0';
  memset(tag, 'q', 60);
  tag[60] = '\0';
  char from_k[] = "\"kernel\": \"toy\"", to_k[128];
  snprintf(to_k, sizeof to_k, "\"kernel\": \"%s\"", kname);
  char *t1 = subst(TOY, from_k, to_k);
  char to_tag[128];
  snprintf(to_tag, sizeof to_tag, "\"tag\": \"%s\"", tag);
  char *t2 = subst(t1, "\"tag\": \"m\"", to_tag);
  free(t1);
  char pass[80];
  snprintf(pass, sizeof pass, "\"%.64s\": {", "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp");
  t1 = subst(t2, "\"fwd\": {", pass);
  free(t2);
  t2 = t1;
  ug_diag d;
  ug_kernel *k = parse(t2, &d);
  free(t2);
  cr_assert_null(k, "a spec with over-long variant names was accepted");
  cr_assert_not_null(strstr(d.text, "variant names"), "%s", d.text);
  if (!k) return;
  ug_variant *vs;
  int n;
  cr_assert_eq(ug_enumerate(&k->passes[0], -1, &vs, &n, &d), 0);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++) cr_assert_str_neq(vs[i].name, vs[j].name, "two variants are named %s", vs[i].name);
  free(vs);
  ug_spec_free(k);
}

/* FLCE's composite op "chunk" as its spec declares it: the rule as an
 * expression over the shape, and the one spelling of each variant */
Test(spec, flce_composite_axes_and_names) {
  ug_diag d;
  ug_kernel *k = ug_spec_load_file(UBGEN_SRC "/specs/flce.json", &d);
  cr_assert_not_null(k, "%s", d.text);
  cr_assert_null(ug_spec_composite(k, "nope"));
  const ug_composite *c = ug_spec_composite(k, "chunk");
  cr_assert_not_null(c);
  cr_assert_eq(c->naxes, 2);
  cr_assert_str_eq(c->axes[0].name, "chunk");
  cr_assert_str_eq(c->axes[1].name, "gemm");
  cr_assert_eq(c->axes[1].nvalues, 2);
  /* what a call takes before the default where it runs: oneDNN */
  const ug_comp_axis *g = &c->axes[1];
  cr_assert(g->nprefer == 1 && !strcmp(g->values[g->prefer[0]], "onednn"));
  /* its public arguments, a pass's grammar: the tensors, the shape, the options with their bounds */
  const ug_pass *call = c->call;
  cr_assert_not_null(call);
  cr_assert_eq(call->template_name, NULL);
  const char *names[] = {"x", "weight", "target", "bias", "ce_weight", "grad_output", "loss", "z_loss", "argmax",
                         "token_accuracy", "dx", "dweight", "dbias", "bt", "hidden", "vocab", "ignore_index",
                         "reduction", "accum_dtype", "token_scaling", "label_smoothing", "lse_square_scale", "softcap"};
  cr_assert_eq(call->nargs, (int)(sizeof names / sizeof names[0]));
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) cr_assert_str_eq(call->args[i].name, names[i]);
  const ug_arg *ls = &call->args[ug_pass_arg(call, "label_smoothing")];
  cr_assert(ls->kind == UG_ARG_FLOAT && ls->has_min && ls->has_max && ls->fmin == 0.0 && ls->fmax == 1.0);
  cr_assert(call->sym_dtype >= 0 && call->nchecks == 2);
  /* the rule, min(512, max(256, next_pow2(ceil(bt / 4)))) (the runtime caps it at bt), at a few shapes */
  const int64_t shapes[][4] = {{4096, 1024, 32768, 512}, {100, 32, 300, 256}, {7, 100, 50, 256}, {0, 1, 1, 256},
                               {2000, 4096, 128256, 512}, {1025, 4096, 128256, 512}, {1024, 4096, 128256, 256}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int64_t v = -1;
    cr_assert_eq(ug_comp_default(&c->axes[0], shapes[i], &v), 0);
    cr_assert_eq(v, shapes[i][3], "bt=%lld hidden=%lld vocab=%lld: %lld", (long long)shapes[i][0],
                 (long long)shapes[i][1], (long long)shapes[i][2], (long long)v);
  }
  const int64_t huge[3] = {INT64_MAX, 1, 1};
  int64_t v = -1;
  cr_assert_eq(ug_comp_default(&c->axes[0], huge, &v), 0, "cdiv(bt, 4) keeps next_pow2 below 2^62");
  cr_assert_eq(v, 512);
  cr_assert_eq(ug_comp_default(&c->axes[1], huge, &v), -1, "a named axis has no expression");

  int64_t val[2];
  bool given[2];
  const struct {
    const char *name;
    int64_t chunk, gemm;
    bool chunk_given, gemm_given;
  } good[] = {{"chunk=256", 256, 0, true, false},   {"chunk=256,gemm=onednn", 256, 1, true, true},
              {"chunk=1", 1, 0, true, false},       {"chunk=1073741824,gemm=onednn", 1073741824, 1, true, true},
              {"gemm=onednn", 0, 1, false, true},   {"gemm=generated", 0, 0, false, true}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    cr_assert_eq(ug_comp_parse(c, good[i].name, val, given), 0, "%s", good[i].name);
    cr_assert(given[0] == good[i].chunk_given && given[1] == good[i].gemm_given, "%s", good[i].name);
    cr_assert(val[0] == good[i].chunk && val[1] == good[i].gemm, "%s: %lld %lld", good[i].name, (long long)val[0],
              (long long)val[1]);
  }
  const char *bad[] = {"",
                       "chunk=0",
                       "chunk=08",
                       "chunk=+8",
                       "chunk=1073741825",
                       "chunk=99999999999999999999999",
                       "chunk=256,gemm=generated", /* a whole name does not write a default */
                       "gemm=onednn,chunk=8",      /* axis order */
                       "chunk=8,chunk=9",
                       "chunk=8,",
                       "chunks=8",
                       "chunk",
                       "gemm=cublas",
                       "chunk=8,gemm=amx",
                       ",gemm=onednn"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_eq(ug_comp_parse(c, bad[i], val, given), -1, "\"%s\" taken", bad[i]);
  /* what `ubgen tune flce.chunk` sweeps without --dtype and --shape */
  cr_assert(c->tune_dtypes[0] && !c->tune_dtypes[1] && c->tune_dtypes[2], "f32 and bf16, not f16");
  cr_assert_eq(c->ntune, 1);
  cr_assert_eq(k->nshape, 3);
  cr_assert(c->tune_shapes[0] == 512 && c->tune_shapes[1] == 512 && c->tune_shapes[2] == 16384,
            "bt, hidden, vocab in the kernel's shape order: %lld %lld %lld", (long long)c->tune_shapes[0],
            (long long)c->tune_shapes[1], (long long)c->tune_shapes[2]);
  ug_spec_free(k);
}
