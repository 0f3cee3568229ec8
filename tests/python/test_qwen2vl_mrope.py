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
