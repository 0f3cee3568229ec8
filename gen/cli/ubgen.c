/* ubgen: the command line (docs/cli.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
  fputs("usage: ubgen COMMAND [options]\n"
        "  list  [--kernel K] [--dtype D] [--ub SIZE] [--json]        variants, footprints, fit\n"
        "  plan  KERNEL.PASS --dtype D --shape name=v,... [--ub SIZE] [--json]\n"
        "                                                            the variant a call would use, and why\n"
        "  emit  --out DIR [--kernel K]... [--dtype D]... [--ub SIZE] [--registry NAME]\n"
        "                                                            C sources + registry for gcc\n"
#ifndef UBGEN_BOOT
        "  check [KERNEL.PASS|all] [--dtype D] [--ub SIZE]           every feasible variant vs the reference\n"
        "  tune  KERNEL.PASS|all [--dtype D] [--shape ...] [--ub SIZE] [--backend B] [--db FILE] [--reps N] [--json]\n"
        "                                                            time the variants, keep the fastest correct one\n"
#endif
        "every command: --specs DIR (repeatable; also UBGEN_SPEC_PATH), --margin M\n"
        "SIZE: bytes, 192KiB, 1MiB, l1, l2. Exit: 0 ok, 1 a check failed, 2 bad usage or input.\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    usage(stdout);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "list")) return cli_cmd_list(argc - 2, argv + 2);
  if (!strcmp(cmd, "plan")) return cli_cmd_plan(argc - 2, argv + 2);
  if (!strcmp(cmd, "emit")) return cli_cmd_emit(argc - 2, argv + 2);
#ifndef UBGEN_BOOT
  if (!strcmp(cmd, "check")) return cli_cmd_check(argc - 2, argv + 2);
  if (!strcmp(cmd, "tune")) return cli_cmd_tune(argc - 2, argv + 2);
#endif
  if (!strcmp(cmd, "bench")) {
    cli_error("%s: not in this build yet (see the open issues); `ubgen help` lists what is", cmd);
    return EXIT_USAGE;
  }
  cli_error("unknown command \"%s\"", cmd);
  usage(stderr);
  return EXIT_USAGE;
}
