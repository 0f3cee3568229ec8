/* specs/dyt_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/dyt_ref.c"

#include "ref.h"

REF_REGISTER(dyt, fwd, dyt_fwd_ref)
REF_REGISTER(dyt, bwd, dyt_bwd_ref)
