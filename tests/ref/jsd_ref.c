/* specs/jsd_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/jsd_ref.c"

#include "ref.h"

REF_REGISTER(jsd, fwd, jsd_fwd_ref)
