/* The command line's help texts: the whole synopsis, and each command's. */
#ifndef CLI_HELP_H
#define CLI_HELP_H

#include <stdbool.h>
#include <stdio.h>

/* the Makefile's VERSION */
#ifndef UBGEN_VERSION
#define UBGEN_VERSION "unknown"
#endif

/* every command with its options, the global options and the exit codes;
 * check and tune only with_runtime (the boot generator has no runtime) */
void cli_usage(FILE *f, bool with_runtime);
/* the help of one command ("list", "tune", "tune merge", ...); -1 when
 * there is no such command */
int cli_help(const char *cmd, FILE *f);

#endif
