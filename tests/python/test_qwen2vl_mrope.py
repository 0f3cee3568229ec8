"""Qwen2-VL's M-RoPE (ubgen.torch.mrope, Liger's LigerQwen2VLMRopeFunction,
liger_multimodal_rotary_pos_emb, liger_qwen2vl_mrope) against transformers'
apply_multimodal_rotary_pos_emb in float64 with autograd, forward and
backward: Liger's shapes and mrope sections, three distinct position
streams, q and k as the transposed views a model makes, every dtype; the
[B, T, D] cos of transformers 5's rotary embedding; bad input is refused
by name.

Tolerances: Liger's test_qwen2vl_mrope.py, f32 1e-5 / 1e-5, bf16 1e-1 /
1e-5 (against torch in the dtype); here _ref.ROPE_TOL against float64."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerQwen2VLMRopeFunction, liger_multimodal_rotary_pos_emb, liger_qwen2vl_mrope

import _ref
from _ref import DTYPE_IDS, DTYPES

# (B, T, Hq, Hk, D, mrope_section): Liger's test_correctness (all head and
# section pairs at both batch sizes and sequence lengths) and test_functional_correctness
SHAPES = [(b, t, hq, hk, d, sec) for b in (1, 2) for t in (128, 131) for hq, hk in ((64, 8), (28, 4), (12, 2))
          for d, sec in ((128, [16, 24, 24]), (96, [16, 16, 16]), (64, [8, 12, 12]))]
SHAPES += [(1, 2, 2, 2, 8, [2, 1, 1]), (1, 2, 1, 2, 8, [2, 1, 1])]


def inputs(B, T, Hq, Hk, D, dtype):
    """q, k [B, H, T, D] (transposed views of [B, T, H, D]); cos, sin [3, B,
    T, D] of three different position streams, as Liger's test makes them"""
    torch.manual_seed(B * 1000 + T * 10 + D + Hq)
    q = torch.randn(B, T, Hq, D).transpose(1, 2).to(dtype).requires_grad_()
    k = torch.randn(B, T, Hk, D).transpose(1, 2).to(dtype).requires_grad_()
    pos = torch.arange(3 * B * T).view(3, B, T)
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, D, 2, dtype=torch.float) / D)
    angle = pos[..., None].float() * inv_freq
    angle = torch.cat((angle, angle), dim=-1)
    return q, k, angle.cos().to(dtype), angle.sin().to(dtype)


def picked(t, sections):
    """[3, B, T, D] -> [B, T, D]: column j from stream s % 3, s the section
    holding j % (D/2)"""
    stream = torch.repeat_interleave(torch.arange(len(sections)) % 3, torch.tensor(sections)).repeat(2)
    return torch.stack([t[stream[j], ..., j] for j in range(t.shape[-1])], dim=-1)


def check(fn, shape, dtype):
    B, T, Hq, Hk, D, sections = shape
    q, k, cos, sin = inputs(B, T, Hq, Hk, D, dtype)
    cos64, sin64 = picked(cos.double(), sections), picked(sin.double(), sections)
    _ref.check_rotated(q, k, fn(q, k, cos, sin, sections), lambda q64, k64: _ref.rope(q64, k64, cos64, sin64), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + "-" + "_".join(map(str, s[5])))
def test_forward_and_backward_against_float64(shape, dtype):
    check(liger_multimodal_rotary_pos_emb, shape, dtype)


@pytest.mark.parametrize("fn", [LigerQwen2VLMRopeFunction.apply, liger_qwen2vl_mrope, ut.mrope],
                         ids=["Function", "functional", "ubgen.torch"])
def test_every_entry_point(fn):
    check(fn, (2, 7, 4, 2, 16, [4, 2, 2]), torch.float32)


def test_a_picked_cos_is_taken_as_it_is():
    """transformers 5's Qwen2VLRotaryEmbedding hands over cos [B, T, D] already picked"""
    sections = [4, 2, 2]
    q, k, cos, sin = inputs(2, 7, 4, 2, 16, torch.float32)
    a = liger_multimodal_rotary_pos_emb(q, k, cos, sin, sections)
    b = liger_multimodal_rotary_pos_emb(q, k, picked(cos, sections), picked(sin, sections), sections)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_bad_input_is_refused_by_name():
    q, k, cos, sin = inputs(2, 4, 2, 2, 16, torch.float32)
    with pytest.raises(ValueError, match="mrope_section"):
        ut.mrope(q, k, cos, sin, [4, 2, 1])
    with pytest.raises(ValueError, match="cos has shape"):
        ut.mrope(q, k, cos[:2], sin[:2], [4, 2, 2])
    with pytest.raises(ValueError, match="M-RoPE rotates whole heads"):
        ut.mrope(q, k, cos[..., :8], sin[..., :8], [2, 1, 1])
    with pytest.raises(TypeError, match="k has dtype"):
        ut.mrope(q, k.double(), cos, sin, [4, 2, 2])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("layout", ["token_major", "head_major", "unsqueeze_dim_2"])
def test_the_streams_give_the_bits_of_the_picked_table(layout, dtype):
    """the kernel reads each pair's cos and sin from its stream: the bits of
    rope on the [B, T, D] table transformers picks, forward and backward,
    whether q, k and the incoming gradients lie token-major or head-major"""
    sections = [16, 24, 24]
    q, k, cos, sin = inputs(2, 9, 4, 2, 128, dtype)
    if layout == "head_major":  # a model's [B, H, T, D], contiguous
        q, k = (t.detach().contiguous().requires_grad_() for t in (q, k))
    dim = 2 if layout == "unsqueeze_dim_2" else 1
    if dim == 2:
        q, k = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k))
    grads = torch.randn(q.shape).to(dtype), torch.randn(k.shape).to(dtype)
    got, want = [], []
    for fn, c, s in ((ut.mrope, cos, sin), (None, picked(cos, sections), picked(sin, sections))):
        q1, k1 = (t.detach().clone(memory_format=torch.preserve_format).requires_grad_() for t in (q, k))
        out = fn(q1, k1, c, s, sections, dim) if fn else ut.rope(q1, k1, c, s, None, dim)
        torch.autograd.backward(out, grads)
        (got if fn else want).append(out + (q1.grad, k1.grad))
    for a, b in zip(got[0], want[0]):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_the_bits_are_the_f32_formula_rounded_once(dtype):
    """each output is its f32 products and sum (no fused multiply-add),
    rounded once to the dtype: what torch's f32 ops give, bit for bit"""
    sections = [16, 24, 24]
    q, k, cos, sin = inputs(2, 9, 4, 2, 128, dtype)
    c, s = (picked(t, sections).float().unsqueeze(1) for t in (cos, sin))
    gq, gk = torch.randn(q.shape).to(dtype), torch.randn(k.shape).to(dtype)
    out = ut.mrope(q, k, cos, sin, sections)
    torch.autograd.backward(out, (gq, gk))
    for x, g, y, dx in ((q, gq, out[0], q.grad), (k, gk, out[1], k.grad)):
        x1, x2 = x.detach().float().chunk(2, -1)
        g1, g2 = g.float().chunk(2, -1)
        ca, cb = c.chunk(2, -1)
        sa, sb = s.chunk(2, -1)
        assert torch.equal(y, torch.cat((x1 * ca - x2 * sa, x2 * cb + x1 * sb), -1).to(dtype))
        assert torch.equal(dx, torch.cat((g1 * ca + g2 * sb, g2 * cb - g1 * sa), -1).to(dtype))
