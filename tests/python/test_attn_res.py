"""AttnRes (ubgen.torch.attn_res / AttnResFunction / AttnRes, Liger's
LigerAttnResFunction and liger_attn_res) against a float64 torch reference,
over the dtypes and tolerances of Liger-Kernel's test_attn_res.py (at small
shapes, its odd 3 x 5 x 37 x 123 kept), forward and backward: the blocks'
gradient as Liger checks it, and the two weights' gradients too. V is a
tensor of N blocks [N, B, T, D] or a list of N tensors [B, T, D]."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerAttnResFunction, liger_attn_res
from ubgen.liger.ops import LigerAttnResFunction as OpsAttnResFunction
from ubgen.liger.transformers.functional import liger_attn_res as functional_attn_res

import _ref
from _ref import DTYPE_IDS, DTYPES

EPS = 1e-6
# Liger: forward f32 (1e-4, 1e-5), f16 (1e-2, 1e-3), bf16 (1e-1, 1e-2)
FWD_TOL = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-3), torch.bfloat16: (1e-1, 1e-2)}
# Liger: backward f32 (1e-3, 1e-4), f16 (5e-2, 5e-3), bf16 (2e-1, 2e-2)
BWD_TOL = {torch.float32: (1e-3, 1e-4), torch.float16: (5e-2, 5e-3), torch.bfloat16: (2e-1, 2e-2)}
SHAPES = [(4, 2, 16, 256), (8, 2, 8, 128), (3, 5, 37, 123)]


def inputs(N, B, T, D, dtype, query_scale=0.02):
    V = torch.randn(N, B, T, D, dtype=dtype)
    w_query = (torch.randn(D) * query_scale).to(dtype)
    w_norm = (1.0 + 0.1 * torch.randn(D)).to(dtype)
    return V, w_query, w_norm


def reference(V, w_query, w_norm, dout, dtype):
    Vr, wq, wn = _ref.leaf(V), _ref.leaf(w_query), _ref.leaf(w_norm)
    h = _ref.attn_res(Vr, wq, wn, EPS, dtype)
    h.backward(dout.to(torch.float64))
    return h, Vr.grad, wq.grad, wn.grad


@pytest.mark.parametrize("query_scale", [0.02, 0.5], ids=["wq*0.02", "wq*0.5"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("N, B, T, D", SHAPES)
def test_correctness(N, B, T, D, dtype, query_scale):
    """query_scale 0.02 is Liger's (alpha near uniform); 0.5 makes the
    softmax over blocks far from uniform"""
    V, w_query, w_norm = inputs(N, B, T, D, dtype, query_scale)
    dout = torch.randn(B, T, D, dtype=dtype)
    Vt, wq, wn = [t.clone().requires_grad_(True) for t in (V, w_query, w_norm)]
    h = LigerAttnResFunction.apply(Vt, wq, wn, EPS)
    assert h.shape == (B, T, D) and h.dtype == dtype
    h.backward(dout)
    h_ref, dV_ref, dwq_ref, dwn_ref = reference(V, w_query, w_norm, dout, dtype)
    _ref.assert_close(h, h_ref, *FWD_TOL[dtype], what="h")
    _ref.assert_close(Vt.grad, dV_ref, *BWD_TOL[dtype], what="dV")
    # the weights' gradients sum over every token and block: held to the
    # backward tolerance relative to their largest element
    for got, want, name in ((wq.grad, dwq_ref, "dw_query"), (wn.grad, dwn_ref, "dw_norm")):
        assert got.dtype == dtype
        atol, rtol = BWD_TOL[dtype]
        _ref.assert_close(got, want, atol + rtol * want.abs().max().item(), rtol, what=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("N, B, T, D", [(4, 2, 16, 64), (8, 2, 8, 32)])
def test_list_input(N, B, T, D, dtype):
    """a list of N blocks gives the stacked tensor's bits, and each block
    its own slice of the gradient"""
    V, w_query, w_norm = inputs(N, B, T, D, dtype, 0.3)
    dout = torch.randn(B, T, D, dtype=dtype)
    blocks = [V[i].clone().requires_grad_(True) for i in range(N)]
    wq1, wn1 = w_query.clone().requires_grad_(True), w_norm.clone().requires_grad_(True)
    h_list = liger_attn_res(blocks, wq1, wn1, eps=EPS)
    h_list.backward(dout)
    Vt = V.clone().requires_grad_(True)
    wq2, wn2 = w_query.clone().requires_grad_(True), w_norm.clone().requires_grad_(True)
    h_stack = LigerAttnResFunction.apply(Vt, wq2, wn2, EPS)
    h_stack.backward(dout)
    assert torch.equal(h_list, h_stack)
    for i in range(N):
        assert torch.equal(blocks[i].grad, Vt.grad[i])
    assert torch.equal(wq1.grad, wq2.grad) and torch.equal(wn1.grad, wn2.grad)
    _ref.assert_close(h_list, reference(V, w_query, w_norm, dout, dtype)[0], *FWD_TOL[dtype], what="h")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
def test_functional_names_agree(dtype):
    """liger_attn_res, LigerAttnResFunction.apply, ubgen.torch.attn_res and
    AttnResFunction.apply: the same bits"""
    V, w_query, w_norm = inputs(4, 2, 8, 64, dtype, 0.2)
    dout = torch.randn(2, 8, 64, dtype=dtype)
    results = []
    for fn in (lambda *a: liger_attn_res(*a, eps=EPS), lambda *a: LigerAttnResFunction.apply(*a, EPS),
               lambda *a: ut.attn_res(*a, eps=EPS), lambda *a: ut.AttnResFunction.apply(*a, EPS)):
        args = [t.clone().requires_grad_(True) for t in (V, w_query, w_norm)]
        h = fn(*args)
        h.backward(dout)
        results.append([h] + [a.grad for a in args])
    for r in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(r, results[0]))
    assert OpsAttnResFunction is LigerAttnResFunction is ut.AttnResFunction
    assert functional_attn_res is liger_attn_res


def test_one_block_is_identity():
    """N = 1: alpha = 1, so h = V[0] exactly and dV = dout"""
    V = torch.randn(1, 3, 5, 32, requires_grad=True)
    wq, wn = torch.randn(32, requires_grad=True), torch.randn(32, requires_grad=True)
    h = ut.attn_res(V, wq, wn)
    assert torch.equal(h, V[0].detach())
    dout = torch.randn(3, 5, 32)
    h.backward(dout)
    assert torch.allclose(V.grad[0], dout, atol=1e-6, rtol=1e-6)
    assert torch.allclose(wq.grad, torch.zeros(32), atol=1e-6)
    assert torch.allclose(wn.grad, torch.zeros(32), atol=1e-6)


def test_no_tokens():
    """tokens = 0 is valid (docs/semantics.md: it gives dw = 0)"""
    V = torch.randn(3, 0, 16, requires_grad=True)
    wq, wn = torch.randn(16, requires_grad=True), torch.randn(16, requires_grad=True)
    h = ut.attn_res(V, wq, wn)
    assert h.shape == (0, 16)
    h.backward(torch.randn(0, 16))
    assert torch.equal(wq.grad, torch.zeros(16)) and torch.equal(wn.grad, torch.zeros(16))


def test_module_parameters():
    m = ut.AttnRes(48, dtype=torch.bfloat16)
    assert m.w_query.dtype == torch.bfloat16 and m.w_query.shape == (48,)
    assert torch.equal(m.w_norm, torch.ones(48, dtype=torch.bfloat16))
    assert 0 < m.w_query.float().abs().max() < 0.2
