/* specs/grpo_loss_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/grpo_loss_ref.c"

#include "ref.h"

REF_REGISTER(grpo_loss, fwd, grpo_loss_fwd_ref)
REF_REGISTER(grpo_loss, bwd, grpo_loss_bwd_ref)
