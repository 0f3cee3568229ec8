#include "cli.h"

#include "help.h"
#include "isolate.h"
#include "suggest.h"

#include "../gen/fsutil.h"
#include "../gen/source.h"
#include "../gen/tunedb.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ubgen: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_diag(const ug_diag *d) {
  char msg[2200];
  ug_diag_format(d, msg, sizeof msg);
  cli_error("%s", msg);
}

bool cli_progress_enabled(void) { return isatty(STDERR_FILENO); }

int cli_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void cli_progress(const char *fmt, ...) {
  if (!cli_progress_enabled()) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("\r\033[K", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
}

void cli_progress_done(void) {
  if (cli_progress_enabled()) fputs("\r\033[K", stderr);
}

static bool accepts(const char *accepted, const char *name) {
  size_t n = strlen(name);
  for (const char *p = accepted; (p = strstr(p, name)); p += n)
    if ((p == accepted || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

static int add_list(const char **list, int *n, const char *v, const char *opt) {
  if (*n == CLI_MAX_LIST) {
    cli_error("%s: at most %d values", opt, CLI_MAX_LIST);
    return -1;
  }
  list[(*n)++] = v;
  return 0;
}

/* --name's value val as an int in [lo, hi] into *out; said is what the
 * message calls it ("seconds, ") */
static int int_option(const char *cmd, const char *name, const char *val, long lo, long hi, const char *said, int *out) {
  char *end;
  const long v = strtol(val, &end, 10);
  if (end == val || *end || v < lo || v > hi) {
    cli_error("%s: --%s \"%s\" must be %san integer in [%ld, %ld]", cmd, name, val, said, lo, hi);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int cli_parse(int argc, char **argv, const char *cmd, const char *accepted, bool takes_target, cli_opts *o) {
  memset(o, 0, sizeof *o);
  o->cmd = cmd;
  o->timeout = CLI_TIMEOUT_DEFAULT;
  o->budget.margin = 0;
  /* the budget the library would use: --ub overrides it below */
  char env_err[300];
  bool ignored;
  if (ug_ub_from_env(&o->budget.ub_bytes, &ignored, env_err, sizeof env_err) < 0) {
    cli_error("%s: %s", cmd, env_err);
    return -1;
  }
  if (ignored) cli_error("%s: warning: ASCEND_UB_CAPACITY_BITS=\"%s\" ignored: not a positive bit count", cmd, getenv("ASCEND_UB_CAPACITY_BITS"));
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      cli_help(cmd, stdout);
      return 1;
    }
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) != 0) {
      if (takes_target && !o->target) {
        o->target = a;
        continue;
      }
      cli_error("%s: unexpected argument \"%s\" (see `ubgen %s --help`)", cmd, a, cmd);
      return -1;
    }
    char name[64];
    const char *val = NULL;
    const char *eq = strchr(a, '=');
    size_t nlen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (nlen >= sizeof name) nlen = sizeof name - 1;
    memcpy(name, a + 2, nlen);
    name[nlen] = '\0';
    if (!accepts(accepted, name)) {
      char near[64];
      if (cli_suggest_word(name, accepted, near, sizeof near))
        cli_error("%s: unknown option --%s; did you mean --%s? (`ubgen %s --help` lists the options)", cmd, name, near,
                  cmd);
      else cli_error("%s: unknown option --%s (this command takes: --%s)", cmd, name, accepted);
      return -1;
    }
    bool is_flag = !strcmp(name, "json") || !strcmp(name, "self-register") || !strcmp(name, "no-kernels") ||
                   !strcmp(name, "verbose") || !strcmp(name, "no-reference") || !strcmp(name, "dry-run");
    if (is_flag) {
      if (eq) {
        cli_error("%s: --%s takes no value", cmd, name);
        return -1;
      }
      if (!strcmp(name, "json")) o->json = true;
      else if (!strcmp(name, "self-register")) o->self_register = true;
      else if (!strcmp(name, "no-kernels")) o->no_kernels = true;
      else if (!strcmp(name, "no-reference")) o->no_reference = true;
      else if (!strcmp(name, "dry-run")) o->dry_run = true;
      else o->verbose++;
      continue;
    }
    if (eq) {
      val = eq + 1;
    } else {
      if (i + 1 >= argc) {
        cli_error("%s: --%s needs a value", cmd, name);
        return -1;
      }
      val = argv[++i];
    }
    if (!strcmp(name, "specs")) {
      if (add_list(o->specs_dirs, &o->nspecs_dirs, val, "--specs") < 0) return -1;
    } else if (!strcmp(name, "kernel")) {
      if (add_list(o->kernels, &o->nkernels, val, "--kernel") < 0) return -1;
    } else if (!strcmp(name, "dtype")) {
      int dt = ug_dtype_parse(val);
      if (dt < 0) {
        cli_error("%s: --dtype \"%s\" is not one of f32, f16, bf16", cmd, val);
        return -1;
      }
      o->dtypes[dt] = true;
      o->dtype_set = true;
      if (o->ndtype_args < 2) o->dtype_args[o->ndtype_args] = val;
      o->ndtype_args++;
    } else if (!strcmp(name, "ub")) {
      char err[256];
      if (ug_parse_size(val, &o->budget.ub_bytes, err, sizeof err) < 0 ||
          ug_check_ub(o->budget.ub_bytes, "--ub", err, sizeof err) < 0) {
        cli_error("%s: --ub: %s", cmd, err);
        return -1;
      }
      o->ub_set = true;
    } else if (!strcmp(name, "margin")) {
      char *end;
      double m = strtod(val, &end);
      if (*end || !(m > 0 && m <= 1)) {
        cli_error("%s: --margin \"%s\" must be a number in (0, 1]", cmd, val);
        return -1;
      }
      o->budget.margin = m;
    } else if (!strcmp(name, "shape")) {
      o->shape = val;
    } else if (!strcmp(name, "out")) {
      o->out = val;
    } else if (!strcmp(name, "registry")) {
      o->registry = val;
    } else if (!strcmp(name, "tuned")) {
      o->tuned = val;
    } else if (!strcmp(name, "sample")) {
      if (int_option(cmd, name, val, 1, 1000, "", &o->sample) < 0) return -1;
    } else if (!strcmp(name, "db")) {
      o->db = val;
    } else if (!strcmp(name, "svg")) {
      o->svg = val;
    } else if (!strcmp(name, "reps")) {
      if (int_option(cmd, name, val, 1, 1000, "", &o->reps) < 0) return -1;
    } else if (!strcmp(name, "timeout")) {
      if (int_option(cmd, name, val, 1, 86400, "seconds, ", &o->timeout) < 0) return -1;
    } else if (!strcmp(name, "backend")) {
      o->backend = val;
    } else if (!strcmp(name, "shard")) {
      char *slash, *end;
      long i1 = strtol(val, &slash, 10), n = *slash == '/' ? strtol(slash + 1, &end, 10) : 0;
      if (slash == val || *slash != '/' || end == slash + 1 || *end || n < 1 || n > 10000 || i1 < 1 || i1 > n) {
        cli_error("%s: --shard \"%s\" must be i/n with 1 <= i <= n (for example 2/4: the second of four parts)", cmd,
                  val);
        return -1;
      }
      o->shard_i = (int)i1;
      o->shard_n = (int)n;
    } else {
      cli_error("%s: --%s is not handled", cmd, name);
      return -1;
    }
  }
  return 0;
}

int cli_load_specs(cli_opts *o, ug_specset *set) {
  ug_diag d;
  memset(set, 0, sizeof *set);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) exe[n] = '\0';
  ug_data_dir(n > 0 ? exe : NULL, o->data_dir, sizeof o->data_dir);
  for (int i = 0; i < o->nspecs_dirs; i++)
    if (ug_specset_add_dir(set, o->specs_dirs[i], &d) < 0) goto fail;
  if (ug_specset_add_path(set, getenv("UBGEN_SPEC_PATH"), &d) < 0) goto fail;
  char shipped[4200];
  snprintf(shipped, sizeof shipped, "%s/specs", o->data_dir);
  if (ug_is_dir(shipped) && ug_specset_add_dir(set, shipped, &d) < 0) goto fail;
  /* a pass whose template or a partial the spec names cannot be found is a
   * bad spec: say where */
  char templates[4200];
  snprintf(templates, sizeof templates, "%s/templates", o->data_dir);
  for (int i = 0; i < set->n; i++) {
    const ug_kernel *k = set->k[i];
    ug_kernel_path kp;
    char found[4096];
    ug_kernel_path_init(&kp, k, templates);
    for (int j = 0; j < k->npartials; j++) {
      if (ug_tmpl_find(&kp.path, k->partials[j].file, found, sizeof found) == 0) continue;
      ug_fail(&d, k->path, k->partials[j].at, "partial \"%s\" (%s) not found on the template path", k->partials[j].file,
              k->partials[j].name);
      goto fail;
    }
    for (int j = 0; j < k->npasses; j++) {
      const ug_pass *p = &k->passes[j];
      if (ug_tmpl_find(&kp.path, p->template_name, found, sizeof found) == 0) continue;
      ug_fail(&d, k->path, p->template_at, "template \"%s\" of pass %s not found in %s, %s or %s",
              p->template_name, p->name, kp.path.ndirs > 0 ? kp.dirs[0] : "-", kp.path.ndirs > 1 ? kp.dirs[1] : "-",
              kp.path.ndirs > 2 ? kp.dirs[2] : "-");
      goto fail;
    }
  }
  for (int i = 0; i < o->nkernels; i++) {
    if (!ug_specset_find(set, o->kernels[i])) {
      char known[1024];
      cli_error("%s: --kernel \"%s\" is not a known kernel%s", o->cmd, o->kernels[i],
                cli_known_kernels(set, o->kernels[i], known, sizeof known));
      ug_specset_free(set);
      return -1;
    }
  }
  return 0;
fail:
  cli_diag(&d);
  ug_specset_free(set);
  return -1;
}

const char *cli_known_kernels(const ug_specset *set, const char *got, char *out, size_t n) {
  const char *names[256] = {0};
  int m = 0;
  for (int i = 0; i < set->n && m < 256; i++) names[m++] = set->k[i]->name;
  const char *near = cli_suggest(got, names, m);
  size_t used = (size_t)snprintf(out, n, "%s%s%s (kernels: ", near ? "; did you mean \"" : "", near ? near : "",
                                 near ? "\"?" : "");
  for (int i = 0; i < m && used < n; i++)
    used += (size_t)snprintf(out + used, n - used, "%s%s", names[i], i + 1 < m ? ", " : "");
  if (used < n) snprintf(out + used, n - used, "; --specs DIR or UBGEN_SPEC_PATH adds more)");
  return out;
}

int cli_find_pass(const ug_specset *set, const char *target, const ug_kernel **k, const ug_pass **p) {
  const char *dot = target ? strchr(target, '.') : NULL;
  if (!dot) {
    cli_error("expected KERNEL.PASS (for example rms_norm.fwd), got \"%s\"", target ? target : "");
    return -1;
  }
  char kname[128];
  snprintf(kname, sizeof kname, "%.*s", (int)(dot - target), target);
  *k = ug_specset_find(set, kname);
  if (!*k) {
    char known[1024];
    cli_error("\"%s\": no kernel named \"%s\"%s", target, kname, cli_known_kernels(set, kname, known, sizeof known));
    return -1;
  }
  *p = ug_spec_pass(*k, dot + 1);
  if (!*p) {
    char passes[256] = "";
    for (int i = 0; i < (*k)->npasses; i++) {
      strncat(passes, (*k)->passes[i].name, sizeof passes - strlen(passes) - 3);
      if (i + 1 < (*k)->npasses) strncat(passes, ", ", sizeof passes - strlen(passes) - 1);
    }
    const char *names[32];
    int n = 0;
    for (int i = 0; i < (*k)->npasses && n < 32; i++) names[n++] = (*k)->passes[i].name;
    const char *near = cli_suggest(dot + 1, names, n);
    char mean[160] = "";
    if (near) snprintf(mean, sizeof mean, "; did you mean %s.%s?", kname, near);
    if (ug_spec_composite(*k, dot + 1))
      cli_error("\"%s\" is a composite op of kernel %s, not a pass: plan and tune take it where the runtime runs it "
                "(the ubgen binary), check and emit its passes (%s)", target, kname, passes);
    else {
      char ops[160] = "";
      for (int i = 0; i < (*k)->ncomposites; i++)
        snprintf(ops + strlen(ops), sizeof ops - strlen(ops), "%s%s", i ? ", " : "; composite ops: ",
                 (*k)->composites[i].name);
      cli_error("\"%s\": kernel %s has no pass \"%s\"%s (passes: %s%s)", target, kname, dot + 1, mean, passes, ops);
    }
    return -1;
  }
  return 0;
}

int cli_db_to_read(const cli_opts *o, char *path, size_t n) {
  path[0] = '\0';
  if (o->db) {
    struct stat st;
    if (stat(o->db, &st) != 0) {
      cli_error("%s: --db %s: %s (a DB to read must exist; `ubgen tune --db %s` writes one)", o->cmd, o->db,
                strerror(errno), o->db);
      return -1;
    }
    snprintf(path, n, "%s", o->db);
    return 0;
  }
  if (ug_tunedb_default_path(getenv("UBGEN_TUNING_DB"), getenv("UBGEN_CACHE_DIR"), path, n) < 0) path[0] = '\0';
  return 0;
}

void cli_export_spec_path(const cli_opts *o) {
  if (!o->nspecs_dirs) return;
  char path[8192] = "";
  for (int i = 0; i < o->nspecs_dirs; i++) {
    strncat(path, o->specs_dirs[i], sizeof path - strlen(path) - 2);
    strncat(path, ":", sizeof path - strlen(path) - 1);
  }
  const char *old = getenv("UBGEN_SPEC_PATH");
  if (old) strncat(path, old, sizeof path - strlen(path) - 1);
  setenv("UBGEN_SPEC_PATH", path, 1);
}
