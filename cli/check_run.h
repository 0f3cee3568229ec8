/* One check of one variant on one case: random inputs, the kernel through
 * ubg_launch, the double-precision reference, the comparison. Used by
 * `ubgen check`; the Criterion suites have their own, wider loops. */
#ifndef CLI_CHECK_RUN_H
#define CLI_CHECK_RUN_H

#include <stdint.h>

#include "../runtime/include/ubgen.h"
#include "check_ref.h"
#include "../gen/spec.h"

/* One call's arguments with seeded inputs (as `ubgen check` fills them),
 * kept so the call can be repeated (timing) and its outputs reset. */
typedef struct {
  const ug_pass *p;
  int dtype;
  int64_t *env;
  ubg_arg args[UG_MAX_ARGS];
  ref_slot rargs[UG_MAX_ARGS]; /* the reference reads the pristine copies */
  void *bufs[UG_MAX_ARGS], *copies[UG_MAX_ARGS];
  double *outs[UG_MAX_ARGS];   /* the reference's outputs, after cli_check_call_reference */
  int64_t counts[UG_MAX_ARGS];
  size_t bytes[UG_MAX_ARGS];
  char *msg; /* CLI_CHECK_MSG bytes: a child's message to the parent */
} cli_check_call;
enum { CLI_CHECK_MSG = 2048 };

/* the bytes of the tensors one call at case cs reads and writes (what
 * cli_check_call_make would allocate); -1 when the case's shape is invalid */
int64_t cli_check_call_bytes(const ug_pass *p, int dtype, const ug_case *cs);

int cli_check_call_make(cli_check_call *c, const ug_pass *p, int dtype, const ug_case *cs, uint64_t seed, char *msg, size_t n);
/* outputs and inout tensors back to their state before the first run */
void cli_check_call_reset(cli_check_call *c);
ubg_status cli_check_call_run(ubg_ctx *ctx, cli_check_call *c);
/* The spec's code (its reference, its kernels) run in a child process given
 * timeout_s seconds (cli/isolate.h), the tensors shared with it. The call:
 * UBG_OK, a status with the library's message in msg, or -1 with msg
 * saying why it did not return (a signal, the time limit). */
int cli_check_call_run_isolated(ubg_ctx *ctx, cli_check_call *c, int timeout_s, char *msg, size_t n);
/* the reference's outputs: 0, or -1 with msg (out of memory, or the
 * reference did not return) */
int cli_check_call_reference(cli_check_call *c, cli_check_ref_fn ref, int timeout_s, char *msg, size_t n);
/* 0: every float output within the pass's tolerance of the reference; 1: not (msg) */
int cli_check_call_compare(const cli_check_call *c, char *msg, size_t n);
void cli_check_call_free(cli_check_call *c);
/* the outputs (and inout tensors) as they are now, into saved[] (allocated
 * on first use; free each) */
int cli_check_call_save(const cli_check_call *c, void **saved);
/* 0: the outputs are bit for bit those saved; 1: not (msg says where) */
int cli_check_call_same_bits(const cli_check_call *c, void *const *saved, char *msg, size_t n);

/* 0: every output within tolerance; 1: a mismatch (msg says where);
 * -1: the call failed (msg has the status and message). The variant used
 * is whatever the context is set to use (ubg_set_variant). */
int cli_check_run_case(ubg_ctx *ctx, const ug_pass *p, cli_check_ref_fn ref, int dtype, const ug_case *cs, uint64_t seed,
                char *msg, size_t n);

#endif
