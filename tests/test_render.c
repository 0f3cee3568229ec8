/* Unit tests of the template renderer (gen/render.h): values, sections,
 * expressions, partials, standalone lines, located errors, and the rule that
 * only validated values reach the C text. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gen/render.h"

/* ---- helpers ------------------------------------------------------------------ */

static char tmpdir[256];
static const char *dirs[2];
static ug_tmpl_path path = {dirs, 0, NULL, 0};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb; (void)flag; (void)ftw;
  return remove(p);
}

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ug_test_render_XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
  dirs[0] = tmpdir;
  path.ndirs = 1;
}

static void remove_tmpdir(void) {
  if (tmpdir[0]) nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  tmpdir[0] = '\0';
}

static void write_in(const char *dir, const char *name, const char *text) {
  char full[512];
  snprintf(full, sizeof full, "%s/%s", dir, name);
  FILE *f = fopen(full, "w");
  cr_assert_not_null(f, "cannot write %s", full);
  fputs(text, f);
  fclose(f);
}

static void write_tmpl(const char *name, const char *text) { write_in(tmpdir, name, text); }

TestSuite(render, .init = make_tmpdir, .fini = remove_tmpdir);

/* Renders text as "t.tmpl" and asserts success and the exact output. */
static void renders(const ug_value *ctx, const char *text, const char *want) {
  ug_diag d;
  char *out = ug_render_text("t.tmpl", text, &path, ctx, &d);
  cr_assert_not_null(out, "rendering \"%s\" failed: %s:%d:%d: %s", text, d.file, d.at.line, d.at.col, d.text);
  cr_assert_str_eq(out, want, "rendering \"%s\"", text);
  free(out);
}

/* Renders text as "t.tmpl", asserts failure at line:col of file t.tmpl with
 * a message containing part. */
static void fails(const ug_value *ctx, const char *text, int line, int col, const char *part) {
  ug_diag d;
  char *out = ug_render_text("t.tmpl", text, &path, ctx, &d);
  cr_assert_null(out, "rendering \"%s\" should fail, gave \"%s\"", text, out ? out : "");
  cr_assert_str_eq(d.file, "t.tmpl", "\"%s\": file", text);
  cr_assert_eq(d.at.line, line, "\"%s\": line %d, expected %d (%s)", text, d.at.line, line, d.text);
  cr_assert_eq(d.at.col, col, "\"%s\": col %d, expected %d (%s)", text, d.at.col, col, d.text);
  cr_assert_not_null(strstr(d.text, part), "\"%s\": message \"%s\" lacks \"%s\"", text, d.text, part);
}

/* n=42 neg=-3 big=2^40 yes=true no=false zero=0 id=my_func
 * cfg = {inner = {v = 7}, w = 5}
 * items = [{i=1}, {i=2}, {i=3}], empty = [] */
static ug_value *sample(void) {
  ug_value *m = ug_map_new();
  cr_assert_not_null(m);
  cr_assert_eq(ug_map_int(m, "n", 42), 0);
  cr_assert_eq(ug_map_int(m, "neg", -3), 0);
  cr_assert_eq(ug_map_int(m, "big", (int64_t)1 << 40), 0);
  cr_assert_eq(ug_map_int(m, "zero", 0), 0);
  cr_assert_eq(ug_map_bool(m, "yes", true), 0);
  cr_assert_eq(ug_map_bool(m, "no", false), 0);
  cr_assert_eq(ug_map_ident(m, "id", "my_func"), 0);
  ug_value *cfg = ug_map_map(m, "cfg");
  cr_assert_not_null(cfg);
  ug_value *inner = ug_map_map(cfg, "inner");
  cr_assert_not_null(inner);
  cr_assert_eq(ug_map_int(inner, "v", 7), 0);
  cr_assert_eq(ug_map_int(cfg, "w", 5), 0);
  ug_value *items = ug_map_list(m, "items");
  cr_assert_not_null(items);
  for (int i = 1; i <= 3; i++) {
    ug_value *it = ug_list_push_map(items);
    cr_assert_not_null(it);
    cr_assert_eq(ug_map_int(it, "i", i), 0);
  }
  cr_assert_not_null(ug_map_list(m, "empty"));
  return m;
}

/* ---- values ---------------------------------------------------------------------- */

Test(render, plain_text_passes_through) {
  ug_value *m = sample();
  renders(m, "", "");
  renders(m, "int main(void) { return 0; }\n", "int main(void) { return 0; }\n");
  renders(m, "a { b } c {d} }} e", "a { b } c {d} }} e");
  ug_value_free(m);
}

Test(render, values) {
  ug_value *m = sample();
  renders(m, "n={{n}} neg={{neg}} big={{big}} zero={{zero}}", "n=42 neg=-3 big=1099511627776 zero=0");
  renders(m, "yes={{yes}} no={{no}}", "yes=1 no=0");
  renders(m, "void {{id}}(void);", "void my_func(void);");
  renders(m, "{{ n }}|{{n  }}", "42|42");
  renders(m, "{{n}}{{n}}", "4242");
  ug_value_free(m);
}

Test(render, value_tag_alone_on_a_line_keeps_the_line) {
  ug_value *m = sample();
  renders(m, "a\n{{n}}\nb\n", "a\n42\nb\n");
  renders(m, "a\n  {{id}}  \nb", "a\n  my_func  \nb");
  ug_value_free(m);
}

Test(render, dotted_lookup) {
  ug_value *m = sample();
  renders(m, "{{cfg.inner.v}} {{cfg.w}}", "7 5");
  fails(m, "{{cfg.nope}}", 1, 1, "names nothing in scope");
  fails(m, "{{cfg.inner.v.x}}", 1, 1, "names nothing in scope");
  fails(m, "{{nope.v}}", 1, 1, "names nothing in scope");
  ug_value_free(m);
}

Test(render, a_key_set_twice_keeps_the_last_value) {
  ug_value *m = ug_map_new();
  cr_assert_eq(ug_map_int(m, "k", 1), 0);
  cr_assert_eq(ug_map_bool(m, "k", true), 0);
  cr_assert_eq(ug_map_ident(m, "k", "last"), 0);
  cr_assert_eq(m->n, 1);
  renders(m, "{{k}}", "last");
  ug_value_free(m);
}

/* ---- sections ------------------------------------------------------------------- */

Test(render, sections_on_bools_and_ints) {
  ug_value *m = sample();
  renders(m, "[{{#yes}}Y{{/yes}}][{{#no}}N{{/no}}]", "[Y][]");
  renders(m, "[{{^yes}}Y{{/yes}}][{{^no}}N{{/no}}]", "[][N]");
  renders(m, "[{{#n}}n{{/n}}][{{#zero}}z{{/zero}}][{{#neg}}neg{{/neg}}]", "[n][][neg]");
  renders(m, "[{{^n}}n{{/n}}][{{^zero}}z{{/zero}}]", "[][z]");
  /* the body of a true section is rendered in the same scope */
  renders(m, "{{#yes}}{{n}} {{id}}{{/yes}}", "42 my_func");
  /* spaces inside section tags */
  renders(m, "{{# yes }}Y{{/ yes }}", "Y");
  ug_value_free(m);
}

Test(render, sections_on_lists) {
  ug_value *m = sample();
  renders(m, "{{#items}}{{i}},{{/items}}", "1,2,3,");
  renders(m, "[{{#empty}}x{{/empty}}]", "[]");
  renders(m, "[{{^empty}}none{{/empty}}]", "[none]");
  renders(m, "[{{^items}}none{{/items}}]", "[]");
  /* outer names stay visible inside the items */
  renders(m, "{{#items}}{{i}}*{{n}} {{/items}}", "1*42 2*42 3*42 ");
  ug_value_free(m);
}

Test(render, sections_on_maps) {
  ug_value *m = sample();
  renders(m, "{{#cfg}}w={{w}} v={{inner.v}} n={{n}}{{/cfg}}", "w=5 v=7 n=42");
  renders(m, "{{#cfg}}{{#inner}}{{v}}{{/inner}}{{/cfg}}", "7");
  renders(m, "{{#cfg.inner}}{{v}}{{/cfg.inner}}", "7");
  renders(m, "[{{^cfg}}none{{/cfg}}]", "[]");
  /* the map's names leave scope after the section */
  fails(m, "{{#cfg}}{{/cfg}}{{w}}", 1, 17, "'w' names nothing in scope");
  ug_value_free(m);
}

Test(render, section_on_an_unknown_name_is_an_error) {
  ug_value *m = sample();
  fails(m, "x\n{{#nope}}a{{/nope}}", 2, 1, "section 'nope' names nothing in scope");
  fails(m, "x\n{{^nope}}a{{/nope}}", 2, 1, "names nothing in scope");
  ug_value_free(m);
}

Test(render, nested_lists_shadow_and_fall_back) {
  ug_value *m = ug_map_new();
  cr_assert_eq(ug_map_int(m, "top", 7), 0);
  cr_assert_eq(ug_map_ident(m, "name", "outermost"), 0);
  ug_value *rows = ug_map_list(m, "rows");
  ug_value *r0 = ug_list_push_map(rows), *r1 = ug_list_push_map(rows);
  cr_assert_eq(ug_map_ident(r0, "name", "r0"), 0);
  cr_assert_eq(ug_map_int(r0, "tag", 0), 0);
  cr_assert_eq(ug_map_ident(r1, "name", "r1"), 0);
  cr_assert_eq(ug_map_int(r1, "tag", 1), 0);
  ug_value *c0 = ug_map_list(r0, "cols");
  ug_value *c00 = ug_list_push_map(c0), *c01 = ug_list_push_map(c0);
  cr_assert_eq(ug_map_ident(c00, "name", "c0"), 0);
  cr_assert_eq(ug_map_ident(c01, "name", "c1"), 0);
  cr_assert_eq(ug_map_int(c01, "tag", 9), 0);
  cr_assert_not_null(ug_map_list(r1, "cols"));
  /* inner name shadows the row's and the top-level's; tag falls back to the
   * row's when the column has none; top comes from the root */
  renders(m, "{{#rows}}{{name}}:{{#cols}} {{name}}.{{tag}}.{{top}}{{/cols}};{{/rows}}{{name}}",
          "r0: c0.0.7 c1.9.7;r1:;outermost");
  /* after the inner section, names resolve to the row again */
  renders(m, "{{#rows}}[{{#cols}}{{name}}{{/cols}}]{{name}}{{/rows}}", "[c0c1]r0[]r1");
  /* a nested section with the same name as the outer one */
  renders(m, "{{#rows}}{{#rows}}{{name}}{{/rows}}|{{/rows}}", "r0r1|r0r1|");
  ug_value_free(m);
}

Test(render, false_sections_skip_their_body_but_check_its_structure) {
  ug_value *m = sample();
  /* names inside a skipped body are not looked up */
  renders(m, "[{{#no}}{{nope}}{{/no}}]", "[]");
  /* but its tags must still nest properly */
  fails(m, "{{#no}}\n{{/other}}\n{{/no}}", 2, 1, "does not match");
  fails(m, "{{#no}}{{a b}}{{/no}}", 1, 8, "is not a name");
  ug_value_free(m);
}

/* ---- expressions ------------------------------------------------------------------ */

Test(render, expressions) {
  ug_value *m = sample();
  renders(m, "{{= n * 2 + 1}}", "85");
  renders(m, "{{=n-2}}", "40");
  renders(m, "{{= yes + yes + no}}", "2");
  renders(m, "{{= yes ? n : neg}} {{= no ? n : neg}}", "42 -3");
  renders(m, "{{= cdiv(n, 8) * 8}}", "48");
  renders(m, "{{#items}}{{= i * i}} {{/items}}", "1 4 9 ");
  renders(m, "{{#cfg}}{{= w + n}}{{/cfg}}", "47");
  ug_value_free(m);
}

Test(render, expression_errors) {
  ug_value *m = sample();
  /* at the offending character inside the tag */
  fails(m, "ab {{= 1 + zz}}", 1, 12, "undefined name 'zz'");
  fails(m, "x\n  {{= n + items}}", 2, 11, "only integers and booleans");
  fails(m, "{{= id * 2}}", 1, 5, "only integers and booleans");
  fails(m, "{{= cfg + 1}}", 1, 5, "only integers and booleans");
  fails(m, "{{= n +}}", 1, 8, "unexpected end");
  /* evaluation errors: at the tag */
  fails(m, "x\n {{= n / zero}}", 2, 2, "division by zero");
  fails(m, "{{= big * big * big}}", 1, 1, "overflow");
  ug_value_free(m);
}

/* ---- comments ------------------------------------------------------------------ */

Test(render, comments_are_dropped) {
  ug_value *m = sample();
  renders(m, "a{{! anything at all: {{, }, ; */ }}b", "ab");
  renders(m, "a{{!}}b", "ab");
  renders(m, "a\n{{! a whole-line comment }}\nb\n", "a\nb\n");
  renders(m, "a\n{{! a comment\n   over lines }}\nb\n", "a\nb\n");
  renders(m, "a {{! trailing }}\nb", "a \nb");
  ug_value_free(m);
}

/* ---- standalone lines ------------------------------------------------------------- */

Test(render, standalone_section_lines_vanish) {
  ug_value *m = sample();
  renders(m, "a\n{{#yes}}\nb\n{{/yes}}\nc\n", "a\nb\nc\n");
  renders(m, "a\n{{#no}}\nb\n{{/no}}\nc\n", "a\nc\n");
  renders(m, "a\n{{^no}}\nb\n{{/no}}\nc\n", "a\nb\nc\n");
  /* indentation and trailing blanks, CRLF, and no final newline */
  renders(m, "a\n  \t{{#yes}}  \nb\n    {{/yes}}\t\nc", "a\nb\nc");
  renders(m, "a\r\n{{#yes}}\r\nb\r\n{{/yes}}\r\nc\r\n", "a\r\nb\r\nc\r\n");
  renders(m, "{{#yes}}\nb\n{{/yes}}", "b\n");
  /* a list: the body lines repeat, the tag lines never appear */
  renders(m, "{\n  {{#items}}\n  f({{i}});\n  {{/items}}\n}\n", "{\n  f(1);\n  f(2);\n  f(3);\n}\n");
  ug_value_free(m);
}

Test(render, non_standalone_tags_keep_the_surrounding_text) {
  ug_value *m = sample();
  renders(m, "x {{#yes}}y{{/yes}} z\n", "x y z\n");
  renders(m, "x {{#no}}y{{/no}} z\n", "x  z\n");
  renders(m, "a\nx {{#yes}}\nb\n{{/yes}} z\nc\n", "a\nx \nb\n z\nc\n");
  /* two tags on one line: neither is standalone */
  renders(m, "a\n{{#yes}}{{/yes}}\nb\n", "a\n\nb\n");
  ug_value_free(m);
}

/* ---- partials ------------------------------------------------------------------ */

Test(render, partials) {
  ug_value *m = sample();
  write_tmpl("part.h", "P{{n}}");
  write_tmpl("line.h", "L{{id}}\n");
  renders(m, "x{{> part.h}}y", "xP42y");
  renders(m, "x{{>part.h}}y", "xP42y");
  /* a standalone partial line is replaced by the partial's text */
  renders(m, "a\n{{> line.h}}\nb\n", "a\nLmy_func\nb\n");
  /* rendered in the current scope */
  write_tmpl("item.h", "<{{i}}/{{n}}>");
  renders(m, "{{#items}}{{> item.h}}{{/items}}", "<1/42><2/42><3/42>");
  /* partials include partials */
  write_tmpl("outer.h", "[{{> part.h}}]");
  renders(m, "{{> outer.h}}", "[P42]");
  ug_value_free(m);
}

Test(render, partials_follow_the_search_path_in_order) {
  ug_value *m = sample();
  char second[300];
  snprintf(second, sizeof second, "%s/second", tmpdir);
  cr_assert_eq(mkdir(second, 0700), 0);
  write_in(second, "p.h", "second");
  write_in(second, "only2.h", "only-in-second");
  write_tmpl("p.h", "first");
  dirs[1] = second;
  path.ndirs = 2;
  renders(m, "{{> p.h}} {{> only2.h}}", "first only-in-second");
  dirs[0] = second;
  dirs[1] = tmpdir;
  renders(m, "{{> p.h}}", "second");
  dirs[0] = tmpdir;
  ug_value_free(m);
}

/* a spec's "partials" name files: a template shared by kernels includes
 * {{> activation}} and each kernel's spec says which file that is */
Test(render, partials_a_spec_names) {
  ug_value *m = sample();
  write_tmpl("silu.h", "silu{{n}}");
  write_tmpl("gelu.h", "gelu");
  const ug_tmpl_partial silu[] = {{"activation", "silu.h"}}, gelu[] = {{"activation", "gelu.h"}};
  path.partials = silu;
  path.npartials = 1;
  renders(m, "[{{> activation}}] {{> gelu.h}}", "[silu42] gelu");
  path.partials = gelu;
  renders(m, "[{{> activation}}]", "[gelu]");
  /* the file a name gives is still a plain name on the search path */
  const ug_tmpl_partial escape[] = {{"activation", "../silu.h"}};
  path.partials = escape;
  fails(m, "{{> activation}}", 1, 1, "partial \"activation\" not found");
  path.partials = NULL;
  path.npartials = 0;
  fails(m, "{{> activation}}", 1, 1, "partial \"activation\" not found");
  ug_value_free(m);
}

Test(render, partial_not_found) {
  ug_value *m = sample();
  fails(m, "a\n {{> missing.h}}", 2, 2, "partial \"missing.h\" not found");
  /* names with directories are never looked up, even when the file exists */
  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", tmpdir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  write_in(sub, "x.h", "X");
  fails(m, "{{> sub/x.h}}", 1, 1, "not found");
  fails(m, "{{> ../x.h}}", 1, 1, "not found");
  fails(m, "{{>}}", 1, 1, "bad partial name");
  ug_value_free(m);
}

Test(render, partial_cycles_are_errors) {
  ug_value *m = sample();
  write_tmpl("self.h", "x{{> self.h}}");
  ug_diag d;
  char *out = ug_render_text("t.tmpl", "{{> self.h}}", &path, m, &d);
  cr_assert_null(out);
  cr_assert_not_null(strstr(d.text, "nest"), "message: %s", d.text);
  cr_assert_not_null(strstr(d.file, "self.h"), "the error is in the partial, not in %s", d.file);
  cr_assert_eq(d.at.line, 1);
  cr_assert_eq(d.at.col, 2);
  /* a two-partial cycle */
  write_tmpl("ping.h", "{{> pong.h}}");
  write_tmpl("pong.h", "{{> ping.h}}");
  out = ug_render_text("t.tmpl", "{{> ping.h}}", &path, m, &d);
  cr_assert_null(out);
  cr_assert_not_null(strstr(d.text, "nest"), "message: %s", d.text);
  ug_value_free(m);
}

Test(render, errors_in_partials_name_the_partial) {
  ug_value *m = sample();
  write_tmpl("bad.h", "ok\n  {{nope}}\n");
  ug_diag d;
  char *out = ug_render_text("t.tmpl", "line\n{{> bad.h}}\n", &path, m, &d);
  cr_assert_null(out);
  char want[512];
  snprintf(want, sizeof want, "%s/bad.h", tmpdir);
  cr_assert_str_eq(d.file, want);
  cr_assert_eq(d.at.line, 2);
  cr_assert_eq(d.at.col, 3);
  cr_assert_not_null(strstr(d.text, "'nope' names nothing in scope"), "%s", d.text);
  ug_value_free(m);
}

Test(render, render_file) {
  ug_value *m = sample();
  write_tmpl("k.c.tmpl", "/* {{id}} */\n{{#yes}}\nint n = {{n}};\n{{/yes}}\n");
  ug_diag d;
  char *out = ug_render_file("k.c.tmpl", &path, m, &d);
  cr_assert_not_null(out, "%s", d.text);
  cr_assert_str_eq(out, "/* my_func */\nint n = 42;\n");
  free(out);
  out = ug_render_file("absent.c.tmpl", &path, m, &d);
  cr_assert_null(out);
  cr_assert_str_eq(d.file, "absent.c.tmpl");
  cr_assert_not_null(strstr(d.text, "not found"), "%s", d.text);
  /* errors in a file carry its full path */
  write_tmpl("e.c.tmpl", "\n\n   {{#yes}}");
  out = ug_render_file("e.c.tmpl", &path, m, &d);
  cr_assert_null(out);
  char want[512];
  snprintf(want, sizeof want, "%s/e.c.tmpl", tmpdir);
  cr_assert_str_eq(d.file, want);
  cr_assert_not_null(strstr(d.text, "not closed"), "%s", d.text);
  ug_value_free(m);
}

/* ---- errors with positions ---------------------------------------------------- */

Test(render, error_unclosed_tag) {
  ug_value *m = sample();
  fails(m, "line1\n  {{x", 2, 3, "not closed with '}}'");
  fails(m, "{{n}} {{", 1, 7, "not closed");
  fails(m, "{{n}", 1, 1, "not closed");
  ug_value_free(m);
}

Test(render, error_unclosed_section) {
  ug_value *m = sample();
  ug_diag d;
  char *out = ug_render_text("t.tmpl", "a\n{{#yes}}\nb\n", &path, m, &d);
  cr_assert_null(out);
  cr_assert_str_eq(d.file, "t.tmpl");
  cr_assert_not_null(strstr(d.text, "section 'yes' is not closed"), "%s", d.text);
  cr_assert_not_null(strstr(d.text, "{{/yes}}"), "%s", d.text);
  /* located at the open tag */
  cr_assert(d.at.line == 2 && d.at.col == 1, "at %d:%d", d.at.line, d.at.col);
  out = ug_render_text("t.tmpl", "a\n{{#yes}}x{{#yes}}\nbbb{{/yes}}", &path, m, &d);
  cr_assert_null(out);
  cr_assert(d.at.line == 2 && d.at.col == 1, "the outer section is the unclosed one; at %d:%d", d.at.line, d.at.col);
  /* in a skipped section too */
  out = ug_render_text("t.tmpl", "{{#no}}b", &path, m, &d);
  cr_assert_null(out);
  cr_assert_not_null(strstr(d.text, "section 'no' is not closed"), "%s", d.text);
  ug_value_free(m);
}

Test(render, error_mismatched_close) {
  ug_value *m = sample();
  fails(m, "{{#yes}}\nx\n{{/no}}\n", 3, 1, "{{/no}} does not match the open section 'yes'");
  fails(m, "{{#yes}}{{#no}}{{/yes}}{{/no}}", 1, 16, "does not match");
  ug_value_free(m);
}

Test(render, error_close_without_open) {
  ug_value *m = sample();
  fails(m, "x\n  {{/yes}}", 2, 3, "{{/yes}} closes no open section");
  fails(m, "{{#yes}}{{/yes}}{{/yes}}", 1, 17, "closes no open section");
  ug_value_free(m);
}

Test(render, error_unknown_name) {
  ug_value *m = sample();
  fails(m, "a\nb {{nope}}", 2, 3, "'nope' names nothing in scope");
  /* a missing name is never silently empty, even in a list item */
  fails(m, "{{#items}}\n{{j}}\n{{/items}}", 2, 1, "'j' names nothing in scope");
  ug_value_free(m);
}

Test(render, error_printing_a_list_or_map) {
  ug_value *m = sample();
  fails(m, "x = {{items}};", 1, 5, "'items' is a list");
  fails(m, "\n{{cfg.inner}}", 2, 1, "'cfg.inner' is a map");
  ug_value_free(m);
}

Test(render, error_bad_names) {
  ug_value *m = sample();
  fails(m, "x {{a b}}", 1, 3, "'a b' is not a name");
  fails(m, "{{a..b}}", 1, 1, "is not a name");
  fails(m, "{{.a}}", 1, 1, "is not a name");
  fails(m, "{{a.}}", 1, 1, "is not a name");
  fails(m, "{{1a}}", 1, 1, "is not a name");
  fails(m, "{{}}", 1, 1, "is not a name");
  fails(m, "{{a;b}}", 1, 1, "is not a name");
  fails(m, "{{#a-b}}{{/a-b}}", 1, 1, "is not a name");
  ug_value_free(m);
}

Test(render, error_tag_spanning_lines) {
  ug_value *m = sample();
  fails(m, "a\n {{n\n}}", 2, 2, "must fit on one line");
  fails(m, "{{#yes\n}}{{/yes}}", 1, 1, "must fit on one line");
  fails(m, "{{= n +\n 1}}", 1, 1, "must fit on one line");
  /* an unclosed tag followed by another tag further down */
  fails(m, "{{n\nint x; {{n}}", 1, 1, "must fit on one line");
  ug_value_free(m);
}

Test(render, error_clears_and_fills_the_diag) {
  ug_value *m = sample();
  ug_diag d;
  memset(&d, 'x', sizeof d);
  char *out = ug_render_text("t.tmpl", "{{n}}", &path, m, &d);
  cr_assert_not_null(out);
  free(out);
  cr_assert_eq(d.text[0], '\0', "a success leaves no message");
  cr_assert_eq(d.at.line, 0);
  ug_value_free(m);
}

/* ---- what can reach the C text ------------------------------------------------------ */

Test(render, map_ident_refuses_non_identifiers) {
  static const char *const bad[] = {
      "x; system(\"rm\")", "*/", "", "a-b", "1abc", "a b", "a.b", "x/*", "a\nb", "\xc3\xa9t\xc3\xa9", "x;",
  };
  ug_value *m = ug_map_new();
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_eq(ug_map_ident(m, "k", bad[i]), -1, "\"%s\" was accepted", bad[i]);
  cr_assert_eq(ug_map_ident(m, "k", NULL), -1);
  /* 64 characters is the limit */
  char s[70];
  memset(s, 'a', 65);
  s[65] = '\0';
  cr_assert_eq(ug_map_ident(m, "k", s), -1, "a 65-character identifier was accepted");
  cr_assert_eq(m->n, 0, "a refused value left an entry");
  s[64] = '\0';
  cr_assert_eq(ug_map_ident(m, "k", s), 0, "a 64-character identifier was refused");
  cr_assert_eq(ug_map_ident(m, "k2", "_Ok_123"), 0);
  cr_assert_eq(ug_map_ident(m, "k3", "_"), 0);
  cr_assert_eq(m->n, 3);
  ug_value_free(m);
}

Test(render, values_can_never_inject_c) {
  static const char *const attacks[] = {
      "x; system(\"rm -rf /\")", "*/ evil(); /*", "a;b", "x*/", "1;", "}", "\"", "a\n#include <x>",
  };
  ug_value *m = ug_map_new();
  cr_assert_eq(ug_map_ident(m, "name", "safe_name"), 0);
  for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
    cr_assert_eq(ug_map_ident(m, "name", attacks[i]), -1, "\"%s\" was accepted", attacks[i]);
    cr_assert_eq(ug_map_ident(m, attacks[i], attacks[i]), -1);
  }
  ug_value *list = ug_map_list(m, "fns");
  ug_value *it = ug_list_push_map(list);
  cr_assert_eq(ug_map_ident(it, "f", "*/"), -1);
  cr_assert_eq(ug_map_ident(it, "f", "g"), 0);
  /* a template whose only ';' and comment markers are its own: every value
   * printed comes out as an identifier or a number */
  ug_diag d;
  char *out = ug_render_text("t.tmpl", "/* {{name}} */ {{#fns}}{{f}}{{/fns}}", &path, m, &d);
  cr_assert_not_null(out, "%s", d.text);
  cr_assert_str_eq(out, "/* safe_name */ g");
  free(out);
  out = ug_render_text("t.tmpl", "{{name}}{{#fns}}{{f}}{{/fns}}", &path, m, &d);
  cr_assert_not_null(out);
  cr_assert_null(strchr(out, ';'));
  cr_assert_null(strstr(out, "*/"));
  cr_assert_null(strchr(out, '"'));
  free(out);
  ug_value_free(m);
}

Test(render, tmpl_find) {
  char out[512], want[512];
  write_tmpl("ok.tmpl", "x");
  write_tmpl(".hidden", "x");
  cr_assert_eq(ug_tmpl_find(&path, "ok.tmpl", out, sizeof out), 0);
  snprintf(want, sizeof want, "%s/ok.tmpl", tmpdir);
  cr_assert_str_eq(out, want);
  cr_assert_eq(ug_tmpl_find(&path, "absent.tmpl", out, sizeof out), -1);
  /* never a path: no '/', no leading '.', not empty */
  cr_assert_eq(ug_tmpl_find(&path, ".hidden", out, sizeof out), -1);
  cr_assert_eq(ug_tmpl_find(&path, "../ok.tmpl", out, sizeof out), -1);
  cr_assert_eq(ug_tmpl_find(&path, "./ok.tmpl", out, sizeof out), -1);
  cr_assert_eq(ug_tmpl_find(&path, "/etc/passwd", out, sizeof out), -1);
  cr_assert_eq(ug_tmpl_find(&path, "sub/ok.tmpl", out, sizeof out), -1);
  cr_assert_eq(ug_tmpl_find(&path, "", out, sizeof out), -1);
  /* a directory is not a template */
  char sub[300];
  snprintf(sub, sizeof sub, "%s/dir.tmpl", tmpdir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  cr_assert_eq(ug_tmpl_find(&path, "dir.tmpl", out, sizeof out), -1);
  /* empty and NULL directories on the path are skipped */
  const char *d2[3] = {"", NULL, tmpdir};
  ug_tmpl_path p2 = {d2, 3, NULL, 0};
  cr_assert_eq(ug_tmpl_find(&p2, "ok.tmpl", out, sizeof out), 0);
  cr_assert_str_eq(out, want);
  /* a result that does not fit is not found, never truncated */
  char tiny[8];
  cr_assert_eq(ug_tmpl_find(&path, "ok.tmpl", tiny, sizeof tiny), -1);
}

/* Sections nest by recursion in the renderer, several KiB of stack a level;
 * a template is input (a user's --specs directory), so deep nesting must be
 * an error, never a stack overflow (it once was: about 1700 levels crashed). */
Test(render, deep_section_nesting_is_an_error_not_a_crash) {
  enum { DEPTH = 20000 };
  ug_value *m = sample();
  char *text = malloc(DEPTH * 16 + 1), *q = text;
  cr_assert_not_null(text);
  for (int i = 0; i < DEPTH; i++) q += sprintf(q, "{{#yes}}");
  for (int i = 0; i < DEPTH; i++) q += sprintf(q, "{{/yes}}");
  ug_diag d;
  char *out = ug_render_text("t.tmpl", text, &path, m, &d);
  cr_assert_null(out);
  cr_assert_not_null(strstr(d.text, "nest more than"), "%s", d.text);
  free(out);
  free(text);
  ug_value_free(m);
}
