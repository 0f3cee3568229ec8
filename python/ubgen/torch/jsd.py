"""Generalized Jensen-Shannon divergence of log-probabilities, the loss and
its gradient in one sweep (specs/jsd.json):

    _input [BT, V] = log Q (the student's), target [BT, V] = log P (the
    teacher's), shift_labels [BT] (optional)
    -> loss [] = the sum over rows not ignored of JSD(row) / their count,
       in _input's dtype
    JSD = beta KL(P || M) + (1 - beta) KL(Q || M), M = beta P + (1 - beta) Q;
    beta = 0 is KL(P || Q), beta = 1 KL(Q || P)

The gradient over _input is computed in the forward pass, as Liger does
(the sweep that has both rows in hand writes it; docs/semantics.md), and
scaled by grad_output in the backward. target gets no gradient, as in
Liger. A target of another dtype than _input (an f32 teacher, a bf16
student) is not rounded to _input's: both run in f32, as Liger's kernel
reads each in its own dtype.
"""
import torch

from . import _util


class JSDFunction(torch.autograd.Function):
    """Liger's LigerJSDFunction: apply(_input, target, shift_labels=None,
    beta=0.5, ignore_index=-100)"""

    @staticmethod
    def forward(ctx, _input, target, shift_labels=None, beta=0.5, ignore_index=-100):
        log_q = _util.tensor("_input", _input, ndim=2)
        _util.dtype_code("_input", log_q)
        log_p = _util.tensor("target", target, ndim=2)
        if not torch.is_floating_point(log_p):
            raise TypeError("target has dtype %s; a floating point tensor is needed" % (log_p.dtype,))
        if log_p.dtype != log_q.dtype:  # Liger's kernel reads each in its own dtype into f32: so do these copies
            log_q, log_p = log_q.float(), log_p.float()
        if log_p.shape != log_q.shape:
            raise ValueError("target has shape %s, but _input has %s" % (tuple(log_p.shape), tuple(log_q.shape)))
        bt, V = log_q.shape
        labels = None
        if shift_labels is not None:
            labels = _util.indices("shift_labels", shift_labels)
            if tuple(labels.shape) != (bt,):
                raise ValueError("shift_labels has shape %s; (BT,) = (%d,) is needed" % (tuple(labels.shape), bt))
        loss = _util.empty((1,), torch.float32)
        dlog_q = _util.empty_like(log_q) if ctx.needs_input_grad[0] else None
        _util.launch("jsd", "fwd", log_q.dtype, log_q=log_q, log_p=log_p, shift_labels=labels, loss=loss,
                     dlog_q=dlog_q, rows=bt, cols=V, beta=_util.f32(beta), ignore_index=int(ignore_index))
        if dlog_q is not None:
            dlog_q = dlog_q.to(_input.dtype)  # Liger's dX is of _input's dtype
        ctx.save_for_backward(dlog_q)
        return loss.view(()).to(_input.dtype)  # Liger's loss is in the input's dtype

    @staticmethod
    def backward(ctx, grad_output):
        (dlog_q,) = ctx.saved_tensors
        if dlog_q is not None and not torch.equal(grad_output, torch.ones_like(grad_output)):  # 1: the last layer
            dlog_q = (dlog_q.float() * grad_output.float()).to(dlog_q.dtype)
        return dlog_q, None, None, None, None


def jsd(input, target, shift_labels=None, beta=0.5, ignore_index=-100):
    return JSDFunction.apply(input, target, shift_labels, beta, ignore_index)


class JSD(torch.nn.Module):
    """the generalized JSD of log_q (the student's) against log_p (the teacher's)"""

    def __init__(self, beta=0.5, ignore_index=-100):
        super().__init__()
        self.beta = beta
        self.ignore_index = ignore_index

    def forward(self, log_q, log_p, shift_labels=None):
        return JSDFunction.apply(log_q, log_p, shift_labels, self.beta, self.ignore_index)

    def extra_repr(self):
        return "beta=%g, ignore_index=%d" % (self.beta, self.ignore_index)
