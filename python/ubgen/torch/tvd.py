"""Total variation distance between the rows of two distributions, forward
and backward in one place (specs/tvd.json):

    p, q [BT, V], shift_labels [BT] (optional; rows at ignore_index are left out)
    -> loss f32: [BT, V] 0.5 |p - q| for "none"; else [], the sum over the
       rows kept ("sum"), over their number ("batchmean") or their elements ("mean")
    backward: dp = grad_output 0.5 sign(p - q) times the same factor; none for q

The backward computes dp from p and q (Liger computes it in the forward and
keeps it; docs/semantics.md says why ubgen does not).
"""
import torch

from . import _util

REDUCTIONS = _util.REDUCTIONS
NONE = REDUCTIONS["none"]


def _operands(p, q):
    """p and q checked and contiguous, in the dtype torch gives p - q (a bf16
    p against an f32 q, as Liger's test has them, is computed in f32)"""
    pc, qc = _util.tensor("p", p, ndim=2), _util.tensor("q", q, ndim=2)
    _util.dtype_code("p", pc)
    _util.dtype_code("q", qc)
    if qc.shape != pc.shape:
        raise ValueError("q has shape %s, but p has shape %s" % (tuple(qc.shape), tuple(pc.shape)))
    dtype = torch.promote_types(pc.dtype, qc.dtype)
    return _util.same_dtype("p", pc, dtype), _util.same_dtype("q", qc, dtype)


def _labels(shift_labels, rows):
    if shift_labels is None:
        return None
    t = _util.indices("shift_labels", shift_labels)
    if tuple(t.shape) != (rows,):
        raise ValueError("shift_labels has shape %s, but p has %d rows: (%d,) is needed"
                         % (tuple(t.shape), rows, rows))
    return t


class TVDLossFunction(torch.autograd.Function):
    """Liger's LigerTVDLossFunction: apply(p, q, shift_labels=None, reduction="batchmean", ignore_index=-100)"""

    @staticmethod
    def forward(ctx, p, q, shift_labels=None, reduction="batchmean", ignore_index=-100):
        red = _util.choice("reduction", reduction, REDUCTIONS)
        pc, qc = _operands(p, q)
        rows, cols = pc.shape
        labels = _labels(shift_labels, rows)
        loss = _util.empty((rows, cols) if red == NONE else (1,), torch.float32)
        _util.launch("tvd", "fwd", pc.dtype, p=pc, q=qc, shift_labels=labels, loss=loss, rows=rows, cols=cols,
                     ignore_index=int(ignore_index), reduction=red)
        ctx.save_for_backward(pc, qc, labels)
        ctx.red, ctx.ignore_index, ctx.p_dtype = red, int(ignore_index), p.dtype
        return loss if red == NONE else loss.view(())

    @staticmethod
    def backward(ctx, grad_output):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        pc, qc, labels = ctx.saved_tensors
        rows, cols = pc.shape
        g = _util.tensor("grad_output", grad_output.to(torch.float32)).reshape(-1)
        dp = _util.empty_like(pc)
        _util.launch("tvd", "bwd", pc.dtype, dloss=g, p=pc, q=qc, shift_labels=labels, dp=dp, rows=rows, cols=cols,
                     ignore_index=ctx.ignore_index, reduction=ctx.red)
        return dp.to(ctx.p_dtype), None, None, None, None


def tvd(p, q, shift_labels=None, reduction="batchmean", ignore_index=-100):
    return TVDLossFunction.apply(p, q, shift_labels, reduction, ignore_index)


class TVDLoss(torch.nn.Module):
    """the total variation distance, reduced as reduction says"""

    def __init__(self, reduction="batchmean", ignore_index=-100):
        super().__init__()
        _util.choice("reduction", reduction, REDUCTIONS)
        self.reduction, self.ignore_index = reduction, ignore_index

    def forward(self, p, q, shift_labels=None):
        return TVDLossFunction.apply(p, q, shift_labels, self.reduction, self.ignore_index)
