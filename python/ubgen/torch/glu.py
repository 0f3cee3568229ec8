"""The gated activations of an MLP, forward and backward in one place
(specs/swiglu.json, specs/geglu.json):

    a, b [..., I]  ->  c [..., I]
    SwiGLU: c = rnd(silu(a gm)) b, times dm     (Liger's LigerSiLUMulFunction)
    GEGLU:  c = rnd(gelu_tanh(a)) b             (Liger's LigerGELUMulFunction)
    backward: da, db [..., I]

and the MLPs around them: down(act(gate(x), up(x))), Linear layers without
bias.
"""
import torch

from . import _util


def _pair(a, b):
    a = _util.tensor("a", a)
    _util.dtype_code("a", a)
    b = _util.same_dtype("b", _util.tensor("b", b), a.dtype)
    if a.shape != b.shape:
        raise ValueError("a has shape %s and b %s; they must be the same" % (tuple(a.shape), tuple(b.shape)))
    if a.dim() == 0:
        a, b = a.reshape(1), b.reshape(1)
    return a, b


class _GLUFunction(torch.autograd.Function):
    KERNEL = None

    @classmethod
    def _forward(cls, ctx, a, b, extra):
        shape = a.shape
        a, b = _pair(a, b)
        cols = a.shape[-1]
        rows = a.numel() // cols if cols else 0
        c = _util.empty(tuple(a.shape), a.dtype)
        if a.numel():  # nothing to compute, and a last dimension of 0 is not a spec's shape
            _util.launch(cls.KERNEL, "fwd", a.dtype, a=a, b=b, c=c, rows=rows, cols=cols, **extra)
        ctx.save_for_backward(a, b)
        ctx.meta = (shape, rows, cols, extra)
        return c.view(shape)

    @classmethod
    def _backward(cls, ctx, dc):
        a, b = ctx.saved_tensors
        shape, rows, cols, extra = ctx.meta
        dc = _util.same_dtype("dc", _util.tensor("dc", dc), a.dtype).reshape(a.shape)
        da, db = _util.empty(tuple(a.shape), a.dtype), _util.empty(tuple(a.shape), a.dtype)
        if a.numel():
            _util.launch(cls.KERNEL, "bwd", a.dtype, dc=dc, a=a, b=b, da=da, db=db, rows=rows, cols=cols, **extra)
        return da.view(shape), db.view(shape)


class SiLUMulFunction(_GLUFunction):
    """silu(a * gate_multiplier) * b * down_multiplier, with silu rounded to
    the dtype before the product (Liger's LigerSiLUMulFunction)"""
    KERNEL = "swiglu"

    @staticmethod
    def forward(ctx, a, b, gate_multiplier=1.0, down_multiplier=1.0):
        return SiLUMulFunction._forward(ctx, a, b, dict(gate_multiplier=float(gate_multiplier),
                                                        down_multiplier=float(down_multiplier)))

    @staticmethod
    def backward(ctx, dc):
        da, db = SiLUMulFunction._backward(ctx, dc)
        return da, db, None, None


class GELUMulFunction(_GLUFunction):
    """gelu_tanh(a) * b, with gelu rounded to the dtype before the product
    (Liger's LigerGELUMulFunction)"""
    KERNEL = "geglu"

    @staticmethod
    def forward(ctx, a, b):
        return GELUMulFunction._forward(ctx, a, b, {})

    @staticmethod
    def backward(ctx, dc):
        return GELUMulFunction._backward(ctx, dc)


def swiglu(a, b, gate_multiplier=1.0, down_multiplier=1.0):
    return SiLUMulFunction.apply(a, b, gate_multiplier, down_multiplier)


def geglu(a, b):
    return GELUMulFunction.apply(a, b)


class _GatedMLP(torch.nn.Module):
    def __init__(self, hidden_size, intermediate_size, dtype=None):
        super().__init__()
        self.hidden_size, self.intermediate_size = hidden_size, intermediate_size
        self.gate_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=False, dtype=dtype)
        self.up_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=False, dtype=dtype)
        self.down_proj = torch.nn.Linear(intermediate_size, hidden_size, bias=False, dtype=dtype)

    def extra_repr(self):
        return "hidden_size=%d, intermediate_size=%d" % (self.hidden_size, self.intermediate_size)


class SwiGLUMLP(_GatedMLP):
    """down_proj(silu(gate_proj(x)) * up_proj(x)), LLaMA's MLP"""

    def forward(self, x):
        return self.down_proj(SiLUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))


class GEGLUMLP(_GatedMLP):
    """down_proj(gelu_tanh(gate_proj(x)) * up_proj(x)), Gemma's MLP"""

    def forward(self, x):
        return self.down_proj(GELUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))
