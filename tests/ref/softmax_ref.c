/* specs/softmax_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/softmax_ref.c"

#include "ref.h"

REF_REGISTER(softmax, fwd, softmax_fwd_ref)
REF_REGISTER(softmax, bwd, softmax_bwd_ref)
