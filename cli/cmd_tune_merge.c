/* ubgen tune merge A B ... --db OUT: joins tuning DBs, the parts of a sweep
 * run with --shard, into OUT (merged into what OUT already holds, atomically
 * and under its lock, as a tune's own save).
 *
 * The inputs were named on purpose, so a missing or unusable input is an
 * error, not a warning, and nothing is written: a DB silently missing a
 * shard's entries would look complete. Entries with the same key (kernel,
 * pass, dtype, shape bucket, UB budget) in several inputs: the later input
 * on the command line wins, and the output says how many. A DB holds one
 * machine's timings, so inputs tuned on different CPUs are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "help.h"
#include "../gen/tunedb.h"

enum { MAX_INPUTS = 1024 };

int cli_cmd_tune_merge(int argc, char **argv) {
  const char *out = NULL, *in[MAX_INPUTS];
  int nin = 0;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      cli_help("tune merge", stdout);
      return EXIT_OK;
    }
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--specs") || !strcmp(argv[i], "--ub") || !strcmp(argv[i], "--margin")) {
      i++; /* the options every command takes: nothing to merge does with them */
    } else if (!strncmp(argv[i], "--specs=", 8) || !strncmp(argv[i], "--ub=", 5) || !strncmp(argv[i], "--margin=", 9)) {
      continue;
    } else if (!strcmp(argv[i], "--db") || !strncmp(argv[i], "--db=", 5)) {
      const char *v = argv[i][4] == '=' ? argv[i] + 5 : i + 1 < argc ? argv[++i] : NULL;
      if (!v || !*v) {
        cli_error("tune merge: --db needs a file");
        return EXIT_USAGE;
      }
      out = v;
    } else if (!strncmp(argv[i], "--", 2)) {
      cli_error("tune merge: unknown option %s (usage: ubgen tune merge A.json B.json ... --db OUT.json)", argv[i]);
      return EXIT_USAGE;
    } else if (nin == MAX_INPUTS) {
      cli_error("tune merge: more than %d inputs", MAX_INPUTS);
      return EXIT_USAGE;
    } else {
      in[nin++] = argv[i];
    }
  }
  if (!out || nin == 0) {
    cli_error("tune merge: needs the DBs to join and --db OUT (usage: ubgen tune merge A.json B.json ... --db OUT.json)");
    return EXIT_USAGE;
  }
  ug_tunedb all = {0};
  int rc = EXIT_OK, replaced = 0;
  char err[1024];
  /* OUT must take the merge: checked before the inputs are read (its CPU
   * again below, against theirs) */
  if (ug_tunedb_check_target(out, "", err, sizeof err) != 0) {
    cli_error("tune merge: %s; nothing written", err);
    return EXIT_USAGE;
  }
  const char *cpu_from = NULL;
  for (int f = 0; f < nin && rc == EXIT_OK; f++) {
    struct stat st;
    ug_tunedb part;
    char warn[1024];
    if (lstat(in[f], &st) < 0) {
      cli_error("tune merge: input %s does not exist", in[f]);
      rc = EXIT_USAGE;
      break;
    }
    int lr = ug_tunedb_load(in[f], &part, warn, sizeof warn);
    if (lr != 0) {
      cli_error("tune merge: input %s: unusable, nothing written", lr < 0 ? "out of memory" : warn);
      rc = EXIT_USAGE;
      break;
    }
    if (part.cpu[0] && all.cpu[0] && strcmp(part.cpu, all.cpu)) {
      cli_error("tune merge: %s was tuned on \"%s\" but %s on \"%s\"; a DB holds one machine's timings", cpu_from,
                all.cpu, in[f], part.cpu);
      rc = EXIT_USAGE;
    }
    if (part.cpu[0] && !all.cpu[0]) {
      snprintf(all.cpu, sizeof all.cpu, "%s", part.cpu);
      cpu_from = in[f];
    }
    for (int i = 0; i < part.n && rc == EXIT_OK; i++) {
      const ug_tune_entry *e = &part.e[i];
      const char *names[UG_TUNE_MAX_SHAPE];
      for (int k = 0; k < e->nshape; k++) names[k] = e->shape_names[k];
      replaced += ug_tunedb_find(&all, e->kernel, e->pass, e->dtype, e->nshape, names, e->shape, e->ub_bytes) != NULL;
      if (ug_tunedb_put(&all, e) < 0) {
        cli_error("tune merge: out of memory");
        rc = EXIT_FAILED;
      }
    }
    ug_tunedb_free(&part);
  }
  if (rc == EXIT_OK) {
    int saved = ug_tunedb_merge_save(out, &all, err, sizeof err);
    if (saved == -2) { /* OUT is another machine's, or no DB: bad input, like a foreign input */
      cli_error("tune merge: %s; nothing written", err);
      rc = EXIT_USAGE;
    } else if (saved < 0) {
      cli_error("tune merge: %s", err);
      rc = EXIT_FAILED;
    } else {
      printf("%d %s from %d DBs merged into %s", all.n, all.n == 1 ? "entry" : "entries", nin, out);
      if (replaced) printf(" (%d keys in more than one input: the later input's entry kept)", replaced);
      printf("\n");
    }
  }
  ug_tunedb_free(&all);
  return rc;
}
