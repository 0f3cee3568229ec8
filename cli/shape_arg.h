/* --shape name=value,...: values for a pass's int args (and has_<tensor>
 * flags). A value may be a list (a/b/c) or a range (a:b doubles, a:b:step
 * steps), for tune; every combination is a shape. Unset shape names are an
 * error; other int args take their spec default, or their smallest allowed
 * value. */
#ifndef CLI_SHAPE_ARG_H
#define CLI_SHAPE_ARG_H

#include <jansson.h>

#include "../gen/spec.h"

/* Fills env (nsyms slots): int args and has_* (all optional tensors present
 * unless has_<name>=0 is given). -1 with a message printed on bad input. */
int cli_shape_env(const ug_pass *p, const char *shape, int64_t *env);

/* Every shape the lists and ranges give: *envs holds *n blocks of nsyms + 1
 * slots (free it). -1 with a message printed on bad input. */
int cli_shape_envs(const ug_pass *p, const char *shape, int64_t **envs, int *n);

/* the kernel's shape in env as a JSON object {name: value, ...}, in the
 * spec's shape order, as the tuning DB keeps shapes */
json_t *cli_shape_json(const ug_pass *p, const int64_t *env);

#endif
