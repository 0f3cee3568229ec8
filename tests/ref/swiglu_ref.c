/* specs/swiglu_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/swiglu_ref.c"

#include "ref.h"

REF_REGISTER(swiglu, fwd, swiglu_fwd_ref)
REF_REGISTER(swiglu, bwd, swiglu_bwd_ref)
