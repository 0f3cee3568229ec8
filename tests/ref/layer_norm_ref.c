/* specs/layer_norm_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/layer_norm_ref.c"

#include "ref.h"

REF_REGISTER(layer_norm, fwd, layer_norm_fwd_ref)
REF_REGISTER(layer_norm, bwd, layer_norm_bwd_ref)
