/* specs/rope_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/rope_ref.c"

#include "ref.h"

REF_REGISTER(rope, fwd, rope_fwd_ref)
REF_REGISTER(rope, bwd, rope_bwd_ref)
