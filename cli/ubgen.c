/* ubgen: the command line (docs/cli.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "help.h"
#include "suggest.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
} command;

/* the boot generator, which emits the library's kernels, has no runtime:
 * no check and no tune */
static const command commands[] = {
    {"list", cli_cmd_list}, {"plan", cli_cmd_plan}, {"emit", cli_cmd_emit},
#ifndef UBGEN_BOOT
    {"check", cli_cmd_check}, {"tune", cli_cmd_tune},
#endif
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };
#ifdef UBGEN_BOOT
static const bool with_runtime = false;
#else
static const bool with_runtime = true;
#endif

/* the options every command takes, which may come before the command */
static int global_option(const char *a) {
  static const char *const names[] = {"--specs", "--ub", "--margin"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(names[i]);
    if (!strncmp(a, names[i], n) && (a[n] == '\0' || a[n] == '=')) return a[n] == '\0' ? 2 : 1; /* words it takes */
  }
  return 0;
}

static int help(int argc, char **argv) {
  if (argc == 0) {
    cli_usage(stdout, with_runtime);
    return EXIT_OK;
  }
  char name[64];
  snprintf(name, sizeof name, "%s%s%s", argv[0], argc > 1 ? " " : "", argc > 1 ? argv[1] : "");
  if (cli_help(name, stdout) == 0) return EXIT_OK;
  cli_error("help: no command \"%s\" (`ubgen help` lists them)", name);
  return EXIT_USAGE;
}

int main(int argc, char **argv) {
  /* global options before the command go after it, where every command
   * parses them */
  char *args[512];
  int nglobal = 0, i = 1;
  const char *globals[512];
  while (i < argc && global_option(argv[i])) {
    int words = global_option(argv[i]);
    if (i + words > argc) {
      cli_error("%s needs a value", argv[i]);
      return EXIT_USAGE;
    }
    for (int w = 0; w < words && nglobal < 510; w++) globals[nglobal++] = argv[i + w];
    i += words;
  }
  if (i >= argc) {
    cli_usage(stderr, with_runtime);
    return EXIT_USAGE;
  }
  const char *cmd = argv[i];
  if (!strcmp(cmd, "--version")) {
    printf("ubgen %s\n", UBGEN_VERSION);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
    return help(argc - i - 1, argv + i + 1);
  int nargs = 0;
  for (int k = i + 1; k < argc && nargs < 511 - nglobal; k++) args[nargs++] = argv[k];
  for (int k = 0; k < nglobal; k++) args[nargs++] = (char *)globals[k];
  args[nargs] = NULL;
  for (int c = 0; c < NCOMMANDS; c++)
    if (!strcmp(cmd, commands[c].name)) return commands[c].run(nargs, args);
  const char *names[NCOMMANDS + 1];
  for (int c = 0; c < NCOMMANDS; c++) names[c] = commands[c].name;
  names[NCOMMANDS] = "help";
  const char *near = cli_suggest(cmd, names, NCOMMANDS + 1);
  if (near) cli_error("unknown command \"%s\"; did you mean \"%s\"? (`ubgen help` lists the commands)", cmd, near);
  else cli_error("unknown command \"%s\" (`ubgen help` lists the commands)", cmd);
  return EXIT_USAGE;
}
