/* specs/geglu_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/geglu_ref.c"

#include "ref.h"

REF_REGISTER(geglu, fwd, geglu_fwd_ref)
REF_REGISTER(geglu, bwd, geglu_bwd_ref)
