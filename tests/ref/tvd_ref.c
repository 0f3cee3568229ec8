/* specs/tvd_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/tvd_ref.c"

#include "ref.h"

REF_REGISTER(tvd, fwd, tvd_fwd_ref)
REF_REGISTER(tvd, bwd, tvd_bwd_ref)
