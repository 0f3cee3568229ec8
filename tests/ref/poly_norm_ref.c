/* specs/poly_norm_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/poly_norm_ref.c"

#include "ref.h"

REF_REGISTER(poly_norm, fwd, poly_norm_fwd_ref)
REF_REGISTER(poly_norm, bwd, poly_norm_bwd_ref)
