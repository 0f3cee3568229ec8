"""Llama 4's RoPE (ubgen.torch.llama4_rope, Liger's LigerLlama4RopeFunction,
liger_llama4_text_rotary_pos_emb, liger_llama4_vision_rotary_pos_emb)
against transformers' complex rotation in complex128 with autograd,
forward and backward: Liger's shapes (grouped heads, odd sizes),
frequencies per position and per token, the vision module's [T, 1, D/2]
and real (imaginary part dropped) frequencies, every dtype; bad input is
refused by name.

Tolerances: Liger's test_llama4_rope.py, f32 1e-5 / 1e-5, bf16 1e-1 / 1e-5
(against torch in f32, rounded); here _ref.ROPE_TOL against complex128."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import (LigerLlama4RopeFunction, liger_llama4_text_rotary_pos_emb,
                         liger_llama4_vision_rotary_pos_emb)

import _ref
from _ref import DTYPE_IDS, DTYPES

# (B, T, Hq, Hk, D): Liger's test_correctness and test_functional_correctness shapes; its two
# largest (33 and 27 million elements in complex128 autograd: a quarter of make test's Python
# time) under -m large
LARGE = pytest.mark.large
SHAPES = [(1, 128, 32, 32, 64), (2, 128, 32, 32, 64), (1, 128, 32, 8, 64), (2, 128, 32, 8, 64),
          pytest.param((3, 423, 73, 213, 92), marks=LARGE), pytest.param((3, 423, 73, 155, 92), marks=LARGE),
          (1, 2, 2, 2, 8), (1, 2, 1, 2, 8), (9, 7, 41, 41, 40)]


def freqs_of(positions, D, theta=10000.0):
    """Llama4TextRotaryEmbedding's freqs_cis: positions [..., T] -> [..., T, D/2] complex64"""
    inv_freq = 1.0 / theta ** (torch.arange(0, D, 2, dtype=torch.float) / D)
    angle = positions[..., None].float() * inv_freq
    return torch.polar(torch.ones_like(angle), angle)


def inputs(B, T, Hq, Hk, D, dtype, per_token=False):
    """q, k as the attention makes them ([B, T, H, D]), freqs_cis [B, T, D/2]
    (each batch at its own offset where per_token)"""
    torch.manual_seed(B * 1000 + T * 10 + D)
    q = torch.randn(B, T, Hq, D).to(dtype).requires_grad_()
    k = torch.randn(B, T, Hk, D).to(dtype).requires_grad_()
    pos = torch.arange(T).expand(B, T) + (torch.arange(B)[:, None] * 7 if per_token else 0)
    return q, k, freqs_of(pos, D)


def reference(q, k, freqs):
    """transformers' apply_rotary_emb in complex128: q, k float64 leaves,
    freqs broadcast over the heads as [B or 1, T, 1, D/2]"""
    f = freqs.to(torch.complex128)
    out = []
    for x in (q, k):
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        out.append(torch.view_as_real(xc * f).flatten(3))
    return tuple(out)


def check(fn, q, k, freqs, ref_freqs, dtype):
    _ref.check_rotated(q, k, fn(q, k, freqs), lambda q64, k64: reference(q64, k64, ref_freqs), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_and_backward_against_complex128(shape, dtype):
    q, k, freqs = inputs(*shape, dtype)
    check(liger_llama4_text_rotary_pos_emb, q, k, freqs, freqs[:, :, None, :], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_frequencies_per_token_and_per_position(dtype):
    """a row per token where the batches' positions differ; one [T, D/2] table"""
    q, k, freqs = inputs(3, 9, 4, 2, 32, dtype, per_token=True)
    check(LigerLlama4RopeFunction.apply, q, k, freqs, freqs[:, :, None, :], dtype)
    q, k, freqs = inputs(3, 9, 4, 2, 32, dtype)
    check(ut.llama4_rope, q, k, freqs[0], freqs[0][None, :, None, :], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_vision_frequencies(dtype):
    """Llama4VisionRotaryEmbedding's freqs_ci [T, 1, D/2]; a real one (the
    complex buffer after model.to(dtype)) scales both parts of each pair,
    as vision_apply_rotary_emb's product with it does"""
    q, k, freqs = inputs(2, 17, 4, 4, 16, dtype)
    freqs_ci = freqs[0][:, None, :]
    check(liger_llama4_vision_rotary_pos_emb, q, k, freqs_ci, freqs_ci[None], dtype)
    q, k, _ = inputs(2, 17, 4, 4, 16, dtype)
    real = freqs_ci.real.to(dtype)
    check(liger_llama4_vision_rotary_pos_emb, q, k, real, real[None].to(torch.complex128), dtype)


def test_view_as_real_frequencies_give_the_same_bits():
    q, k, freqs = inputs(2, 5, 2, 2, 8, torch.bfloat16)
    a = ut.llama4_rope(q, k, freqs)
    b = ut.llama4_rope(q, k, torch.view_as_real(freqs))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_bad_input_is_refused_by_name():
    q, k, freqs = inputs(2, 4, 2, 2, 8, torch.float32)
    with pytest.raises(TypeError, match="k has dtype"):
        ut.llama4_rope(q, k.double(), freqs)
    with pytest.raises(TypeError, match="q has dtype"):
        ut.llama4_rope(q.long(), k.long(), freqs)
    with pytest.raises(ValueError, match="q has shape"):
        ut.llama4_rope(q[0], k, freqs)
    with pytest.raises(ValueError, match="q has shape"):
        ut.llama4_rope(q[..., :7], k[..., :7], freqs)
    with pytest.raises(ValueError, match="freqs_cis has shape"):
        ut.llama4_rope(q, k, freqs[:, :3])
    with pytest.raises(ValueError, match="freqs_cis has shape"):
        ut.llama4_rope(q, k, freqs.real)
    with pytest.raises(TypeError, match="freqs_cis must be a torch.Tensor"):
        ut.llama4_rope(q, k, None)
