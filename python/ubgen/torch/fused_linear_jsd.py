"""Fused linear generalized JSD: the JSD of a student's and a teacher's
log-softmaxed logits over a temperature, the two linear layers fused in,
never holding a BT x V logits tensor (specs/fused_linear_jsd.json):

    student_input [BT, H], student_weight [V, H], teacher_input [BT, H'],
    teacher_weight [V, H'], shift_labels [BT] (optional)
    -> loss [] f32 = the sum over rows not ignored of
       JSD(log_softmax(x_s W_s^T / T), log_softmax(x_t W_t^T / T)) / their count

The student's gradients are computed in the forward pass, as Liger does,
and scaled by grad_output in the backward; the teacher gets none.
"""
import torch

from . import _util
from .cross_entropy import _accum_dtype


class FusedLinearJSDFunction(torch.autograd.Function):
    """Liger's LigerFusedLinearJSDFunction: apply(student_input,
    student_weight, teacher_input, teacher_weight, shift_labels=None,
    jsd_beta=0.5, ignore_index=-100, temperature=1.0, accum_dtype=None)"""

    @staticmethod
    def forward(ctx, student_input, student_weight, teacher_input, teacher_weight, shift_labels=None, jsd_beta=0.5,
                ignore_index=-100, temperature=1.0, accum_dtype=None):
        xs = _util.tensor("student_input", student_input, ndim=2)
        _util.dtype_code("student_input", xs)
        ws = _util.same_dtype("student_weight", _util.tensor("student_weight", student_weight, ndim=2), xs.dtype)
        xt = _util.same_dtype("teacher_input", _util.tensor("teacher_input", teacher_input, ndim=2), xs.dtype)
        wt = _util.same_dtype("teacher_weight", _util.tensor("teacher_weight", teacher_weight, ndim=2), xs.dtype)
        bt, H = xs.shape
        V, Ht = wt.shape
        if ws.shape[1] != H:
            raise ValueError("student_weight has shape %s, but student_input has %d columns" % (tuple(ws.shape), H))
        if xt.shape != (bt, Ht):
            raise ValueError("teacher_input has shape %s; (BT, H') = (%d, %d) is needed (teacher_weight is %s)"
                             % (tuple(xt.shape), bt, Ht, tuple(wt.shape)))
        if ws.shape[0] != V:
            raise ValueError("student_weight has %d rows and teacher_weight %d: both are the vocabulary"
                             % (ws.shape[0], V))
        labels = None
        if shift_labels is not None:
            labels = _util.indices("shift_labels", shift_labels)
            if tuple(labels.shape) != (bt,):
                raise ValueError("shift_labels has shape %s; (BT,) = (%d,) is needed" % (tuple(labels.shape), bt))
        if not temperature > 0:
            raise ValueError("temperature = %r; it divides the logits and must be above 0" % (temperature,))
        loss = _util.empty((1,), torch.float32)
        dx = _util.empty_like(xs) if ctx.needs_input_grad[0] else None
        dw = _util.empty_like(ws) if ctx.needs_input_grad[1] else None
        _util.launch("fused_linear_jsd", "chunk", xs.dtype, student_input=xs, student_weight=ws, teacher_input=xt,
                     teacher_weight=wt, shift_labels=labels, loss=loss, dx=dx, dweight=dw, bt=bt, hidden=H,
                     teacher_hidden=Ht, vocab=V, ignore_index=int(ignore_index),
                     accum_dtype=_accum_dtype(accum_dtype, xs.dtype), jsd_beta=_util.f32(jsd_beta),
                     temperature=_util.f32(temperature))
        ctx.save_for_backward(dx, dw)
        return loss.view(())  # Liger's loss is the sum of its f32 row losses

    @staticmethod
    def backward(ctx, grad_output):
        dx, dw = ctx.saved_tensors
        if not torch.equal(grad_output, torch.ones_like(grad_output)):  # 1: the last layer, as Liger skips it
            g = grad_output.to(torch.float32)
            dx, dw = [None if d is None else (d.float() * g).to(d.dtype) for d in (dx, dw)]
        return (dx, dw) + (None,) * 7


def fused_linear_jsd(student_input, student_weight, teacher_input, teacher_weight, shift_labels=None, jsd_beta=0.5,
                     ignore_index=-100, temperature=1.0, accum_dtype=None):
    return FusedLinearJSDFunction.apply(student_input, student_weight, teacher_input, teacher_weight, shift_labels,
                                        jsd_beta, ignore_index, temperature, accum_dtype)


class FusedLinearJSD(torch.nn.Module):
    """the generalized JSD of the student's projection against the teacher's"""

    def __init__(self, jsd_beta=0.5, ignore_index=-100, temperature=1.0, accum_dtype=None):
        super().__init__()
        if temperature == 0:
            raise ValueError("temperature cannot be 0")
        self.jsd_beta, self.ignore_index, self.temperature, self.accum_dtype = (jsd_beta, ignore_index, temperature,
                                                                                accum_dtype)

    def forward(self, student_input, student_weight, teacher_input, teacher_weight, shift_labels=None):
        return FusedLinearJSDFunction.apply(student_input, student_weight, teacher_input, teacher_weight, shift_labels,
                                            self.jsd_beta, self.ignore_index, self.temperature, self.accum_dtype)

    def extra_repr(self):
        return "jsd_beta=%g, ignore_index=%d, temperature=%g" % (self.jsd_beta, self.ignore_index, self.temperature)
