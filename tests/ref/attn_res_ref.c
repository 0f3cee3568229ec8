/* specs/attn_res_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/attn_res_ref.c"

#include "ref.h"

REF_REGISTER(attn_res, fwd, attn_res_fwd_ref)
REF_REGISTER(attn_res, bwd, attn_res_bwd_ref)
