"""RMSNorm (ubgen.torch.RMSNorm / rms_norm / RMSNormFunction and Liger's
names) against a float64 torch reference, forward and backward, over the
option grid of Liger-Kernel's test_rms_norm.py plus float16, with Liger's
tolerances (float16 is not in Liger's grid: its bound sits between f32's
and bf16's, scaled to f16's 11-bit significand)."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerRMSNorm, LigerRMSNormFunction, liger_rms_norm
from ubgen.liger.ops import LigerRMSNormFunction as OpsRMSNormFunction
from ubgen.liger.transformers.functional import liger_rms_norm as functional_rms_norm
from ubgen.liger.transformers.rms_norm import LigerRMSNorm as TransformersRMSNorm

import _ref
from _ref import DTYPE_IDS, DTYPES

# Liger: f32 (1e-4, 1e-6), bf16 (2e-1, 2e-2)
TOL = {torch.float32: (1e-4, 1e-6), torch.float16: (2e-2, 2e-3), torch.bfloat16: (2e-1, 2e-2)}
MODES = [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)]
MODE_IDS = ["llama-offset0", "gemma-offset1", "none-offset0"]
EPS = 1e-6


def reference(x, w, dy, offset, casting_mode, dtype):
    """y, dx, dw of the float64 reference"""
    xr = _ref.leaf(x)
    wr = None if w is None else _ref.leaf(w)
    y = _ref.rms_norm(xr, wr, EPS, offset, casting_mode, dtype)
    y.backward(dy.to(torch.float64))
    return y, xr.grad, (None if wr is None else wr.grad)


def check(y, dx, dw, ref, dtype, what):
    atol, rtol = TOL[dtype]
    y_ref, dx_ref, dw_ref = ref
    assert y.dtype == dtype and dx.dtype == dtype
    _ref.assert_close(y, y_ref, atol, rtol, what + " y")
    _ref.assert_close(dx, dx_ref, atol, rtol, what + " dx")
    if dw_ref is None:
        assert dw is None
    else:
        assert dw.dtype == dtype
        _ref.assert_close(dw, dw_ref, atol, rtol, what + " dw")


@pytest.mark.parametrize("elementwise_affine", [True, False], ids=["affine", "no-affine"])
@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "out-of-place"])
@pytest.mark.parametrize("casting_mode, offset", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(2, 3, 123), (4, 64, 512)], ids=["2x3x123", "4x64x512"])
@pytest.mark.parametrize("module", [LigerRMSNorm, ut.RMSNorm], ids=["LigerRMSNorm", "ut.RMSNorm"])
def test_module_correctness(module, shape, dtype, casting_mode, offset, in_place, elementwise_affine):
    hd = shape[-1]
    x = torch.randn(*shape, dtype=dtype)
    dy = torch.randn(*shape, dtype=dtype)
    w = torch.randn(hd, dtype=dtype) if elementwise_affine else None

    norm = module(hidden_size=hd, eps=EPS, offset=offset, casting_mode=casting_mode, in_place=in_place,
                  elementwise_affine=elementwise_affine).to(dtype)
    if elementwise_affine:
        with torch.no_grad():
            norm.weight.copy_(w)
    else:
        assert norm.weight is None
    h = x.clone().requires_grad_(True)
    y = norm(h)
    assert y.shape == x.shape
    g = dy.clone()  # in_place=True lets the backward overwrite the gradient buffer
    y.backward(g)
    if not in_place:
        assert torch.equal(g, dy), "in_place=False modified the gradient it was given"
    check(y, h.grad, None if w is None else norm.weight.grad, reference(x, w, dy, offset, casting_mode, dtype),
          dtype, "%s %s" % (module.__name__, casting_mode))


@pytest.mark.parametrize("elementwise_affine", [True, False], ids=["affine", "no-affine"])
@pytest.mark.parametrize("offset", [0.0, 1.0], ids=["offset0", "offset1"])
@pytest.mark.parametrize("casting_mode", ["llama", "gemma", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(2, 2, 8), (9, 7, 41)], ids=["2x2x8", "9x7x41"])
def test_functional_correctness(shape, dtype, casting_mode, offset, elementwise_affine):
    """liger_rms_norm, LigerRMSNormFunction.apply, ubgen.torch.rms_norm and
    RMSNormFunction.apply: the same bits, and the reference's values; every
    casting mode with offset 0 and 1 (Liger's grid pairs llama and none
    with 0, gemma with 1)"""
    x = torch.randn(*shape, dtype=dtype)
    w = torch.randn(shape[-1], dtype=dtype) if elementwise_affine else None
    dy = torch.randn(*shape, dtype=dtype)
    calls = [
        lambda h, w_: liger_rms_norm(X=h, W=w_, eps=EPS, offset=offset, casting_mode=casting_mode),
        lambda h, w_: LigerRMSNormFunction.apply(h, w_, EPS, offset, casting_mode),
        lambda h, w_: ut.rms_norm(h, w_, eps=EPS, offset=offset, casting_mode=casting_mode),
        lambda h, w_: ut.RMSNormFunction.apply(h, w_, EPS, offset, casting_mode, False),
    ]
    results = []
    for call in calls:
        h = x.clone().requires_grad_(True)
        w_ = None if w is None else w.clone().requires_grad_(True)
        y = call(h, w_)
        y.backward(dy.clone())
        results.append((y, h.grad, None if w_ is None else w_.grad))
    y0, dx0, dw0 = results[0]
    for y, dx, dw in results[1:]:
        assert torch.equal(y, y0) and torch.equal(dx, dx0)
        assert (dw is None and dw0 is None) or torch.equal(dw, dw0)
    check(y0, dx0, dw0, reference(x, w, dy, offset, casting_mode, dtype), dtype, "functional " + casting_mode)


def test_liger_import_paths_are_the_same_objects():
    assert OpsRMSNormFunction is LigerRMSNormFunction is ut.RMSNormFunction
    assert functional_rms_norm is liger_rms_norm
    assert TransformersRMSNorm is LigerRMSNorm


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_in_place_backward_writes_dx_over_a_private_gradient(dtype):
    """in_place=True (Liger's default): where autograd gives the gradient to
    this backward alone, dX is written over it (no new buffer) and is right;
    where torch cannot tell (torch 2.1 has no use counts), a buffer is new"""
    from ubgen.torch import _util
    x, w, dy = (torch.randn(*s, dtype=dtype) for s in ((3, 5, 64), (64,), (3, 5, 64)))
    h = x.clone().requires_grad_(True)
    y = ut.rms_norm(h, w, eps=EPS, in_place=True)
    given = []
    y.register_hook(lambda g: given.append(g.data_ptr()))
    (y * dy).sum().backward()  # y's gradient: mul's fresh dy * 1
    assert (h.grad.data_ptr() == given[0]) == (_util._PRIVATE is not None)
    atol, rtol = TOL[dtype]
    _ref.assert_close(h.grad, reference(x, w, dy, 0.0, "llama", dtype)[1], atol, rtol, "dx")


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "out-of-place"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_shared_gradient_is_not_overwritten(dtype, in_place):
    """y = norm(x1) + norm(x2) hands one gradient tensor to both backwards,
    and y.backward(g) hands them the caller's g: both inputs get their own
    right gradient and g is unchanged (Liger's in-place backward gets both
    wrong)"""
    x1, x2, dy = (torch.randn(3, 5, 64, dtype=dtype) for _ in range(3))
    w = torch.randn(64, dtype=dtype)
    h1, h2 = x1.clone().requires_grad_(True), x2.clone().requires_grad_(True)
    g = dy.clone()
    y = ut.rms_norm(h1, w, eps=EPS, in_place=in_place) + ut.rms_norm(h2, w, eps=EPS, in_place=in_place)
    y.backward(g)
    assert torch.equal(g, dy)
    atol, rtol = TOL[dtype]
    _ref.assert_close(h1.grad, reference(x1, w, dy, 0.0, "llama", dtype)[1], atol, rtol, "dx1")
    _ref.assert_close(h2.grad, reference(x2, w, dy, 0.0, "llama", dtype)[1], atol, rtol, "dx2")
    single = x1.clone().requires_grad_(True)
    ut.rms_norm(single, w, eps=EPS, in_place=in_place).backward(g)
    assert torch.equal(g, dy) and torch.equal(single.grad, h1.grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_mixed_weight_dtype(dtype):
    """a float32 weight with a 16-bit input (mixed precision) runs in the
    input's dtype; the weight's gradient comes back in the weight's dtype"""
    x = torch.randn(4, 96, dtype=dtype)
    w32 = torch.randn(96)
    h = x.clone().requires_grad_(True)
    w = w32.clone().requires_grad_(True)
    y = ut.rms_norm(h, w, eps=EPS, in_place=False)
    assert y.dtype == dtype
    y.backward(torch.ones_like(y))
    assert w.grad.dtype == torch.float32
    h2 = x.clone().requires_grad_(True)
    w2 = w32.to(dtype).requires_grad_(True)
    y2 = ut.rms_norm(h2, w2, eps=EPS, in_place=False)
    y2.backward(torch.ones_like(y2))
    assert torch.equal(y, y2) and torch.equal(h.grad, h2.grad)
    assert torch.equal(w.grad, w2.grad.float())


def test_eps_and_one_dimensional_input():
    x = torch.tensor([3.0, 4.0])
    w = torch.tensor([1.0, 2.0])
    y = ut.rms_norm(x, w, eps=0.5)
    rstd = 1.0 / (12.5 + 0.5) ** 0.5
    assert torch.allclose(y, torch.tensor([3.0 * rstd, 8.0 * rstd]), atol=1e-6, rtol=1e-6)
    y = ut.rms_norm(x, None, eps=0.0, offset=1.0)
    assert torch.allclose(y, x / 12.5 ** 0.5, atol=1e-6, rtol=1e-6)


def test_empty_batch():
    """rows = 0 is a valid empty batch; the weight's gradient is 0"""
    h = torch.randn(0, 16, requires_grad=True)
    w = torch.randn(16, requires_grad=True)
    y = ut.rms_norm(h, w)
    assert y.shape == (0, 16)
    y.backward(torch.randn(0, 16))
    assert h.grad.shape == (0, 16)
    assert torch.equal(w.grad, torch.zeros(16))


def test_module_init_and_repr():
    m = ut.RMSNorm(8, init_fn="zeros", dtype=torch.bfloat16)
    assert m.weight.dtype == torch.bfloat16 and torch.equal(m.weight, torch.zeros(8, dtype=torch.bfloat16))
    assert torch.equal(LigerRMSNorm(8).weight.data, torch.ones(8))
    assert LigerRMSNorm(8, elementwise_affine=False).weight is None
    assert "weight_shape=(8,)" in repr(LigerRMSNorm(8))
    with pytest.raises(ValueError, match="init_fn"):
        ut.RMSNorm(8, init_fn="randn")
