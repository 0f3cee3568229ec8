/* specs/group_norm_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/group_norm_ref.c"

#include "ref.h"

REF_REGISTER(group_norm, fwd, group_norm_fwd_ref)
REF_REGISTER(group_norm, bwd, group_norm_bwd_ref)
