/* specs/modulated_rms_norm_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/modulated_rms_norm_ref.c"

#include "ref.h"

REF_REGISTER(modulated_rms_norm, fwd, modulated_rms_norm_fwd_ref)
REF_REGISTER(modulated_rms_norm, bwd, modulated_rms_norm_bwd_ref)
