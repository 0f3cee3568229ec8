/* libFuzzer target: a user's composite op, loaded and run. Input: a kernel
 * spec's JSON text (starting with '{'; seeds in tests/fuzz/composite), or
 * bytes that choose a "run" for scale_rows' op (tests/specs) from tables of
 * bindings, scratch buffers, steps and routines (make_run): nearly every
 * such input loads, so the runner's checks see far more ops than mutated
 * JSON reaches. Each composite with a "run" is run by the composite
 * runner (rt_composite_run_spec) on one context for every input, whose
 * passes (the shipped specs' and tests/specs') its steps launch, each
 * variant compiled once by tcc. The op's ints are small values drawn from
 * the input's hash, within their bounds.
 * Every tensor has exactly the bytes its shape needs and ends at a guard
 * page: a binding the runner let through past a tensor faults in a kernel
 * (JIT code, not instrumented) or trips AddressSanitizer in a routine. Any
 * status is fine; nothing may crash, leak or read out of bounds. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../runtime/internal.h"
#include "../runtime/ubgen_aot.h"

/* no built-in kernels: every variant through tcc */
const ubg_aot_table ubg_aot_main = {"fuzz", NULL, 0, NULL, 0};

enum { MAX_ELEMS = 1 << 14 };

static ubg_ctx *ctx;
static long ops, ran; /* ops run, and those that returned UBG_OK (UBGEN_FUZZ_STATS=1 prints them) */
static bool verbose;   /* UBGEN_FUZZ_STATS=2: and why each failed call failed */

static long parses, reuses; /* made specs parsed, and found parsed (parse_made) */
static void stats(void) {
  fprintf(stderr, "fuzz_composite: %ld ops run, %ld returned UBG_OK; %ld made specs parsed, %ld found parsed\n", ops,
          ran, parses, reuses);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  ubg_config cfg = {0};
  cfg.spec_path = UBGEN_SOURCE_DIR "/specs:" UBGEN_SOURCE_DIR "/tests/specs";
  cfg.tuning_db = "/nonexistent/ubgen-fuzz-no-db";
  cfg.threads = 1;
  cfg.backend = UBG_BACKEND_TCC;
  if (ubg_ctx_create(&cfg, &ctx) != UBG_OK) abort();
  const char *st = getenv("UBGEN_FUZZ_STATS");
  if (st) atexit(stats), verbose = !strcmp(st, "2");
  return 0;
}

/* n bytes that end where a page nobody may touch begins */
typedef struct {
  char *map;
  size_t len;
} guarded;

static void *guarded_alloc(guarded *g, size_t n) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (n + page - 1) / page * page;
  g->len = body + page;
  g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g->map == MAP_FAILED) abort();
  mprotect(g->map + body, page, PROT_NONE);
  memset(g->map + body - n, 0x3f, n); /* 0.75 in every float's top bytes: finite values */
  return g->map + body - n;
}

/* a small value within the argument's bounds: its default or one of its
 * values at times, else 0 to 8 */
static int64_t int_value(const ug_arg *a, uint64_t h) {
  int64_t v = a->has_dflt && h % 4 == 0 ? (int64_t)a->dflt : (int64_t)(h / 4 % 9);
  if (a->nvalues) v = a->values[h / 4 % (uint64_t)a->nvalues];
  if (a->has_min && v < a->min) v = a->min;
  if (a->has_max && v > a->max) v = a->max;
  return v;
}

static void run_op(const ug_kernel *k, const ug_composite *c, ubg_dtype dtype, uint64_t h) {
  const ug_pass *call = c->call;
  int64_t *env = calloc((size_t)call->nsyms + 1, sizeof *env);
  ubg_arg args[UG_MAX_ARGS];
  int64_t nbytes[UG_MAX_ARGS];
  guarded g[UG_MAX_ARGS] = {{0}};
  if (!env) abort();
  if (call->sym_dtype >= 0) env[call->sym_dtype] = dtype;
  if (call->sym_dtype_bytes >= 0) env[call->sym_dtype_bytes] = (int64_t)ug_dtype_bytes((int)dtype);
  for (int i = 0; i < call->nargs; i++) {
    const ug_arg *a = &call->args[i];
    args[i].name = a->name, nbytes[i] = -1;
    if (a->kind == UG_ARG_INT) {
      args[i].kind = UBG_ARG_I64, args[i].v.i = env[call->sym_of_arg[i]] = int_value(a, h >> (2 * i % 48));
    } else if (a->kind == UG_ARG_FLOAT) {
      args[i].kind = UBG_ARG_F64, args[i].v.f = a->has_dflt ? a->dflt : 0.5;
    } else {
      env[call->sym_of_arg[i]] = 1; /* has_<tensor> */
    }
  }
  for (int i = 0; i < call->nargs; i++) {
    const ug_arg *a = &call->args[i];
    if (a->kind != UG_ARG_TENSOR) continue;
    int64_t count = 1, d;
    ug_expr_err err;
    for (int r = 0; r < a->rank; r++)
      if (ug_expr_eval(a->shape[r], env, &d, &err) < 0 || d < 0 || d > MAX_ELEMS || (count *= d) > MAX_ELEMS) goto out;
    nbytes[i] = count * (int64_t)ug_elem_bytes(a->elem, (int)dtype);
    args[i].kind = UBG_ARG_PTR, args[i].v.p = guarded_alloc(&g[i], (size_t)nbytes[i]);
    /* integer tensors (targets, indices) within their range where the spec gives one */
    if (ug_elem_dtype(a->elem, (int)dtype) < 0 && ug_elem_bytes(a->elem, (int)dtype) == 8)
      for (int64_t e = 0; e < count; e++) ((int64_t *)args[i].v.p)[e] = (e + (int64_t)(h % 5)) % 3;
  }
  ops++;
  const ubg_status s = rt_composite_run_spec(ctx, k, c, "fuzz", dtype, args, (size_t)call->nargs, nbytes);
  ran += s == UBG_OK;
  if (s && verbose) fprintf(stderr, "fuzz_composite: %s.%s %s: %s\n", k->name, c->name, ug_dtype_name(dtype), ubg_ctx_error(ctx));
out:
  for (int i = 0; i < call->nargs; i++)
    if (g[i].map) munmap(g[i].map, g[i].len);
  free(env);
}

/* ---- bytes -> a scale_rows spec whose "run" they choose ---- */

typedef struct {
  const uint8_t *p;
  size_t n;
} bytes;

static unsigned pick(bytes *b, unsigned n) {
  unsigned v = b->n ? *b->p : 0;
  if (b->n) b->p++, b->n--;
  return v % n;
}

#define PICK(b, table) (table)[pick(b, sizeof(table) / sizeof(table)[0])]

static const char *const tensors[] = {"x", "y", "z", "x[off]", "y[off]", "z[off]", "spare", "tmp",
                                      "has_z ? z[off] : y[off]", "has_z ? spare : tmp"};
static const char *const ints[] = {"rows", "rows + 1", "m", "chunk", "off", "0", "n", "n + 1", "1", "rows * n",
                                   "chunk * n", "m * n + 1", "-1"};
static const char *const counts[] = {"chunk * n", "chunk * n - 1", "n", "m * n", "1", "0", "chunk"};
static const char *const types[] = {"f32", "T", "i64"};
static const char *const rows_exprs[] = {"m", "m", "m", "n", "0", "m + 1"};
static const char *const defaults[] = {"cdiv(m, 4)", "1", "m", "m + 7", "3", "4096"};

/* one step: the pass scale, or a routine, its arguments bound from the tables */
static void add_step(bytes *b, char *s, size_t n) {
  char step[700];
  const unsigned kind = pick(b, 6);
  const char *when = pick(b, 3) == 0 ? "\"when\": \"has_z\", " : "";
  if (kind < 2) {
    snprintf(step, sizeof step,
             "{\"pass\": \"scale\", %s\"args\": {\"x\": \"%s\", \"y\": \"%s\", \"m\": \"%s\", \"n\": \"%s\"%s}}",
             when, PICK(b, tensors), PICK(b, tensors), PICK(b, ints), PICK(b, ints), pick(b, 2) ? ", \"a\": \"a\"" : "");
  } else if (kind == 2) {
    snprintf(step, sizeof step, "{\"routine\": \"zero\", %s\"args\": {\"dst\": \"%s\"}}", when, PICK(b, tensors));
  } else if (kind == 3) {
    snprintf(step, sizeof step, "{\"routine\": \"store\", %s\"args\": {\"dst\": \"%s\", \"src\": \"%s\"}}", when,
             PICK(b, tensors), PICK(b, tensors));
  } else if (kind == 4) {
    snprintf(step, sizeof step,
             "{\"routine\": \"convert\", %s\"args\": {\"dst\": \"%s\", \"src\": \"%s\", \"n\": \"%s\"}}", when,
             PICK(b, tensors), PICK(b, tensors), PICK(b, ints));
  } else {
    snprintf(step, sizeof step,
             "{\"routine\": \"ce_rows\", \"pass\": \"scale\", %s\"args\": {\"logits\": \"%s\", \"target\": \"%s\", "
             "\"loss\": \"%s\", \"bt\": \"%s\", \"vocab\": \"%s\", \"off\": \"off\", \"rows\": \"%s\", "
             "\"chunk\": \"chunk\", \"grad\": \"%s\"}}",
             when, PICK(b, tensors), PICK(b, tensors), PICK(b, tensors), PICK(b, ints), PICK(b, ints), PICK(b, ints),
             PICK(b, ints));
  }
  strncat(s, step, n - strlen(s) - 1);
}

static char *make_run(bytes b) {
  const char *spec = "{\"ubgen_spec\": 1, \"kernel\": \"scale_rows\", \"shape\": [\"m\", \"n\"], \"dtypes\": [\"f32\", \"bf16\"],"
                     " \"axes\": [{\"name\": \"BLOCK_D\", \"tag\": \"d\", \"values\": [64]}],"
                     " \"passes\": {\"scale\": {\"template\": \"scale_rows.c.tmpl\", \"args\": ["
                     "{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\", \"shape\": [\"m\", \"n\"]},"
                     " {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\", \"shape\": [\"m\", \"n\"]},"
                     " {\"name\": \"m\", \"type\": \"int\", \"min\": 0}, {\"name\": \"n\", \"type\": \"int\", \"min\": 1},"
                     " {\"name\": \"a\", \"type\": \"float\", \"default\": 1.0}],"
                     " \"stages\": [{\"name\": \"all\", \"grid\": \"cdiv(m * n, BLOCK_D)\"}],"
                     " \"ub\": [{\"name\": \"tile\", \"type\": \"f32\", \"count\": \"BLOCK_D\"}]}},"
                     " \"composites\": {\"rows\": {\"axes\": [{\"name\": \"chunk\", \"default\": \"%s\", \"min\": 1, \"max\": 4096}],"
                     " \"args\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\", \"shape\": [\"m\", \"n\"]},"
                     " {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\", \"shape\": [\"m\", \"n\"]},"
                     " {\"name\": \"z\", \"type\": \"%s\", \"role\": \"%s\", \"shape\": [\"m\", \"n\"], \"optional\": true},"
                     " {\"name\": \"m\", \"type\": \"int\", \"min\": 0}, {\"name\": \"n\", \"type\": \"int\", \"min\": 1, \"max\": 64},"
                     " {\"name\": \"a\", \"type\": \"float\", \"default\": 1.0}],"
                     " \"run\": {\"rows\": \"%s\", \"scratch\": [%s], \"before\": [%s], \"chunk\": [%s], \"after\": [%s]}}}}";
  static const char *const roles[] = {"out", "inout", "in"};
  const char *dflt = PICK(&b, defaults), *ztype = PICK(&b, types), *zrole = PICK(&b, roles), *rows = PICK(&b, rows_exprs);
  char scratch[400] = "", phase[3][2400] = {"", "", ""};
  const char *names[] = {"spare", "tmp"};
  for (int i = 0, ns = (int)pick(&b, 3); i < ns; i++) {
    char one[200];
    snprintf(one, sizeof one, "%s{\"name\": \"%s\", \"type\": \"%s\", \"count\": \"%s\"%s%s}", i ? ", " : "", names[i],
             PICK(&b, types), PICK(&b, counts), pick(&b, 2) ? ", \"zero\": true" : "", pick(&b, 3) ? "" : ", \"when\": \"has_z\"");
    strncat(scratch, one, sizeof scratch - strlen(scratch) - 1);
  }
  for (int ph = 0; ph < 3; ph++)
    for (int i = 0, nst = (int)pick(&b, ph == 1 ? 4 : 2) + (ph == 1); i < nst; i++) {
      if (i) strncat(phase[ph], ", ", sizeof phase[ph] - strlen(phase[ph]) - 1);
      add_step(&b, phase[ph], sizeof phase[ph]);
    }
  size_t n = strlen(spec) + strlen(scratch) + 3 * sizeof phase[0] + 200;
  char *out = malloc(n);
  if (!out) abort();
  snprintf(out, n, spec, dflt, ztype, zrole, rows, scratch, phase[0], phase[1], phase[2]);
  return out;
}

/* The specs made from run bytes, parsed, by their text. Most mutations of
 * such an input change bytes make_run never reads, or choices that give
 * the same text; parsing a text again finds nothing new, and the parse was
 * a third of the target's time. A JSON input is parsed every time: that is
 * the spec loader under test. */
enum { CACHED = 256 };
static struct {
  uint64_t hash;
  char *text;
  ug_kernel *k; /* NULL: the text does not load */
} cache[CACHED];
static unsigned next_slot;

static const ug_kernel *parse_made(const char *text) {
  const uint64_t h = ug_fnv1a(text, strlen(text));
  for (int i = 0; i < CACHED; i++)
    if (cache[i].text && cache[i].hash == h && !strcmp(cache[i].text, text)) return reuses++, cache[i].k;
  ug_diag d;
  memset(&d, 0, sizeof d);
  const unsigned s = next_slot++ % CACHED;
  free(cache[s].text);
  ug_spec_free(cache[s].k);
  cache[s].hash = h;
  if (!(cache[s].text = strdup(text))) abort();
  cache[s].k = ug_spec_parse("fuzz.json", UBGEN_SOURCE_DIR "/tests/specs", text, strlen(text), &d);
  parses++;
  return cache[s].k;
}

static bool has_dtype(const ug_kernel *k, int dt) {
  for (int i = 0; i < k->npasses; i++)
    if (k->passes[i].dtypes[dt]) return true;
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ug_kernel *parsed = NULL;
  const ug_kernel *k;
  if (size && data[0] != '{') {
    char *made = make_run((bytes){data, size});
    k = parse_made(made);
    free(made);
  } else {
    ug_diag d;
    memset(&d, 0, sizeof d);
    k = parsed = ug_spec_parse("fuzz.json", UBGEN_SOURCE_DIR "/tests/specs", (const char *)data, size, &d);
  }
  if (!k) return 0;
  const uint64_t h = ug_fnv1a(data, size);
  for (int i = 0; i < k->ncomposites; i++) {
    const ug_composite *c = &k->composites[i];
    if (!c->call || !c->run) continue;
    const int dt = (int)(h % UG_NDTYPES); /* one dtype an input */
    if (has_dtype(k, dt)) run_op(k, c, (ubg_dtype)dt, h / UG_NDTYPES);
  }
  ug_spec_free(parsed);
  return 0;
}
