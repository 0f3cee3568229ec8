/* specs/kl_div_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/kl_div_ref.c"

#include "ref.h"

REF_REGISTER(kl_div, fwd, kl_div_fwd_ref)
REF_REGISTER(kl_div, bwd, kl_div_bwd_ref)
