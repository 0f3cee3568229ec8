#include "help.h"

#include <string.h>

static const char global[] =
    "Options every command takes, before or after the command:\n"
    "  --specs DIR    a directory of specs, searched before the shipped ones (repeatable;\n"
    "                 also UBGEN_SPEC_PATH)\n"
    "  --ub SIZE      the UB budget: bytes, 192KiB, 1MiB, l1, l2 (default 192KiB, or UBGEN_UB_BYTES)\n"
    "  --margin M     the fraction of the UB a variant may use, in (0, 1] (default: the spec's, else 0.90)\n"
    "  -h, --help     this command's help\n";

static const char exits[] = "Exit status: 0 ok, 1 a check or a verification failed, 2 bad usage or bad input.\n";

typedef struct {
  const char *cmd, *text;
} help_text;

static const help_text texts[] = {
    {"list",
     "Usage: ubgen list [--kernel K]... [--dtype D]... [--json]\n"
     "Every variant of every pass, or of the kernels K, with its UB footprint and whether it fits.\n"
     "  --kernel K     only kernel K (repeatable)\n"
     "  --dtype D      only dtype D: f32, f16, bf16 (repeatable)\n"
     "  --json         the list as JSON\n"},
    {"plan",
     "Usage: ubgen plan KERNEL.PASS --dtype D --shape name=v,... [--db FILE] [--json] [--verbose]\n"
     "       ubgen plan KERNEL.OP --dtype D --shape name=v,... [--db FILE] [--json]\n"
     "The variant a call of that shape would run, and why; KERNEL.OP, a composite op such as\n"
     "flce.chunk (FLCE's rows per chunk and GEMMs): its axes, chunks and scratch.\n"
     "  --dtype D      the call's dtype: f32, f16, bf16 (once)\n"
     "  --shape ...    the call's sizes by name (rows=2048,cols=4096); names not given take the\n"
     "                 spec's defaults\n"
     "  --db FILE      consult this tuning DB as the runtime would (else UBGEN_TUNING_DB)\n"
     "  --json         the answer as JSON\n"
     "  --verbose      every rule that rules a variant out, with its values\n"},
    {"emit",
     "Usage: ubgen emit --out DIR [--kernel K]... [--dtype D]... [--registry NAME] [--self-register]\n"
     "                  [--no-kernels] [--tuned DB | --sample N]\n"
     "C sources of every variant that fits, a registry of them and a header, for gcc.\n"
     "  --out DIR        where to write (created; files replaced atomically)\n"
     "  --kernel K       only kernel K (repeatable)\n"
     "  --dtype D        only dtype D (repeatable)\n"
     "  --registry NAME  the registry's name (default ubg_aot_main, the library's own)\n"
     "  --self-register  the registry registers itself when its object is loaded\n"
     "  --no-kernels     a registry of specs only: every variant through the JIT\n"
     "  --tuned DB       only the variants DB chose, and the default strategy's choices\n"
     "  --sample N       of each pass and dtype, every Nth variant, the first tiled one and the\n"
     "                   widest whole-row one (a small build for a memory checker)\n"},
    {"check",
     "Usage: ubgen check [KERNEL|KERNEL.PASS|all] [--kernel K]... [--dtype D]... [--no-reference] [--timeout S]\n"
     "Runs every variant that fits on the kernel's test cases and compares it with the kernel's\n"
     "reference and with the reference variant's bits; compiles every variant on the way.\n"
     "  KERNEL         every pass of that kernel (also --kernel K, repeatable); default: all\n"
     "  --dtype D      only dtype D (repeatable)\n"
     "  --no-reference a kernel without a reference: its variants against each other only\n"
     "  --timeout S    seconds the reference or a variant may run, in a child process (default 300):\n"
     "                 a crash or a hang fails it by name\n"},
    {"tune",
     "Usage: ubgen tune KERNEL|KERNEL.PASS|KERNEL.OP|all [--kernel K]... [--dtype D] [--shape name=v,...]\n"
     "                  [--backend B]"
     " [--db FILE] [--reps N] [--json] [--svg FILE] [--shard i/n] [--no-reference]\n"
     "                  [--dry-run] [--timeout S]\n"
     "       ubgen tune merge A.json B.json ... --db OUT.json\n"
     "Verifies and times every variant that fits, keeps the fastest correct one per dtype and\n"
     "shape in the tuning DB. A KERNEL (or --kernel K, repeatable) is every pass of it, then its\n"
     "composite ops (KERNEL.OP, such as flce.chunk), as list, emit and check name kernels.\n"
     "  --kernel K     every pass of kernel K (repeatable)\n"
     "  --dtype D      only dtype D\n"
     "  --shape ...    sizes by name: a value, a list a/b/c or a range a:b[:step]\n"
     "                 (default: the kernel's shape buckets)\n"
     "  --backend B    time aot, tcc or gcc code (default: the code the library will run)\n"
     "  --db FILE      the DB to write (else UBGEN_TUNING_DB, else the cache directory's)\n"
     "  --reps N       timed repetitions per variant, 1 to 1000\n"
     "  --json         the results as JSON on stdout\n"
     "  --svg FILE     a picture: time against footprint per shape\n"
     "  --shard i/n    part i of n of the sweep (join the parts with tune merge)\n"
     "  --no-reference a kernel without a reference: verified against its variants only\n"
     "  --dry-run      count the sweep's units and candidates, say how long it takes at least;\n"
     "                 tune and write nothing\n"
     "  --timeout S    seconds the reference or a candidate's verification may run, in a child\n"
     "                 process (default 300): a crash or a hang fails that candidate by name\n"
     "A sweep that will take more than a minute says so before it starts (a floor: every\n"
     "candidate runs at least twice, no faster than the machine could move its bytes) and\n"
     "again after its first unit, at that unit's pace.\n"},
    {"tune merge",
     "Usage: ubgen tune merge A.json B.json ... --db OUT.json\n"
     "Merges tuning DBs (the parts of a sharded tune) into OUT, locked and atomically; OUT may\n"
     "exist (it is merged into) or not.\n"},
    {"help", "Usage: ubgen help [COMMAND]\nThe synopsis of every command, or one command's help.\n"},
};

void cli_usage(FILE *f, bool with_runtime) {
  fputs("Usage: ubgen [--specs DIR] [--ub SIZE] [--margin M] COMMAND [options]\n"
        "       ubgen --help | --version\n"
        "Generates, checks and tunes UB-budgeted kernels. Commands:\n"
        "  list   [--kernel K]... [--dtype D]... [--json]           variants, footprints, fit\n"
        "  plan   KERNEL.PASS|KERNEL.OP --dtype D --shape name=v,... [--db FILE] [--json] [--verbose]\n"
        "                                                           the variant a call would use, and why\n"
        "  emit   --out DIR [--kernel K]... [--dtype D]... [--registry NAME] [--self-register]\n"
        "         [--no-kernels] [--tuned DB | --sample N]          C sources + registry for gcc\n",
        f);
  if (with_runtime)
    fputs("  check  [KERNEL|KERNEL.PASS|all] [--kernel K]... [--dtype D]... [--no-reference]\n"
          "                                                           every variant vs the reference\n"
          "  tune   KERNEL|KERNEL.PASS|KERNEL.OP|all [--kernel K]... [--dtype D] [--shape ...] [--db FILE]\n"
          "         [--backend B] [--reps N] [--json] [--svg FILE] [--shard i/n] [--no-reference]\n"
          "         [--dry-run]                                       time the variants, keep the fastest\n"
          "  tune merge A.json B.json ... --db OUT.json               join the DBs of a sharded tune\n",
          f);
  fputs("  help   [COMMAND]                                         this, or one command's help\n"
        "KERNEL.OP is a kernel's composite op (flce.chunk: FLCE's chunks of rows and GEMMs).\n",
        f);
  fputs(global, f);
  fputs("  --version      ubgen's version\n", f);
  fputs(exits, f);
  fputs("`ubgen COMMAND --help` has each command's options; docs/cli.md the whole manual.\n", f);
}

int cli_help(const char *cmd, FILE *f) {
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (!strcmp(texts[i].cmd, cmd)) {
      fputs(texts[i].text, f);
      if (strcmp(cmd, "help") && strcmp(cmd, "tune merge")) fputs(global, f);
      fputs(exits, f);
      return 0;
    }
  return -1;
}
