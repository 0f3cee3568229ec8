/* A context seen from outside the runtime: its spec of a kernel, its tuning
 * DB, its UB budget and how many variants it compiled. The command line's
 * planner and tuner and the runtime's tests read these; struct ubg_ctx
 * stays the runtime's own (internal.h), so no field is read from outside. */
#ifndef UBG_CTX_VIEW_H
#define UBG_CTX_VIEW_H

#include <stdint.h>

#include "../gen/spec.h"
#include "../gen/tunedb.h"
#include "include/ubgen.h"

/* the runtime's own names: not exported from libubgen.so */
#define UBG_HIDDEN __attribute__((visibility("hidden")))

/* ctx's spec of kernel `name`, or NULL (no message) */
UBG_HIDDEN const ug_kernel *rt_find_kernel(const ubg_ctx *ctx, const char *name);
/* the tuning DB ctx loaded at creation (empty when there is none) */
UBG_HIDDEN const ug_tunedb *rt_ctx_tunedb(const ubg_ctx *ctx);
/* ctx's UB budget in bytes: each worker's arena, the tuning DB's key */
UBG_HIDDEN int64_t rt_ctx_ub_bytes(const ubg_ctx *ctx);
/* the variants ctx compiled or swapped so far */
UBG_HIDDEN int rt_ctx_jit_compiles(const ubg_ctx *ctx);

#endif
