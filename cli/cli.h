/* Shared pieces of the `ubgen` commands (docs/cli.md): option parsing, spec
 * loading, messages. Exit codes: 0 success, 1 a check or run failed, 2 bad
 * usage or bad input. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../gen/specset.h"
#include "../gen/ubplan.h"
#include "../gen/variant.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };
enum { CLI_MAX_LIST = 32 };

typedef struct {
  const char *cmd;
  const char *specs_dirs[CLI_MAX_LIST];
  int nspecs_dirs;
  ug_budget budget;
  bool ub_set;
  bool json;
  const char *kernels[CLI_MAX_LIST];
  int nkernels;
  bool dtypes[UG_NDTYPES];
  bool dtype_set;
  const char *dtype_args[2]; /* the first two --dtype values as given */
  int ndtype_args;           /* how many --dtype were given */
  const char *shape;
  const char *out;
  const char *registry;
  const char *tuned;
  int sample;     /* --sample N: emit ug_sample_mark's share and the default choices of each pass and dtype (0: all) */
  const char *db; /* --db FILE: the tuning DB */
  int reps;       /* --reps N (0: the command's default) */
  int timeout;    /* --timeout S: seconds one isolated call of user code may take (default CLI_TIMEOUT_DEFAULT) */
  const char *svg; /* --svg FILE */
  const char *backend;
  int shard_i, shard_n; /* --shard i/n: this run does part i (1-based) of n; 0 without */
  bool self_register;
  bool no_kernels;
  bool dry_run;      /* tune: count the sweep and say how long it takes at least; tune nothing */
  bool no_reference; /* check, tune: verify a kernel without a reference (variants against each other only) */
  const char *target; /* KERNEL.PASS or all */
  int verbose;
  char data_dir[4096];
} cli_opts;

/* Option names a command accepts, e.g. "specs ub json kernel dtype". 0
 * parsed, -1 bad usage (said on stderr), 1 --help or -h (the command's help
 * is printed: exit 0). */
int cli_parse(int argc, char **argv, const char *cmd, const char *accepted, bool takes_target, cli_opts *o);
int cli_load_specs(cli_opts *o, ug_specset *set);
/* the tuning DB a command reads: --db, which must exist (a typo in a path
 * is an error, exit 2), else where the library reads it (UBGEN_TUNING_DB,
 * else the cache directory's tuning.json), which may not exist yet; "" when
 * there is no such place. 0, or -1 with the error printed. */
int cli_db_to_read(const cli_opts *o, char *path, size_t n);
/* the library reads its own spec path: give it the --specs directories too */
void cli_export_spec_path(const cli_opts *o);
/* "; did you mean ...? (kernels: a, b, ...)" for a kernel name that is not
 * one of set's, written into out */
const char *cli_known_kernels(const ug_specset *set, const char *got, char *out, size_t n);
/* Splits KERNEL.PASS; prints an error and returns -1 when it names nothing. */
int cli_find_pass(const ug_specset *set, const char *target, const ug_kernel **k, const ug_pass **p);

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_diag(const ug_diag *d);
/* true when stderr is a terminal (progress lines are shown only then) */
bool cli_progress_enabled(void);
/* the cores this machine has online (at least 1) */
int cli_cores(void);
void cli_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_progress_done(void);

int cli_cmd_list(int argc, char **argv);
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_emit(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);
int cli_cmd_tune(int argc, char **argv);
int cli_cmd_tune_merge(int argc, char **argv); /* ubgen tune merge */
/* `ubgen plan KERNEL.OP` for a composite op of k: plan_composite.c sets it
 * at load time, in the ubgen binary only (the boot generator has no
 * runtime to ask); NULL there */
extern int (*cli_plan_composite)(cli_opts *o, int dtype, const ug_kernel *k, const ug_composite *c);

#endif
