/* The runtime JIT: every variant compiled by tcc and by gcc gives the same
 * bits as the one built in; threads that need the same variants at once
 * compile each exactly once; processes racing on one gcc cache entry both
 * succeed; a corrupt entry is rebuilt; an unsafe cache directory is refused
 * (the call still succeeds, through tcc); a template with a C error is
 * UBG_ECOMPILE naming the variant and the source line; the result names its
 * backend; the async gcc build swaps its code in. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx_view.h"
#include "rms_norm_cases.h"
#include "test_util.h"


/* every feasible variant of one pass and dtype, on a shape it applies to,
 * under the three castings, with w: tcc's bits against the built-in's */
static void same_bits(const char *pass, int dt, ubg_backend backend) {
  tc_variants vs = tc_load_variants(pass, dt);
  cr_assert(vs.n > 0);
  if (backend == UBG_BACKEND_GCC) tc_fresh_cache();
  const char *suffix = backend == UBG_BACKEND_GCC ? "gcc" : "tcc";
  ubg_ctx *aot = tc_ctx(UBG_BACKEND_AOT, 2), *tcc = tc_ctx(backend, 2);
  const size_t es = ref_dtype_bytes(dt);
  /* tcc: every variant; gcc: every 12th (its source and flags are the AOT
   * build's, so it can only differ in the JIT plumbing), starting at a
   * different one per pass and dtype so the six tests spread over them */
  const int step = backend == UBG_BACKEND_GCC ? 12 : 1,
            first = backend == UBG_BACKEND_GCC ? 2 * (dt + 3 * !strcmp(pass, "bwd")) % 12 : 0;
  int visited = 0;
  for (int i = first; i < vs.n; i += step, visited++) {
    const ug_variant *v = &vs.v[i];
    const int64_t bd = tc_block_d(v), rows = 37;
    const int64_t cols = v->pt.tiled ? 2 * bd + 5 : (bd > 16 ? bd - 3 : bd);
    const int64_t n = rows * cols;
    void *x = tc_tensor(dt, n, 0, 1, (uint64_t)i), *dy = tc_tensor(dt, n, 0, 1, (uint64_t)i + 7);
    void *w = tc_tensor(dt, cols, 1, 0.5, (uint64_t)i + 3);
    void *out[2], *dw[2];
    float *rstd[2];
    ubg_ctx *ctxs[2] = {aot, tcc};
    for (int c = 0; c < 2; c++) {
      out[c] = malloc((size_t)n * es);
      dw[c] = malloc((size_t)cols * es);
      rstd[c] = malloc((size_t)rows * 4);
      cr_assert_eq(ubg_set_variant(ctxs[c], "rms_norm", pass, v->name), UBG_OK);
    }
    for (int casting = 0; casting < 3; casting++) {
      for (int c = 0; c < 2; c++) {
        ubg_status s;
        if (!strcmp(pass, "fwd"))
          s = ubg_rms_norm_fwd(ctxs[c], dt, rows, cols, x, w, 1e-6f, casting == 1, casting, out[c], rstd[c]);
        else {
          for (int64_t r = 0; r < rows; r++) rstd[c][r] = 0.5f + 0.01f * (float)r;
          s = ubg_rms_norm_bwd(ctxs[c], dt, rows, cols, dy, x, w, rstd[c], casting == 1, casting, out[c], dw[c]);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", v->name, ubg_ctx_error(ctxs[c]));
      }
      char want[200];
      snprintf(want, sizeof want, "%s@%s", v->name, suffix);
      cr_assert_str_eq(ubg_ctx_last_variant(tcc), want);
      cr_assert(!memcmp(out[0], out[1], (size_t)n * es), "%s casting %d: %s output differs from the built-in's",
                v->name, casting, suffix);
      if (!strcmp(pass, "fwd")) cr_assert(!memcmp(rstd[0], rstd[1], (size_t)rows * 4), "%s: rstd differs", v->name);
      else cr_assert(!memcmp(dw[0], dw[1], (size_t)cols * es), "%s casting %d: dw differs", v->name, casting);
    }
    for (int c = 0; c < 2; c++) free(out[c]), free(dw[c]), free(rstd[c]);
    free(x), free(dy), free(w);
  }
  cr_assert_eq(rt_ctx_jit_compiles(tcc), visited, "each variant compiled once");
  ubg_ctx_destroy(aot);
  ubg_ctx_destroy(tcc);
  tc_free_variants(&vs);
  if (backend == UBG_BACKEND_GCC) tc_drop_cache();
}

Test(jit_tcc, fwd_f32_same_bits, .timeout = 120 * TC_TIME_SCALE) { same_bits("fwd", UBG_F32, UBG_BACKEND_TCC); }
Test(jit_tcc, fwd_f16_same_bits, .timeout = 120 * TC_TIME_SCALE) { same_bits("fwd", UBG_F16, UBG_BACKEND_TCC); }
Test(jit_tcc, fwd_bf16_same_bits, .timeout = 120 * TC_TIME_SCALE) { same_bits("fwd", UBG_BF16, UBG_BACKEND_TCC); }
Test(jit_tcc, bwd_f32_same_bits, .timeout = 120 * TC_TIME_SCALE) { same_bits("bwd", UBG_F32, UBG_BACKEND_TCC); }
Test(jit_tcc, bwd_f16_same_bits, .timeout = 120 * TC_TIME_SCALE) { same_bits("bwd", UBG_F16, UBG_BACKEND_TCC); }
Test(jit_tcc, bwd_bf16_same_bits, .timeout = 120 * TC_TIME_SCALE) { same_bits("bwd", UBG_BF16, UBG_BACKEND_TCC); }
/* every 12th variant through gcc too: about 0.3 s of gcc each */
Test(jit_gcc, fwd_f32_same_bits, .timeout = 300 * TC_TIME_SCALE) { same_bits("fwd", UBG_F32, UBG_BACKEND_GCC); }
Test(jit_gcc, fwd_f16_same_bits, .timeout = 300 * TC_TIME_SCALE) { same_bits("fwd", UBG_F16, UBG_BACKEND_GCC); }
Test(jit_gcc, fwd_bf16_same_bits, .timeout = 300 * TC_TIME_SCALE) { same_bits("fwd", UBG_BF16, UBG_BACKEND_GCC); }
Test(jit_gcc, bwd_f32_same_bits, .timeout = 300 * TC_TIME_SCALE) { same_bits("bwd", UBG_F32, UBG_BACKEND_GCC); }
Test(jit_gcc, bwd_f16_same_bits, .timeout = 300 * TC_TIME_SCALE) { same_bits("bwd", UBG_F16, UBG_BACKEND_GCC); }
Test(jit_gcc, bwd_bf16_same_bits, .timeout = 300 * TC_TIME_SCALE) { same_bits("bwd", UBG_BF16, UBG_BACKEND_GCC); }

/* 8 threads, each calling 8 shapes that need 8 different variants, in a
 * different order: 8 compiles in all */
static ubg_ctx *shared;
static void *caller(void *arg) {
  int t = (int)(intptr_t)arg;
  static float x[4 * 2048], y[4 * 2048];
  float rstd[4];
  for (int k = 0; k < 8; k++) {
    int64_t cols = (int64_t)16 << ((k + t) % 8); /* 16 .. 2048: one whole-row variant each */
    if (ubg_rms_norm_fwd(shared, UBG_F32, 4, cols, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd) != UBG_OK)
      return (void *)1;
  }
  return NULL;
}

Test(jit_tcc, concurrent_callers_compile_each_variant_once) {
  shared = tc_ctx(UBG_BACKEND_TCC, 1);
  pthread_t th[8];
  for (int t = 0; t < 8; t++) pthread_create(&th[t], NULL, caller, (void *)(intptr_t)t);
  for (int t = 0; t < 8; t++) {
    void *rc;
    pthread_join(th[t], &rc);
    cr_assert_null(rc, "a call failed: %s", ubg_ctx_error(shared));
  }
  cr_assert_eq(rt_ctx_jit_compiles(shared), 8);
  ubg_ctx_destroy(shared);
}

/* a user's kernel (spec and template in a new directory, put on
 * UBGEN_SPEC_PATH) whose template does not compile */
static void write_bad_kernel(char *dir) {
  cr_assert_not_null(mkdtemp(dir));
  char path[300];
  snprintf(path, sizeof path, "%s/bad.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"ubgen_spec\": 1, \"kernel\": \"bad\", \"shape\": [\"n\"], \"dtypes\": [\"f32\"],\n"
        " \"passes\": {\"fwd\": {\"template\": \"bad.c.tmpl\",\n"
        "  \"args\": [{\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\", \"shape\": [\"n\"]},\n"
        "           {\"name\": \"n\", \"type\": \"int\", \"min\": 1}],\n"
        "  \"stages\": [{\"name\": \"all\", \"grid\": \"1\"}]}}}\n",
        f);
  fclose(f);
  snprintf(path, sizeof path, "%s/bad.c.tmpl", dir);
  f = fopen(path, "w");
  fputs("{{> prelude.h}}\nUBG_KERNEL({{variant}}) {\n{{> args.h}}\n  out[0] = undeclared_name + 1;\n}\n", f);
  fclose(f);
  setenv("UBGEN_SPEC_PATH", dir, 1);
}

Test(jit_tcc, c_error_in_a_template_is_ecompile) {
  char dir[] = "/tmp/ubgen_test_jit_XXXXXX";
  write_bad_kernel(dir);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  float out[4] = {0};
  ubg_arg args[] = {{"out", UBG_ARG_PTR, {.p = out}}, {"n", UBG_ARG_I64, {.i = 4}}};
  ubg_status s = ubg_launch(ctx, "bad", "fwd", UBG_F32, args, 2);
  const char *msg = ubg_ctx_error(ctx);
  cr_assert_eq(s, UBG_ECOMPILE, "%s: %s", ubg_status_str(s), msg);
  cr_assert(strstr(msg, "bad_fwd_f32"), "names the variant: %s", msg);
  cr_assert(strstr(msg, "undeclared_name"), "has tcc's message: %s", msg);
  cr_assert(strstr(msg, "source line: `out[0] = undeclared_name + 1;`"), "shows the line: %s", msg);
  char at[400];
  snprintf(at, sizeof at, "%s/bad.c.tmpl:4:", dir);
  cr_assert(strstr(msg, at), "names the template's line (%s): %s", at, msg);
  cr_assert_eq(out[0], 0.0f, "nothing written");
  ubg_ctx_destroy(ctx);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* ubg_prepare compiles now: a template's C error shows without a call */
Test(jit_tcc, prepare_reports_a_compile_error_without_a_call) {
  char dir[] = "/tmp/ubgen_test_jit_XXXXXX";
  write_bad_kernel(dir);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_TCC, 1);
  ubg_status s = ubg_prepare(ctx, "bad", "fwd", UBG_F32, NULL);
  cr_assert_eq(s, UBG_ECOMPILE, "%s: %s", ubg_status_str(s), ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_error(ctx), "undeclared_name"), "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* AUTO takes the built-in code; AOT refuses what is not built in */
Test(jit_tcc, backends_choose_as_documented) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8], rstd[1];
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_F32, 1, 8, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd), UBG_OK);
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d16_m64_n", "the last call");
  ubg_ctx_destroy(ctx);
  /* a budget above the build's: the variants it adds are not built in */
  ubg_config cfg = {0};
  cfg.ub_bytes = 1 << 20;
  cfg.backend = UBG_BACKEND_AOT;
  cr_assert_eq(ubg_ctx_create(&cfg, &ctx), UBG_OK);
  static float big[2 * 40000], out[2 * 40000];
  float r2[2];
  ubg_status s = ubg_rms_norm_fwd(ctx, UBG_F32, 2, 40000, big, NULL, 1e-6f, 0, UBG_CAST_LLAMA, out, r2);
  cr_assert_eq(s, UBG_ENOTFOUND, "%s", ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_error(ctx), "not built into this library"), "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  cfg.backend = UBG_BACKEND_AUTO;
  cr_assert_eq(ubg_ctx_create(&cfg, &ctx), UBG_OK);
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_F32, 2, 40000, big, NULL, 1e-6f, 0, UBG_CAST_LLAMA, out, r2), UBG_OK);
  cr_assert_str_eq(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d65536_m1_n@tcc");
  ubg_ctx_destroy(ctx);
}

/* ---- the gcc disk cache ------------------------------------------------------- */

/* one call of a variant the library does not have built in (a budget above
 * the build's); returns the backend it ran on, "" on failure */
static const char *big_call(ubg_ctx *ctx, char *ran, size_t n) {
  static float x[2 * 40000], y[2 * 40000];
  float r[2];
  for (int i = 0; i < 2 * 40000; i++) x[i] = (float)(i % 13) - 6.0f;
  ran[0] = '\0';
  if (ubg_rms_norm_fwd(ctx, UBG_F32, 2, 40000, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, r) != UBG_OK) return ran;
  double ss = 0;
  for (int i = 0; i < 40000; i++) ss += (double)x[i] * x[i];
  if (fabs(y[1] - x[1] / sqrt(ss / 40000 + 1e-6)) > 1e-5) return ran;
  const char *at = strchr(ubg_ctx_last_variant(ctx), '@');
  snprintf(ran, n, "%s", at ? at + 1 : "?");
  return ran;
}

static ubg_ctx *big_ctx(ubg_backend backend) {
  ubg_config cfg = {0};
  cfg.ub_bytes = 1 << 20;
  cfg.backend = backend;
  cfg.threads = 1;
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(&cfg, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  return ctx;
}

static int count_files(const char *suffix, off_t *size) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls %s/*%s 2>/dev/null | wc -l", tc_cache, suffix);
  FILE *p = popen(cmd, "r");
  int n = 0;
  if (p && fscanf(p, "%d", &n) != 1) n = -1;
  if (p) pclose(p);
  if (size) {
    snprintf(cmd, sizeof cmd, "stat -c %%s %s/*%s 2>/dev/null | head -n 1", tc_cache, suffix);
    p = popen(cmd, "r");
    long s = -1;
    if (p && fscanf(p, "%ld", &s) != 1) s = -1;
    if (p) pclose(p);
    *size = s;
  }
  return n;
}

Test(jit_gcc, cache_hit_in_a_new_context_and_auto_takes_it) {
  tc_fresh_cache();
  char ran[16];
  ubg_ctx *ctx = big_ctx(UBG_BACKEND_GCC);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "gcc", "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  cr_assert_eq(count_files(".so", NULL), 1, "one entry, a single file");
  cr_assert_eq(count_files(".c", NULL) + count_files(".entry", NULL), 0, "no temporary left behind");
  /* AUTO: not built in, but in the cache */
  ctx = big_ctx(UBG_BACKEND_AUTO);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "gcc");
  ubg_ctx_destroy(ctx);
  tc_drop_cache();
}

Test(jit_gcc, a_corrupt_entry_is_rebuilt) {
  tc_fresh_cache();
  char ran[16], cmd[256];
  ubg_ctx *ctx = big_ctx(UBG_BACKEND_GCC);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "gcc");
  ubg_ctx_destroy(ctx);
  off_t size;
  cr_assert_eq(count_files(".so", &size), 1);
  cr_assert_gt(size, 1000);
  /* truncated */
  snprintf(cmd, sizeof cmd, "truncate -s 100 %s/*.so", tc_cache);
  cr_assert_eq(system(cmd), 0);
  ctx = big_ctx(UBG_BACKEND_GCC);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "gcc", "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  off_t again;
  cr_assert_eq(count_files(".so", &again), 1);
  cr_assert_eq(again, size, "rebuilt whole");
  /* same size, one byte changed */
  snprintf(cmd, sizeof cmd, "printf 'X' | dd of=$(ls %s/*.so) bs=1 seek=600 conv=notrunc 2>/dev/null", tc_cache);
  cr_assert_eq(system(cmd), 0);
  ctx = big_ctx(UBG_BACKEND_GCC);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "gcc", "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  tc_drop_cache();
}

/* nkids processes, released at once, each compiling (or finding) the same
 * variant with the gcc backend in one cache; how many failed. A child's
 * error goes to stderr. */
static int race_once(int nkids) {
  int go[2];
  cr_assert_eq(pipe(go), 0);
  pid_t kids[16];
  for (int k = 0; k < nkids; k++) {
    kids[k] = fork();
    cr_assert_geq(kids[k], 0);
    if (kids[k] == 0) {
      close(go[1]);
      char c;
      while (read(go[0], &c, 1) < 0) continue; /* EOF: the parent let everyone go */
      char ran[16];
      ubg_ctx *ctx = big_ctx(UBG_BACKEND_GCC);
      int ok = !strcmp(big_call(ctx, ran, sizeof ran), "gcc");
      if (!ok) fprintf(stderr, "process %d ran \"%s\": %s\n", k, ran, ubg_ctx_error(ctx));
      ubg_ctx_destroy(ctx);
      _exit(ok ? 0 : 1);
    }
  }
  close(go[0]);
  close(go[1]);
  int failed = 0;
  for (int k = 0; k < nkids; k++) {
    int st;
    cr_assert_eq(waitpid(kids[k], &st, 0), kids[k]);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  return failed;
}

Test(jit_gcc, two_processes_racing_on_one_entry_both_succeed) {
  tc_fresh_cache();
  cr_assert_eq(race_once(2), 0);
  cr_assert_eq(count_files(".so", NULL), 1, "one entry");
  cr_assert_eq(count_files(".c", NULL) + count_files(".entry", NULL), 0, "no temporaries left");
  tc_drop_cache();
}

/* A training launch: one process per rank, all compiling the same variant
 * into one empty cache. Separate renames of an object and its checksum
 * once let a process pair one build's object with another's checksum (a
 * round in ten failed with 8 processes); an entry is now one file. */
#ifdef TC_REDUCED
enum { RACE_ROUNDS = 2 };
#else
enum { RACE_ROUNDS = 4 };
#endif
Test(jit_gcc, eight_processes_racing_on_an_empty_cache_all_succeed, .timeout = 600 * TC_TIME_SCALE) {
  for (int round = 0; round < RACE_ROUNDS; round++) {
    tc_fresh_cache();
    int failed = race_once(8);
    cr_assert_eq(failed, 0, "round %d: %d of 8 processes failed", round, failed);
    cr_assert_eq(count_files(".so", NULL), 1, "round %d: one entry", round);
    cr_assert_eq(count_files(".c", NULL) + count_files(".entry", NULL), 0, "round %d: no temporaries left", round);
    tc_drop_cache();
  }
}

/* The key holds what -march=native resolves to: a compiler that resolves
 * it to another CPU (a wrapper that says so in its cc1 line) builds its own
 * entry beside the first, and each CPU finds its own again. */
static void run_with_fake_cpu(const char *cpu, const char *wrapper) {
  pid_t kid = fork();
  cr_assert_geq(kid, 0);
  if (kid == 0) { /* a new process: the compiler's answer is read once per process */
    setenv("FAKE_CPU", cpu, 1);
    setenv("UBGEN_JIT_CC", wrapper, 1);
    char ran[16];
    ubg_ctx *ctx = big_ctx(UBG_BACKEND_GCC);
    int ok = !strcmp(big_call(ctx, ran, sizeof ran), "gcc");
    if (!ok) fprintf(stderr, "%s: %s\n", cpu, ubg_ctx_error(ctx));
    ubg_ctx_destroy(ctx);
    _exit(ok ? 0 : 1);
  }
  int st;
  cr_assert_eq(waitpid(kid, &st, 0), kid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the call as CPU %s failed", cpu);
}

Test(jit_gcc, the_cache_key_follows_the_cpu_native_resolves_to) {
  tc_fresh_cache();
  /* named gcc-*, which make test-valgrind's list of programs not to trace takes */
  char bin[128], wrapper[160], cmd[512];
  snprintf(bin, sizeof bin, "%s.bin", tc_cache);
  cr_assert_eq(mkdir(bin, 0700), 0);
  snprintf(wrapper, sizeof wrapper, "%s/gcc-fake-cpu", bin);
  FILE *f = fopen(wrapper, "w");
  cr_assert_not_null(f);
  fprintf(f, "#!/bin/sh\n"
             "case \" $* \" in *\" -### \"*) gcc \"$@\" 2>&1 | sed \"s/cc1 /cc1 -fake-cpu=$FAKE_CPU /\" >&2; exit 0;; esac\n"
             "exec gcc \"$@\"\n");
  fclose(f);
  cr_assert_eq(chmod(wrapper, 0700), 0);
  run_with_fake_cpu("zen4", wrapper);
  cr_assert_eq(count_files(".so", NULL), 1);
  run_with_fake_cpu("skylake", wrapper);
  cr_assert_eq(count_files(".so", NULL), 2, "another CPU, another entry");
  /* each finds its own: a compiler that fails on any source proves no build */
  snprintf(cmd, sizeof cmd, "sed -i 's/^exec gcc/case \"$*\" in *.c*) exit 1;; esac; exec gcc/' %s", wrapper);
  cr_assert_eq(system(cmd), 0);
  run_with_fake_cpu("zen4", wrapper);
  run_with_fake_cpu("skylake", wrapper);
  cr_assert_eq(count_files(".so", NULL), 2);
  unlink(wrapper);
  rmdir(bin);
  tc_drop_cache();
}

Test(jit_gcc, a_group_writable_cache_dir_is_refused_and_the_call_still_succeeds) {
  tc_fresh_cache();
  cr_assert_eq(chmod(tc_cache, 0775), 0);
  char log[128];
  snprintf(log, sizeof log, "%s.log", tc_cache);
  setenv("UBGEN_LOG", log, 1);
  char ran[16];
  ubg_ctx *ctx = big_ctx(UBG_BACKEND_GCC);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "tcc", "%s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  unsetenv("UBGEN_LOG");
  cr_assert_eq(count_files(".so", NULL), 0, "nothing written to the refused directory");
  FILE *f = fopen(log, "r");
  cr_assert_not_null(f, "the warning goes to UBGEN_LOG");
  char text[4096] = "";
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  unlink(log);
  cr_assert(strstr(text, "warning") && strstr(text, "writable by its group") && strstr(text, tc_cache), "%s", text);
  tc_drop_cache();
}

Test(jit_gcc, a_c_error_is_ecompile_with_gccs_message) {
  tc_fresh_cache();
  char dir[] = "/tmp/ubgen_test_jitg_XXXXXX";
  write_bad_kernel(dir);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_GCC, 1);
  float out[4] = {0};
  ubg_arg args[] = {{"out", UBG_ARG_PTR, {.p = out}}, {"n", UBG_ARG_I64, {.i = 4}}};
  ubg_status s = ubg_launch(ctx, "bad", "fwd", UBG_F32, args, 2);
  cr_assert_eq(s, UBG_ECOMPILE, "%s: %s", ubg_status_str(s), ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_error(ctx), "gcc could not compile bad_fwd_f32") &&
                strstr(ubg_ctx_error(ctx), "undeclared_name"),
            "%s", ubg_ctx_error(ctx));
  char at[400];
  snprintf(at, sizeof at, "bad.c.tmpl:4:");
  cr_assert(strstr(ubg_ctx_error(ctx), at), "gcc names the template's line: %s", ubg_ctx_error(ctx));
  ubg_ctx_destroy(ctx);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  tc_drop_cache();
}

/* AUTO with UBGEN_JIT_ASYNC=1: tcc now, gcc in the background, then gcc */
Test(jit_gcc, async_gcc_replaces_tcc_code_when_ready, .timeout = 60 * TC_TIME_SCALE) {
  tc_fresh_cache();
  setenv("UBGEN_JIT_ASYNC", "1", 1);
  char ran[16];
  ubg_ctx *ctx = big_ctx(UBG_BACKEND_AUTO);
  cr_assert_str_eq(big_call(ctx, ran, sizeof ran), "tcc", "%s", ubg_ctx_error(ctx));
  int waited = 0;
  while (strcmp(big_call(ctx, ran, sizeof ran), "gcc") != 0 && waited++ < 400) usleep(50000);
  cr_assert_str_eq(ran, "gcc", "the background build never arrived");
  ubg_ctx_destroy(ctx);
  tc_drop_cache();
}
