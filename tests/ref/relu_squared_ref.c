/* specs/relu_squared_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/relu_squared_ref.c"

#include "ref.h"

REF_REGISTER(relu_squared, fwd, relu_squared_fwd_ref)
REF_REGISTER(relu_squared, bwd, relu_squared_bwd_ref)
