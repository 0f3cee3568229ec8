/* specs/fused_moe_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/fused_moe_ref.c"

#include "ref.h"

REF_REGISTER(fused_moe, route, fused_moe_route_ref)
REF_REGISTER(fused_moe, mm, fused_moe_mm_ref)
REF_REGISTER(fused_moe, dw, fused_moe_dw_ref)
REF_REGISTER(fused_moe, act, fused_moe_act_ref)
REF_REGISTER(fused_moe, act_bwd, fused_moe_act_bwd_ref)
REF_REGISTER(fused_moe, combine, fused_moe_combine_ref)
