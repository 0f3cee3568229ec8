/* specs/fused_linear_jsd_ref.c, the reference `ubgen check` compiles, registered for the tests */
#include "../../specs/fused_linear_jsd_ref.c"

#include "ref.h"

REF_REGISTER(fused_linear_jsd, logits, fused_linear_jsd_logits_ref)
REF_REGISTER(fused_linear_jsd, rows, fused_linear_jsd_rows_ref)
REF_REGISTER(fused_linear_jsd, count, fused_linear_jsd_count_ref)
REF_REGISTER(fused_linear_jsd, dx, fused_linear_jsd_dx_ref)
REF_REGISTER(fused_linear_jsd, dw, fused_linear_jsd_dw_ref)
