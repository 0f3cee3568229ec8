"""RoPE (ubgen.torch.rope, Liger's LigerRopeFunction, liger_rotary_pos_emb,
liger_rope) against transformers' rotate-half rotation in float64 with
autograd, forward and backward: q and k as the transposed views a model
makes, grouped heads, cos and sin per position and per batch, [T, D]
tables, unsqueeze_dim=2, partial rotary (Phi-3), every dtype; the bits do
not depend on the layout q comes in; bad input is refused by name.

Tolerances: Liger's test_rope.py, f32 1e-5 / 1e-5, bf16 1e-1 / 1e-5 (against
torch in the dtype); here _ref.ROPE_TOL against float64."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerRopeFunction, liger_rope, liger_rotary_pos_emb

import _ref
from _ref import DTYPE_IDS, DTYPES

# (B, T, Hq, Hk, D, cos batch (0: a [T, D] table), rotary columns R)
SHAPES = [(1, 1, 1, 1, 2, 1, 2), (2, 16, 4, 2, 64, 1, 64), (3, 9, 8, 8, 128, 3, 128), (2, 5, 6, 1, 32, 0, 32),
          (2, 7, 4, 2, 96, 2, 32)]


def inputs(B, T, Hq, Hk, D, cb, R, dtype, unsqueeze_dim=1):
    """q, k as a model makes them (a [B, T, H, D] projection viewed as
    [B, H, T, D] for unsqueeze_dim=1), cos and sin of angles"""
    torch.manual_seed(B * 1000 + T * 10 + D)
    q = torch.randn(B, T, Hq, D).to(dtype)
    k = torch.randn(B, T, Hk, D).to(dtype)
    if unsqueeze_dim == 1:
        q, k = q.transpose(1, 2), k.transpose(1, 2)
    angle = torch.randn(max(cb, 1), T, R // 2) * 3
    angle = torch.cat((angle, angle), dim=-1)
    cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
    if cb == 0:
        cos, sin = cos[0], sin[0]
    return q.requires_grad_(), k.requires_grad_(), cos, sin


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_and_backward_against_float64(shape, dtype, unsqueeze_dim):
    q, k, cos, sin = inputs(*shape, dtype, unsqueeze_dim)
    fn = ut.rope if shape[-1] < shape[4] else LigerRopeFunction.apply
    _ref.check_rotated(q, k, fn(q, k, cos, sin, None, unsqueeze_dim),
                       lambda q64, k64: _ref.rope(q64, k64, cos.double(), sin.double(), unsqueeze_dim), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_the_layout_of_q_does_not_change_the_bits(dtype):
    """a transposed view (read in place) and a contiguous [B, H, T, D] copy"""
    q, k, cos, sin = inputs(2, 8, 4, 2, 64, 1, 64, dtype)
    a = liger_rotary_pos_emb(q, k, cos, sin)
    b = liger_rope(q.detach().contiguous(), k.detach().contiguous(), cos, sin)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_cos_in_another_dtype_is_used_in_qs():
    q, k, cos, sin = inputs(1, 4, 2, 2, 16, 1, 16, torch.bfloat16)
    a = ut.rope(q, k, cos.float(), sin.float())
    b = ut.rope(q, k, cos, sin)
    assert torch.equal(a[0], b[0]) and a[0].dtype == torch.bfloat16


def test_bad_input_is_refused_by_name():
    q, k, cos, sin = inputs(2, 4, 2, 2, 8, 1, 8, torch.float32)
    with pytest.raises(ValueError, match="unsqueeze_dim"):
        ut.rope(q, k, cos, sin, unsqueeze_dim=3)
    with pytest.raises(TypeError, match="k has dtype"):
        ut.rope(q, k.double(), cos, sin)
    with pytest.raises(ValueError, match="q has shape"):
        ut.rope(q[0], k, cos, sin)
    with pytest.raises(ValueError, match="cos has shape"):
        ut.rope(q, k, cos[:, :3], sin[:, :3])
    with pytest.raises(ValueError, match="cos has shape"):
        ut.rope(q, k, torch.cat((cos, cos, cos)), torch.cat((sin, sin, sin)))
    with pytest.raises(ValueError, match="even number"):
        ut.rope(q, k, cos[..., :3], sin[..., :3])
    with pytest.raises(TypeError, match="q has dtype"):
        ut.rope(q.long(), k.long(), cos, sin)
