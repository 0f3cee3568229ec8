/* specs/llama4_rope_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/llama4_rope_ref.c"

#include "ref.h"

REF_REGISTER(llama4_rope, fwd, llama4_rope_fwd_ref)
REF_REGISTER(llama4_rope, bwd, llama4_rope_bwd_ref)
