/* specs/sparsemax_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/sparsemax_ref.c"

#include "ref.h"

REF_REGISTER(sparsemax, fwd, sparsemax_fwd_ref)
REF_REGISTER(sparsemax, bwd, sparsemax_bwd_ref)
