/* The tuning DB (docs/design.md "The tuning DB"): what `ubgen tune` measured, which
 * the runtime's dispatch reads.
 *
 *   {"version": 1, "cpu": "...", "entries": [{"kernel", "pass", "dtype",
 *    "shape": {"rows": 2048, "cols": 4096}, "ub_bytes", "variant", "backend",
 *    "median_us", "default_variant", "default_median_us", "candidates",
 *    "rejected_ub"}]}
 *
 * An entry is keyed by kernel, pass, dtype, shape bucket and ub_bytes. The
 * shape bucket of a call rounds each shape value up to a power of two
 * (ug_tune_bucket), so a DB entry tuned at rows=2048 serves rows=1500..2048.
 * Files are written atomically (temporary file in the same directory, fsync,
 * rename) under an exclusive lock on "<path>.lock", re-reading the file
 * under the lock and merging into it, so concurrent tuners lose no entry.
 * A missing file is an empty DB; a corrupt, truncated or wrong-version file
 * is an empty DB plus a warning (never a crash, never silent). */
#ifndef UG_TUNEDB_H
#define UG_TUNEDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { UG_TUNE_MAX_SHAPE = 8 };

typedef struct {
  char kernel[64], pass[64];
  int dtype;                                  /* 0 f32, 1 f16, 2 bf16 */
  int nshape;                                 /* shape values, in the spec's shape order */
  char shape_names[UG_TUNE_MAX_SHAPE][32];
  int64_t shape[UG_TUNE_MAX_SHAPE];           /* bucketed values */
  int64_t ub_bytes;
  char variant[160];
  char backend[16];                           /* "aot", "tcc", "gcc" */
  double median_us;
  char default_variant[160];
  double default_median_us;
  int64_t candidates;                         /* feasible variants measured */
  int64_t rejected_ub;                        /* variants over the UB budget */
} ug_tune_entry;

typedef struct {
  char cpu[128];
  ug_tune_entry *e;
  int n, cap;
  int *slots, nslots; /* the index by key: entry numbers, -1 empty */
} ug_tunedb;

/* v rounded up to a power of two (v <= 1 stays as it is) */
int64_t ug_tune_bucket(int64_t v);

/* Parses a DB's JSON text[0, len) into *db (initialized, empty): 0 ok; 1
 * invalid (why: "line:col: what", or "entries[i]: what"); -1 out of memory
 * (gen/tunedb_read.c). */
int ug_tunedb_parse(const char *text, size_t len, ug_tunedb *db, char *why, size_t nwhy);

/* Loads path into *db (which it initializes). 0: loaded or missing (empty);
 * 1: unusable (corrupt, truncated, wrong version, unreadable): *db empty and
 * warn says why, naming the file; -1: out of memory. */
int ug_tunedb_load(const char *path, ug_tunedb *db, char *warn, size_t nwarn);

/* Whether a save of cpu's timings into path can succeed, asked before a
 * sweep: 0 yes; -2 no (err says why): the file there is not a DB this
 * version reads (corrupt, truncated, a newer version, text, a symlink, not
 * this user's) or holds another CPU's timings, its lock cannot be opened,
 * or its directory is missing or not writable; -1 out of memory. */
int ug_tunedb_check_target(const char *path, const char *cpu, char *err, size_t nerr);

/* ug_tunedb_load for dispatch on this machine (the runtime, `ubgen plan`):
 * a DB that names another CPU than this one is unusable too (1, warn says
 * both), since its timings say nothing about this machine. A DB without a
 * "cpu", or a machine whose CPU has no name, is taken. */
int ug_tunedb_load_here(const char *path, ug_tunedb *db, char *warn, size_t nwarn);

/* Adds e, replacing an entry with the same key, in constant time (a hash
 * index); 0 ok, -1 out of memory or e has no key (a bad nshape, a shape
 * name twice). Shapes are matched by name: {"rows", "cols"} and {"cols",
 * "rows"} with the same values are one key. */
int ug_tunedb_put(ug_tunedb *db, const ug_tune_entry *e);

/* the entry with this key (shape values already bucketed, names[i] naming
 * shape[i] in any order), or NULL; constant time */
const ug_tune_entry *ug_tunedb_find(const ug_tunedb *db, const char *kernel, const char *pass, int dtype, int nshape,
                                    const char *const *names, const int64_t *shape, int64_t ub_bytes);

/* keeps the entries keep() says yes to, in their order; the number dropped,
 * or -1 out of memory */
int ug_tunedb_keep_if(ug_tunedb *db, bool (*keep)(const ug_tune_entry *e, void *arg), void *arg);

/* Merges db's entries into the file at path (db's win on equal keys) under
 * the lock, written atomically. A file that is not a DB this version reads
 * is never overwritten. 0 ok; -1 with err set; -2 when the file is not a
 * readable DB or was tuned on another CPU than db's (err says which;
 * nothing written). */
int ug_tunedb_merge_save(const char *path, const ug_tunedb *db, char *err, size_t nerr);

void ug_tunedb_free(ug_tunedb *db);

/* this machine's CPU, as a DB's "cpu": /proc/cpuinfo's model name ("" if none) */
void ug_tune_cpu_name(char *out, size_t n);

/* Where the DB is: db if given, else <cache_dir>/tuning.json, else
 * $XDG_CACHE_HOME/ubgen/tuning.json, else ~/.cache/ubgen/tuning.json (the gcc
 * cache's directory). 0 ok; -1 when there is no home to put it in. */
int ug_tunedb_default_path(const char *db, const char *cache_dir, char *out, size_t n);

#endif
