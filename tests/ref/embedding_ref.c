/* specs/embedding_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/embedding_ref.c"

#include "ref.h"

REF_REGISTER(embedding, fwd, embedding_fwd_ref)
REF_REGISTER(embedding, bwd, embedding_bwd_ref)
