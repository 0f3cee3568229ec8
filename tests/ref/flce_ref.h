/* Fused linear cross entropy in double precision: the whole op, as
 * ubg_flce computes it (formulas: specs/flce_ref.c). */
#ifndef UBG_FLCE_REF_H
#define UBG_FLCE_REF_H

#include <stdint.h>

#include "../../runtime/include/ubgen.h"

/* dtype is REF_F32/F16/BF16 (x, weight, o->ce_weight, o->bias in it).
 * loss and z_loss get [1] values (MEAN, SUM) or [bt] (NONE); z_loss,
 * argmax, dx [bt*hidden], dweight [vocab*hidden], dbias [vocab] may be NULL.
 * The gradients are those of the reduced loss (of sum(loss) for NONE).
 * weight NULL is the identity (hidden == vocab, dweight NULL): the cross
 * entropy on the logits x, dx their gradient. */
void flce_ref_full(int dtype, int64_t bt, int64_t hidden, int64_t vocab, const void *x, const void *weight,
                   const int64_t *target, const ubg_flce_opts *o, double *loss, double *z_loss, int64_t *argmax,
                   double *dx, double *dweight, double *dbias);

#endif
