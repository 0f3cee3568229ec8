/* specs/mhc_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/mhc_ref.c"

#include "ref.h"

REF_REGISTER(mhc, coeffs_fwd, mhc_coeffs_fwd_ref)
REF_REGISTER(mhc, coeffs_bwd, mhc_coeffs_bwd_ref)
REF_REGISTER(mhc, pre_fwd, mhc_pre_fwd_ref)
REF_REGISTER(mhc, pre_bwd, mhc_pre_bwd_ref)
REF_REGISTER(mhc, post_res_fwd, mhc_post_res_fwd_ref)
REF_REGISTER(mhc, post_res_bwd, mhc_post_res_bwd_ref)
