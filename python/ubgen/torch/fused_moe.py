"""A mixture of experts' expert layers with SwiGLU (Liger's
LigerFusedMoEFunction): routing, the grouped GEMMs with SwiGLU between and
the top-k weighted sum in one call (specs/fused_moe.json):

    x [T, H], gate_up_proj [E, 2I, H] (gate rows, then up rows), down_proj [E, H, I],
    top_k_index [T, K] (integers in [0, E)), top_k_weights [T, K]
    -> out [T, H] = sum over k of top_k_weights[t, k] expert_e(x[t]), e = top_k_index[t, k]
       expert_e(v) = (silu(v G_e^T) * (v U_e^T)) D_e^T

The forward keeps the pre-activations v W_gu[e]^T of every slot (f32, [T,
K, 2I]) for the backward, which needs no GEMM of the forward again.
"""
import torch

from . import _util


def _routing(name, t, tokens):
    """top_k_index as contiguous int32 [tokens, K]"""
    t = _util.indices(name, t) if t.dtype != torch.int32 else _util.tensor(name, t)
    if t.dim() != 2 or t.shape[0] != tokens:
        raise ValueError("%s has shape %s; (T, K) with T = %d is needed" % (name, tuple(t.shape), tokens))
    if t.dtype != torch.int32 and t.numel() and (t.min() < -2 ** 31 or t.max() >= 2 ** 31):
        bad = t.max() if t.max() >= 2 ** 31 else t.min()
        raise ValueError("%s holds %d; an expert index is an int32" % (name, bad))
    return t if t.dtype == torch.int32 else t.to(torch.int32)


class FusedMoEFunction(torch.autograd.Function):
    """Liger's LigerFusedMoEFunction: apply(x, gate_up_proj, down_proj,
    top_k_index, top_k_weights) -> out; its backward gives dx,
    dgate_up_proj, ddown_proj, None and dtop_k_weights"""

    @staticmethod
    def forward(ctx, x, gate_up_proj, down_proj, top_k_index, top_k_weights):
        x = _util.tensor("x", x, ndim=2)
        _util.dtype_code("x", x)
        gup = _util.same_dtype("gate_up_proj", _util.tensor("gate_up_proj", gate_up_proj, ndim=3), x.dtype)
        down = _util.same_dtype("down_proj", _util.tensor("down_proj", down_proj, ndim=3), x.dtype)
        T, H = x.shape
        E, I2, Hg = gup.shape
        if Hg != H or I2 % 2:
            raise ValueError("gate_up_proj has shape %s; (E, 2I, H) with H = %d is needed" % (tuple(gup.shape), H))
        I = I2 // 2
        if tuple(down.shape) != (E, H, I):
            raise ValueError("down_proj has shape %s; (E, H, I) = (%d, %d, %d) is needed"
                             % (tuple(down.shape), E, H, I))
        idx = _routing("top_k_index", top_k_index, T)
        K = idx.shape[1]
        w = _util.same_dtype("top_k_weights", _util.tensor("top_k_weights", top_k_weights, ndim=2), x.dtype)
        if tuple(w.shape) != (T, K):
            raise ValueError("top_k_weights has shape %s; (T, K) = (%d, %d) is needed" % (tuple(w.shape), T, K))
        out = _util.empty((T, H), x.dtype)
        pre_act = _util.empty((T, K * I2), torch.float32) if any(ctx.needs_input_grad) else None
        _util.launch("fused_moe", "forward", x.dtype, x=x, gate_up_proj=gup, down_proj=down, top_k_index=idx,
                     top_k_weights=w, out=out, pre_act=pre_act, tokens=T, hidden=H, inter=I, experts=E, top_k=K)
        ctx.save_for_backward(x, gup, down, idx, w, pre_act)
        ctx.dtypes = (gate_up_proj.dtype, down_proj.dtype, top_k_weights.dtype)
        return out

    @staticmethod
    def backward(ctx, dout):
        x, gup, down, idx, w, pre_act = ctx.saved_tensors
        T, H = x.shape
        E, I2, _ = gup.shape
        K = idx.shape[1]
        dout = _util.same_dtype("dout", _util.tensor("dout", dout), x.dtype)
        need = ctx.needs_input_grad
        dx = _util.empty_like(x) if need[0] else None
        dgup = _util.empty_like(gup) if need[1] else None
        ddown = _util.empty_like(down) if need[2] else None
        dw = _util.empty_like(w) if need[4] else None
        _util.launch("fused_moe", "backward", x.dtype, x=x, gate_up_proj=gup, down_proj=down, top_k_index=idx,
                     top_k_weights=w, pre_act=pre_act, dout=dout, dx=dx, dgate_up_proj=dgup, ddown_proj=ddown,
                     dtop_k_weights=dw, tokens=T, hidden=H, inter=I2 // 2, experts=E, top_k=K)
        dgup, ddown, dw = [None if g is None else g.to(dt) for g, dt in zip((dgup, ddown, dw), ctx.dtypes)]
        return dx, dgup, ddown, None, dw


def fused_moe(x, gate_up_proj, down_proj, top_k_index, top_k_weights):
    """out [T, H] = the sum over the K experts of each token of its weight
    times the expert's SwiGLU MLP of the token"""
    return FusedMoEFunction.apply(x, gate_up_proj, down_proj, top_k_index, top_k_weights)
