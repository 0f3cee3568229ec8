/* specs/rms_norm_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/rms_norm_ref.c"

#include "ref.h"

REF_REGISTER(rms_norm, fwd, rms_norm_fwd_ref)
REF_REGISTER(rms_norm, bwd, rms_norm_bwd_ref)
