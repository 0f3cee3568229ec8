/* Context configuration: ubg_config, then the environment, then defaults
 * (docs/design.md "The UB model" and ubgen.h). A bad value is an error that
 * names its source; nothing is guessed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gen/tuned.h"
#include "internal.h"

static ubg_status env_int(const char *name, long lo, long hi, long *out, bool *set) {
  const char *v = getenv(name);
  *set = false;
  if (!v || !*v) return UBG_OK;
  errno = 0;
  char *end;
  long x = strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi)
    return rt_fail(NULL, UBG_EINVAL, "%s=\"%s\" is not an integer in [%ld, %ld]", name, v, lo, hi);
  *out = x;
  *set = true;
  return UBG_OK;
}

ubg_status rt_config_resolve(ubg_ctx *ctx, const ubg_config *cfg) {
  ubg_config none = {0};
  if (!cfg) cfg = &none;
  /* UB bytes: config, else UBGEN_UB_BYTES, ASCEND_UB_CAPACITY_BITS, 192 KiB */
  int64_t ub;
  char err[300];
  if (cfg->ub_bytes) {
    ub = cfg->ub_bytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)cfg->ub_bytes;
    if (ug_check_ub(ub, "ubg_config.ub_bytes", err, sizeof err) < 0) return rt_fail(NULL, UBG_EINVAL, "%s", err);
  } else {
    bool ignored;
    if (ug_ub_from_env(&ub, &ignored, err, sizeof err) < 0) return rt_fail(NULL, UBG_EINVAL, "%s", err);
    if (ignored) rt_log("ASCEND_UB_CAPACITY_BITS=\"%s\" ignored: not a bit count for %lld..%lld bytes",
                        getenv("ASCEND_UB_CAPACITY_BITS"), (long long)UG_MIN_UB_BYTES, (long long)UG_MAX_UB_BYTES);
  }
  ctx->budget.ub_bytes = ub;

  if (cfg->safety_margin != 0 && !(cfg->safety_margin > 0 && cfg->safety_margin <= 1))
    return rt_fail(NULL, UBG_EINVAL, "ubg_config.safety_margin = %g is outside (0, 1]", cfg->safety_margin);
  ctx->budget.margin = cfg->safety_margin; /* 0: the spec's own, else 0.90 */

  long threads = 0;
  bool set;
  if (cfg->threads < 0 || cfg->threads > 1024)
    return rt_fail(NULL, UBG_EINVAL, "ubg_config.threads = %d is outside [0, 1024]", cfg->threads);
  if (cfg->threads) {
    threads = cfg->threads;
  } else {
    ubg_status s = env_int("UBGEN_THREADS", 1, 1024, &threads, &set);
    if (s) return s;
    if (!set) threads = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
  }
  ctx->threads = (int)threads;

  if ((unsigned)cfg->backend > UBG_BACKEND_GCC)
    return rt_fail(NULL, UBG_EINVAL, "ubg_config.backend = %d is not a ubg_backend", (int)cfg->backend);
  ctx->backend = cfg->backend;
  const char *be = getenv("UBGEN_BACKEND");
  if (ctx->backend == UBG_BACKEND_AUTO && be && *be) {
    if (!strcmp(be, "auto")) ctx->backend = UBG_BACKEND_AUTO;
    else if (!strcmp(be, "aot")) ctx->backend = UBG_BACKEND_AOT;
    else if (!strcmp(be, "tcc")) ctx->backend = UBG_BACKEND_TCC;
    else if (!strcmp(be, "gcc")) ctx->backend = UBG_BACKEND_GCC;
    else return rt_fail(NULL, UBG_EINVAL, "UBGEN_BACKEND=\"%s\" is not one of auto, aot, tcc, gcc", be);
  }

  long guard = 0;
  ubg_status s = env_int("UBGEN_UB_GUARD", 0, 1, &guard, &set);
  if (s) return s;
  ctx->guard = guard == 1;
  long async = 0;
  if ((s = env_int("UBGEN_JIT_ASYNC", 0, 1, &async, &set))) return s;
  ctx->jit_async = async == 1;

  const char *db = cfg->tuning_db ? cfg->tuning_db : getenv("UBGEN_TUNING_DB");
  const char *cache = cfg->cache_dir ? cfg->cache_dir : getenv("UBGEN_CACHE_DIR");
  const char *specs = cfg->spec_path ? cfg->spec_path : getenv("UBGEN_SPEC_PATH");
  ctx->tuning_db = db ? strdup(db) : NULL;
  ctx->cache_dir = cache ? strdup(cache) : NULL;
  ctx->spec_path = specs ? strdup(specs) : NULL;
  if ((db && !ctx->tuning_db) || (cache && !ctx->cache_dir) || (specs && !ctx->spec_path))
    return rt_fail(NULL, UBG_ENOMEM, "out of memory");
  ctx->spec_path_source = cfg->spec_path ? "ubg_config.spec_path" : "UBGEN_SPEC_PATH";
  return UBG_OK;
}

static const ug_kernel *ctx_kernel(const char *name, const void *arg) {
  const ubg_ctx *ctx = arg;
  for (int i = 0; i < ctx->nkernels; i++)
    if (!strcmp(ctx->kernels[i].spec->name, name)) return ctx->kernels[i].spec;
  return NULL;
}

void rt_tunedb_load(ubg_ctx *ctx) {
  char path[4096];
  if (ug_tunedb_default_path(ctx->tuning_db, ctx->cache_dir, path, sizeof path) < 0) return;
  char warn[1024];
  int rc = ug_tunedb_load_here(path, &ctx->tunedb, warn, sizeof warn);
  if (rc == 1) rt_log("tuning DB %s: ignored, the default strategy serves every call", warn);
  if (rc != 0 || !ctx->tunedb.n) return;
  int dropped = ug_tuned_drop_foreign(&ctx->tunedb, ctx_kernel, ctx, warn, sizeof warn);
  if (dropped > 0)
    rt_log("warning: tuning DB %s: %d %s ignored: %s", path, dropped, dropped == 1 ? "entry" : "entries", warn);
  if (dropped < 0) ug_tunedb_free(&ctx->tunedb);
  rt_log("tuning DB %s: %d %s", path, ctx->tunedb.n, ctx->tunedb.n == 1 ? "entry" : "entries");
}
