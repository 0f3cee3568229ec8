/* specs/neighborhood_attention_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/neighborhood_attention_ref.c"

#include "ref.h"

REF_REGISTER(neighborhood_attention, fwd, neighborhood_attention_fwd_ref)
REF_REGISTER(neighborhood_attention, bwd, neighborhood_attention_bwd_ref)
