"""Fused neighborhood attention (ubgen.torch's NeighborhoodAttentionFunction
/ neighborhood_attention / NeighborhoodAttention / NeighborhoodAttentionLayer
and Liger's LigerFusedNeighborhoodAttentionFunction,
liger_fused_neighborhood_attention, LigerFusedNeighborhoodAttention,
LigerFusedNeighborhoodAttentionLayer, LigerFusedNeighborhoodAttentionConfig)
against a float64 masked softmax attention through autograd, over the shapes,
kernel sizes and dilations of Liger-Kernel's
test_fused_neighborhood_attention.py: out and dq, dk, dv; the Module's and
Layer's output and every gradient. Liger's tolerances are 5e-3 (f32) and
5e-2 (bf16); here f32 1e-5 on the op (its sums are f32, within 1e-6 of
float64), f16 1e-2, bf16 Liger's 5e-2."""
import math

import pytest
import torch

import ubgen
import ubgen.torch as ut
from ubgen.liger import LigerFusedNeighborhoodAttentionFunction, liger_fused_neighborhood_attention
from ubgen.liger.transformers.fused_neighborhood_attention import (LigerFusedNeighborhoodAttention,
                                                                    LigerFusedNeighborhoodAttentionConfig,
                                                                    LigerFusedNeighborhoodAttentionLayer)

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2)}
# Liger's functional shapes: (batch, heads, seq_len, head_dim, kernel_size)
SHAPES = [(2, 4, 32, 32, 7), (1, 8, 24, 16, 5), (2, 6, 16, 64, 9), (1, 2, 48, 128, 3)]


def attention(q, k, v, kernel_size=7, dilation=1, scale=None):
    """float64 q, k, v [B, H, N, D]: softmax over the keys of each query's
    window (Liger's mask: |j - i| <= kernel_size // 2 * dilation, j - i a
    multiple of dilation), times v"""
    N, D = q.shape[-2:]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    i, j = torch.arange(N)[:, None], torch.arange(N)[None, :]
    window = ((j - i).abs() <= kernel_size // 2 * dilation) & ((j - i) % dilation == 0)
    scores = (q @ k.transpose(-2, -1) * scale).masked_fill(~window, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def check_op(fn, shape, dilation, dtype, scale=None, tol=None):
    B, H, N, D, K = shape
    q, k, v = (torch.randn(B, H, N, D).to(dtype).requires_grad_() for _ in range(3))
    dout = torch.randn(B, H, N, D).to(dtype)
    out = fn(q, k, v, K, dilation, scale)
    out.backward(dout)
    qr, kr, vr = _ref.leaf(q), _ref.leaf(k), _ref.leaf(v)
    want = attention(qr, kr, vr, K, dilation, scale)
    want.backward(dout.to(torch.float64))
    atol, rtol = tol or TOL[dtype]
    assert out.dtype == dtype and q.grad.dtype == dtype
    _ref.assert_close(out, want, atol, rtol, "out")
    _ref.assert_close(q.grad, qr.grad, atol, rtol, "dq")
    _ref.assert_close(k.grad, kr.grad, atol, rtol, "dk")
    _ref.assert_close(v.grad, vr.grad, atol, rtol, "dv")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dilation", [1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerFusedNeighborhoodAttentionFunction.apply, liger_fused_neighborhood_attention,
                                ut.neighborhood_attention], ids=["Function", "liger", "ut"])
def test_against_torch(fn, shape, dilation, dtype):
    check_op(fn, shape, dilation, dtype)


@pytest.mark.parametrize("shape", [(2, 4, 32, 32, 7), (1, 8, 16, 64, 7)], ids=lambda s: "x".join(map(str, s)))
def test_custom_scale(shape):
    check_op(liger_fused_neighborhood_attention, shape, 1, torch.float32, scale=0.5)


@pytest.mark.parametrize("kernel_size", [3, 5, 7, 9])
@pytest.mark.parametrize("dilation", [1, 2, 3])
def test_kernel_sizes_and_dilations(kernel_size, dilation):
    check_op(liger_fused_neighborhood_attention, (1, 2, 24, 16, kernel_size), dilation, torch.float32)


def test_window_wider_than_the_sequence_and_even_kernel_size():
    """every key in the window (softmax over the whole row); an even
    kernel_size reaches kernel_size // 2 on each side, as Liger's Function"""
    check_op(liger_fused_neighborhood_attention, (1, 2, 5, 8, 33), 1, torch.float32)
    check_op(liger_fused_neighborhood_attention, (1, 2, 20, 8, 6), 2, torch.float32)


def module_reference(m, x):
    """module m (an attention Module or Layer) in float64 with its weights on
    x: the output and the gradients of out.sum() for x and every parameter"""
    r = {name: _ref.leaf(p) for name, p in m.named_parameters()}
    xr = _ref.leaf(x)
    layer = hasattr(m, "attention")
    att, pre = (m.attention, "attention.") if layer else (m, "")
    h = xr
    if layer:
        h = torch.nn.functional.layer_norm(xr, (xr.shape[-1],), r["layer_norm.weight"], r["layer_norm.bias"],
                                           m.layer_norm.eps)

    def proj(name, t):
        b = r.get(pre + name + ".bias")
        return torch.nn.functional.linear(t, r[pre + name + ".weight"], b)

    B, N, C = h.shape

    def heads(t):
        return t.view(B, N, att.num_heads, att.head_dim).transpose(1, 2)

    o = attention(heads(proj("q_proj", h)), heads(proj("k_proj", h)), heads(proj("v_proj", h)), att.kernel_size,
                  att.dilation, att.scale)
    out = proj("out_proj", o.transpose(1, 2).reshape(B, N, C))
    if layer:
        out = xr + out
    out.sum().backward()
    return out, xr.grad, {name: t.grad for name, t in r.items()}


# Liger's module shapes: (batch, seq_len, hidden_size, num_heads, kernel_size)
MODULE_SHAPES = [(2, 32, 128, 4, 7), (1, 32, 128, 8, 5), (2, 24, 96, 3, 9)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", MODULE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("cls", [LigerFusedNeighborhoodAttention, LigerFusedNeighborhoodAttentionLayer,
                                 ut.NeighborhoodAttention], ids=["Module", "Layer", "ut"])
def test_module_against_torch(cls, shape, bias, dtype):
    """the Module and the Layer as Liger's test runs them (out.sum() backward)
    against float64; the projections are torch's in dtype, so bf16 holds to
    Liger's 5e-2 scaled by the largest value (sums over 96 to 128 products)"""
    B, N, C, H, K = shape
    m = cls(hidden_size=C, num_heads=H, kernel_size=K, bias=bias).to(dtype)
    x = torch.randn(B, N, C).to(dtype).requires_grad_()
    out = m(x)
    out.sum().backward()
    want, dx, grads = module_reference(m, x)
    atol, rtol = (5e-4, 5e-4) if dtype == torch.float32 else (5e-2, 5e-2)

    def close(got, exp, what):
        _ref.assert_close(got, exp, atol * max(1.0, exp.abs().max().item()), rtol, what)

    close(out, want, "out")
    close(x.grad, dx, "dx")
    for name, p in m.named_parameters():
        close(p.grad, grads[name], name)


def test_module_arguments_as_liger():
    with pytest.raises(ValueError, match="hidden_size .* must be divisible by num_heads"):
        LigerFusedNeighborhoodAttention(hidden_size=100, num_heads=7)
    with pytest.raises(ValueError, match="kernel_size .* must be odd"):
        LigerFusedNeighborhoodAttention(hidden_size=128, num_heads=8, kernel_size=6)
    with pytest.raises(ValueError, match="kernel_size .* must be positive"):
        LigerFusedNeighborhoodAttention(hidden_size=128, num_heads=8, kernel_size=0)
    with pytest.raises(ValueError, match="dilation .* must be positive"):
        LigerFusedNeighborhoodAttention(hidden_size=128, num_heads=8, dilation=0)
    m = LigerFusedNeighborhoodAttention(hidden_size=64, num_heads=4)
    with pytest.raises(NotImplementedError, match="Attention mask is not yet supported in "
                                                  "LigerFusedNeighborhoodAttention"):
        m(torch.randn(1, 16, 64), torch.ones(1, 16))
    assert m.scale == 1 / 4 and m.dropout is None and "kernel_size=7" in repr(m)
    layer = LigerFusedNeighborhoodAttentionLayer(hidden_size=64, num_heads=4, dropout=0.1)
    assert type(layer.attention) is LigerFusedNeighborhoodAttention and layer.dropout.p == 0.1
    cfg = LigerFusedNeighborhoodAttentionConfig()
    assert cfg.to_dict() == {"hidden_size": 768, "num_heads": 12, "kernel_size": 7, "dilation": 1, "bias": True,
                             "dropout": 0.0, "layer_norm_eps": 1e-5, "scale": None}


def test_same_bits_every_call_and_thread_count(restore_context):
    q, k, v = (torch.randn(2, 4, 40, 32).requires_grad_() for _ in range(3))
    runs = []
    for threads in (1, 2, 2):
        ubgen.configure(threads=threads)
        out = liger_fused_neighborhood_attention(q, k, v, 5, 2)
        runs.append((out,) + torch.autograd.grad(out, (q, k, v), torch.ones_like(out)))
    for run in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(runs[0], run))


def test_bad_inputs_are_refused():
    q = torch.randn(1, 2, 8, 16)
    with pytest.raises(ValueError, match="kernel_size"):
        ut.neighborhood_attention(q, q, q, kernel_size=0)
    with pytest.raises(ValueError, match="dilation"):
        ut.neighborhood_attention(q, q, q, dilation=0)
    with pytest.raises(ValueError, match="one shape"):
        ut.neighborhood_attention(q, q[:, :, :4], q)
    with pytest.raises(ValueError, match="4 dimensions"):
        ut.neighborhood_attention(q[0], q[0], q[0])
    with pytest.raises(TypeError, match="float64"):
        ut.neighborhood_attention(q.double(), q, q)
    wide = torch.randn(1, 1, 4, 1024)
    with pytest.raises(ValueError, match="head_dim"):
        ut.neighborhood_attention(wide, wide, wide)
