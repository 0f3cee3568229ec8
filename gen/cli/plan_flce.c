/* ubgen plan flce.chunk --dtype D --shape bt=N,hidden=N,vocab=N: what
 * ubg_flce would do for that call. The rows per chunk and where they come
 * from (a variant forced by UBGEN_VARIANT, else the tuning DB's entry for
 * the call's bucket and UB budget, else the rule the flce spec declares,
 * Liger's as shipped), the GEMM backend, the number of chunks
 * and the scratch a chunk costs. Not a spec'd pass: the answer is the
 * runtime's own (rt_flce_choose, rt_flce_scratch_sizes), asked in a context
 * created as an application would create one with this budget and DB, so
 * the environment is read as at run time and the two cannot disagree. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../runtime/internal.h"
#include "cli.h"
#include "shape_arg.h"
#include "../lib/tunedb.h"

static const char *const NAMES[3] = {"bt", "hidden", "vocab"};

/* bt, hidden, vocab from --shape, parsed as `ubgen tune flce.chunk` parses
 * it (the flce spec's shape args); -1 with a message printed */
static int parse_shape(cli_opts *o, int64_t v[3]) {
  if (!o->shape) {
    cli_error("plan: flce.chunk needs --shape bt=N,hidden=N,vocab=N");
    return -1;
  }
  /* only the three shape names: the passes' other int args mean nothing here */
  char *copy = strdup(o->shape);
  if (!copy) return -1;
  int rc = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) continue; /* cli_shape_env says what is wrong with it */
    *eq = '\0';
    if (strcmp(tok, NAMES[0]) && strcmp(tok, NAMES[1]) && strcmp(tok, NAMES[2])) {
      cli_error("--shape: flce.chunk has no shape name \"%s\" (its shape is bt,hidden,vocab)", tok);
      rc = -1;
    }
  }
  free(copy);
  if (rc) return -1;
  ug_specset set;
  if (cli_load_specs(o, &set) < 0) return -1;
  const ug_kernel *k = ug_specset_find(&set, "flce");
  int64_t *env = NULL;
  if (!k) {
    cli_error("plan: flce.chunk needs the flce spec, which is not loaded");
    rc = -1;
  } else {
    const ug_pass *p = &k->passes[0]; /* every pass has the kernel's shape args */
    env = calloc((size_t)p->nsyms + 1, sizeof *env);
    rc = env && cli_shape_env(p, o->shape, env) == 0 ? 0 : -1;
    for (int i = 0; i < 3 && !rc; i++) {
      int sym = ug_pass_sym(p, NAMES[i]);
      if (sym < 0) {
        cli_error("plan: flce.chunk needs the flce spec's shape arg %s, which %s does not have", NAMES[i], k->path);
        rc = -1;
        break;
      }
      v[i] = env[sym];
      if (v[i] < 1) {
        cli_error("--shape: %s=%lld is below 1 (plan flce.chunk plans a call of at least one row)", NAMES[i],
                  (long long)v[i]);
        rc = -1;
      } else if (i > 0 && v[i] > INT32_MAX) { /* ubg_flce's own limit */
        cli_error("--shape: %s=%lld is above ubg_flce's limit, 2^31 - 1", NAMES[i], (long long)v[i]);
        rc = -1;
      }
    }
  }
  free(env);
  ug_specset_free(&set);
  return rc;
}

/* ceil(a / b) for a >= 0, b >= 1, without forming a + b - 1 */
static int64_t cdiv(int64_t a, int64_t b) { return a == 0 ? 0 : (a - 1) / b + 1; }

/* why the chunk is not the tuned one (source is not "tuned") */
static void not_tuned(const ubg_ctx *ctx, const rt_flce_choice *ch, const char *db_path, int db_load,
                      const char *db_warn, int dtype,
                      const int64_t bucket_v[3], const char *bucket, char *why, size_t n) {
  struct stat st;
  if (!db_path) {
    snprintf(why, n, "no tuning DB (--db, UBGEN_TUNING_DB, UBGEN_CACHE_DIR or HOME names one)");
  } else if (db_load == 1) {
    snprintf(why, n, "the tuning DB is unusable: %s", db_warn);
  } else if (!ctx->tunedb.n && stat(db_path, &st) != 0) {
    snprintf(why, n, "no tuning DB at %.400s (`ubgen tune` and `make run` write it there)", db_path);
  } else if (!ch->entry) {
    int l = snprintf(why, n, "no tuning entry for flce.chunk %s at bucket %s, ub_bytes %lld", ug_dtype_name(dtype),
                     bucket, (long long)ctx->ub_bytes);
    /* the usual miss: tuned at another UB budget (--ub) */
    for (int i = 0; i < ctx->tunedb.n && l > 0 && (size_t)l < n; i++) {
      const ug_tune_entry *e = &ctx->tunedb.e[i];
      if (strcmp(e->kernel, "flce") || strcmp(e->pass, "chunk") || e->dtype != dtype || e->nshape != 3) continue;
      bool same = true;
      for (int j = 0; j < 3; j++) same = same && !strcmp(e->shape_names[j], NAMES[j]) && e->shape[j] == bucket_v[j];
      if (same) {
        snprintf(why + l, n - (size_t)l, " (it has one at ub_bytes %lld: --ub)", (long long)e->ub_bytes);
        break;
      }
    }
  } else if (ch->entry_chunk < 1) {
    snprintf(why, n, "the tuning entry for bucket %s names \"%s\", which is not chunk=N, chunk=N,gemm=openblas "
             "or chunk=N,gemm=amx (N in plain decimal, 1 to 2^30)",
             bucket, ch->entry->variant);
  } else {
    snprintf(why, n, "the variant forced by %s (flce.chunk=%s) wins over the tuning DB's %s for bucket %s",
             ch->chunk_source, ch->forced, ch->entry->variant, bucket);
  }
}

static int plan_flce_chunk(cli_opts *o, int dtype) {
  int64_t sh[3];
  if (parse_shape(o, sh) < 0) return EXIT_USAGE;
  const int64_t bt = sh[0], hidden = sh[1], vocab = sh[2];
  /* sizes ubg_flce refuses before it plans (its check_size): x, weight and a
   * chunk of logits, at most bt rows, must have a byte size */
  const int64_t es = dtype == UBG_F32 ? 4 : 2;
  const struct {
    const char *what;
    int64_t a, b, es;
  } sizes[] = {{"x = bt x hidden", bt, hidden, es}, {"weight = vocab x hidden", vocab, hidden, es},
               {"the logits of bt rows = bt x vocab f32", bt, vocab, 4}};
  for (int i = 0; i < 3; i++) {
    int64_t bytes;
    if (__builtin_mul_overflow(sizes[i].a, sizes[i].b, &bytes) || __builtin_mul_overflow(bytes, sizes[i].es, &bytes) ||
        bytes > (int64_t)(PTRDIFF_MAX / 4)) {
      cli_error("--shape %s: %s = %lld x %lld does not fit in memory (ubg_flce refuses the call)", o->shape,
                sizes[i].what, (long long)sizes[i].a, (long long)sizes[i].b);
      return EXIT_USAGE;
    }
  }
  /* the tuning DB: --db, else the one the library reads, as plan KERNEL.PASS */
  char db_file[4096];
  if (cli_db_to_read(o, db_file, sizeof db_file) < 0) return EXIT_USAGE;
  const char *db_path = db_file[0] ? db_file : NULL;
  int db_load = 0;
  char db_warn[1024] = "";
  if (db_path) { /* loaded here for its warning; the context loads it alike */
    ug_tunedb db;
    db_load = ug_tunedb_load_here(db_path, &db, db_warn, sizeof db_warn);
    ug_tunedb_free(&db);
    if (db_load < 0) {
      cli_error("plan: out of memory reading %s", db_path);
      return EXIT_USAGE;
    }
    if (db_load == 1) fprintf(stderr, "ubgen: warning: tuning DB %s: ignored\n", db_warn);
  }
  ubg_config cfg = {0};
  cfg.ub_bytes = (size_t)o->budget.ub_bytes;
  cfg.safety_margin = o->budget.margin;
  cfg.threads = 1; /* the chunk does not depend on it */
  cfg.tuning_db = db_path ? db_path : "/nonexistent/ubgen-plan-reads-no-db";
  ubg_ctx *ctx;
  if (ubg_ctx_create(&cfg, &ctx) != UBG_OK) { /* e.g. UBGEN_VARIANT=flce.chunk=abc: an application gets the same */
    cli_error("plan: %s", ubg_ctx_error(NULL));
    return EXIT_USAGE;
  }
  rt_flce_choice ch;
  rt_flce_choose(ctx, (ubg_dtype)dtype, bt, hidden, vocab, &ch);
  const ug_kernel *spec = rt_find_kernel(ctx, "flce");
  const ug_composite *comp = ug_spec_composite(spec, "chunk");
  const int64_t rule = rt_flce_rule_rows(spec, bt, hidden, vocab);

  const int64_t bucket_v[3] = {ug_tune_bucket(bt), ug_tune_bucket(hidden), ug_tune_bucket(vocab)};
  char shape[160], bucket[160], why[700], tuned_why[1400] = "";
  snprintf(shape, sizeof shape, "bt=%lld,hidden=%lld,vocab=%lld", (long long)bt, (long long)hidden, (long long)vocab);
  snprintf(bucket, sizeof bucket, "bt=%lld,hidden=%lld,vocab=%lld", (long long)bucket_v[0], (long long)bucket_v[1],
           (long long)bucket_v[2]);
  int64_t forced_chunk = 0;
  rt_gemm env = RT_GEMM_GENERATED; /* what the forced variant names */
  if (*ch.forced) rt_flce_parse_variant(ctx, ch.forced, &forced_chunk, &env);
  const bool tuned = !strcmp(ch.chunk_source, "tuned");
  if (!tuned) not_tuned(ctx, &ch, db_path, db_load, db_warn, dtype, bucket_v, bucket, tuned_why, sizeof tuned_why);
  /* the rule's chunk is a power of two unless bt capped it */
  const bool rule_capped = rule == bt && (bt & (bt - 1)) != 0;
  if (tuned) {
    int l = snprintf(why, sizeof why, "tuned for bucket %s: %.1f us against the default %s's %.1f us (%lld candidates)",
                     bucket, ch.entry->median_us, ch.entry->default_variant, ch.entry->default_median_us,
                     (long long)ch.entry->candidates);
    if (ch.entry_chunk > bt && l > 0 && (size_t)l < sizeof why)
      snprintf(why + l, sizeof why - (size_t)l, "; chunk=%lld, at most bt", (long long)ch.entry_chunk);
  } else if (strcmp(ch.chunk_source, "spec rule")) { /* forced */
    snprintf(why, sizeof why, "forced by %s: flce.chunk=%s%s (the spec's rule would give %lld)", ch.chunk_source,
             ch.forced, forced_chunk > bt ? ", at most bt" : "",
             (long long)rule);
  } else {
    snprintf(why, sizeof why, "the flce spec's rule for the chunk (Liger's, as shipped): %s = %lld%s",
             comp && comp->naxes ? comp->axes[0].dflt_src : "(none)", (long long)rule, rule_capped ? ", capped at bt" : "");
  }

  /* the GEMMs */
  const char *missing = rt_gemm_missing(ch.gemm), *gemm = rt_gemm_names[ch.gemm];
  const bool refused = missing != NULL;
  char gemm_why[600];
  if (strcmp(ch.gemm_source, "default") && strcmp(ch.gemm_source, "tuned")) { /* forced */
    int l = snprintf(gemm_why, sizeof gemm_why, "forced by %s: flce.chunk=%s", ch.gemm_source, ch.forced);
    if (refused)
      snprintf(gemm_why + l, sizeof gemm_why - (size_t)l, ", but %s: ubg_flce refuses the call", missing);
    else if (env != ch.gemm)
      snprintf(gemm_why + l, sizeof gemm_why - (size_t)l, ", but %s runs %s only: passes flce.logits, flce.dx and flce.dw",
               rt_gemm_names[env], env == RT_GEMM_OPENBLAS ? "f32" : "bf16");
    else if (ch.entry && ch.entry_gemm != ch.gemm)
      snprintf(gemm_why + l, sizeof gemm_why - (size_t)l, ", over the tuning DB's %s", ch.entry->variant);
  } else if (!strcmp(ch.gemm_source, "tuned")) {
    snprintf(gemm_why, sizeof gemm_why, "tuned: the tuning DB's %s for bucket %s", ch.entry->variant, bucket);
  } else if (ch.entry && ch.entry_gemm != RT_GEMM_GENERATED) {
    const char *absent = rt_gemm_missing(ch.entry_gemm);
    snprintf(gemm_why, sizeof gemm_why, "the tuning DB's %s, but %s%s: passes flce.logits, flce.dx and flce.dw",
             ch.entry->variant, absent ? absent : rt_gemm_names[ch.entry_gemm],
             absent ? "" : ch.entry_gemm == RT_GEMM_OPENBLAS ? " runs f32 only" : " runs bf16 only");
  } else {
    snprintf(gemm_why, sizeof gemm_why, "the default: passes flce.logits, flce.dx and flce.dw");
  }

  const int64_t nchunks = cdiv(bt, ch.chunk), last = bt - (nchunks - 1) * ch.chunk;
  /* a MEAN call with dx and dweight, as `ubgen tune flce.chunk` times */
  rt_flce_scratch sz, sz_z, sz_in;
  rt_flce_scratch_sizes((ubg_dtype)dtype, UBG_F32, ch.chunk, hidden, vocab, false, false, true, true, true, ch.gemm,
                        ctx->threads, &sz);
  rt_flce_scratch_sizes((ubg_dtype)dtype, UBG_F32, ch.chunk, hidden, vocab, false, true, true, true, true, ch.gemm,
                        ctx->threads, &sz_z);
  /* with opts->accum_dtype the dtype: one slice of the sums instead */
  rt_flce_scratch_sizes((ubg_dtype)dtype, (ubg_dtype)dtype, ch.chunk, hidden, vocab, false, false, true, true, true,
                        ch.gemm, ctx->threads, &sz_in);
  const size_t chunk_scratch = sz.logits + sz.loss_rows + sz.dx_rows + sz.gemm_pack;

  if (o->json) {
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I}, s:I, s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I}",
        "kernel", "flce", "pass", "chunk", "dtype", ug_dtype_name(dtype), "shape", "bt", (json_int_t)bt, "hidden",
        (json_int_t)hidden, "vocab", (json_int_t)vocab, "bucket", "bt", (json_int_t)bucket_v[0], "hidden",
        (json_int_t)bucket_v[1], "vocab", (json_int_t)bucket_v[2], "ub_bytes",
        (json_int_t)ctx->ub_bytes, "chunk", (json_int_t)ch.chunk, "source", ch.chunk_source, "why", why, "rule_chunk",
        (json_int_t)rule, "gemm", gemm, "gemm_source", ch.gemm_source, "gemm_why",
        gemm_why, "chunks", (json_int_t)nchunks, "last_chunk", (json_int_t)last, "scratch_bytes",
        (json_int_t)chunk_scratch, "logits_bytes", (json_int_t)sz.logits, "loss_rows_bytes", (json_int_t)sz.loss_rows,
        "z_loss_rows_bytes", (json_int_t)sz_z.z_rows, "dweight_acc_bytes", (json_int_t)sz.dw_acc, "dbias_acc_bytes",
        (json_int_t)sz.dbias_acc);
    if (!tuned) json_object_set_new(root, "not_tuned", json_string(tuned_why));
    if (ch.entry) json_object_set_new(root, "tuned_variant", json_string(ch.entry->variant));
    if (sz.gemm_pack) json_object_set_new(root, "gemm_pack_bytes", json_integer((json_int_t)(sz.dx_rows + sz.gemm_pack)));
    if (sz.dw_acc)
      json_object_set_new(root, "accum_in_dtype_bytes", json_integer((json_int_t)sz_in.db_chunk));
    if (refused) {
      char err[300];
      snprintf(err, sizeof err, "gemm=%s, but %s", gemm, missing);
      json_object_set_new(root, "error", json_string(err));
    }
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (s) puts(s);
    free(s);
    json_decref(root);
  } else {
    printf("flce.chunk  dtype %s  shape %s\n", ug_dtype_name(dtype), shape);
    printf("bucket    %s, ub_bytes %lld (the tuning DB's key)\n", bucket, (long long)ctx->ub_bytes);
    if (tuned) printf("chunk     %lld rows  (tuned)\n", (long long)ch.chunk);
    else printf("chunk     %lld rows  (%s; not tuned: %s)\n", (long long)ch.chunk, ch.chunk_source, tuned_why);
    printf("why       %s\n", why);
    printf("gemm      %s  (%s)\n", gemm, gemm_why);
    printf("chunks    %lld of %lld rows%s", (long long)nchunks, (long long)ch.chunk, last != ch.chunk ? "" : "\n");
    if (last != ch.chunk) printf(", the last %lld\n", (long long)last);
    printf("scratch   %zu bytes a chunk: %zu of logits (%lld x %lld f32) + %zu of row losses\n", chunk_scratch,
           sz.logits, (long long)ch.chunk, (long long)vocab, sz.loss_rows);
    if (sz.gemm_pack)
      printf("          + %zu for the AMX tiles' packed operands and a chunk of dx in f32\n",
             sz.dx_rows + sz.gemm_pack);
    printf("          (reduction mean or sum; %zu more with z_loss, none with reduction none)\n", sz_z.z_rows);
    if (sz.dw_acc)
      printf("          and, whatever the chunk, %zu of f32 dweight accumulator (%zu more with dbias);\n"
             "          %zu with the sums kept in %s (opts->accum_dtype, Liger's default)\n",
             sz.dw_acc, sz.dbias_acc, sz_in.db_chunk, ug_dtype_name(dtype));
  }
  ubg_ctx_destroy(ctx);
  return refused ? EXIT_FAILED : EXIT_OK;
}

static cli_composite_planner planner = {"flce", "chunk", plan_flce_chunk, NULL};
__attribute__((constructor)) static void register_planner(void) { cli_register_planner(&planner); }
