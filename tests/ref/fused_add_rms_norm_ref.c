/* specs/fused_add_rms_norm_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/fused_add_rms_norm_ref.c"

#include "ref.h"

REF_REGISTER(fused_add_rms_norm, fwd, fused_add_rms_norm_fwd_ref)
REF_REGISTER(fused_add_rms_norm, bwd, fused_add_rms_norm_bwd_ref)
