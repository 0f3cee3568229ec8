"""Residual add then RMSNorm (ubgen.torch's FusedAddRMSNorm /
fused_add_rms_norm / FusedAddRMSNormFunction and Liger's
LigerFusedAddRMSNorm, LigerFusedAddRMSNormFunction,
liger_fused_add_rms_norm) against a float64 torch reference through
autograd (s = x + r rounded to the dtype, then _ref.rms_norm of s), forward
(y, s) and every gradient (dx, dr, dw from dy and ds), over the shapes,
casting modes, offsets, in_place values and tolerances of Liger-Kernel's
test_fused_add_rms_norm.py, plus float16 (test_rms_norm.py's bound) and
rows longer than a whole-row variant holds."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerFusedAddRMSNorm, LigerFusedAddRMSNormFunction, liger_fused_add_rms_norm

import _ref
from _ref import DTYPE_IDS, DTYPES

# Liger: f32 (1e-4, 1e-6), bf16 (2e-1, 2e-2); f16 as test_rms_norm.py
TOL = {torch.float32: (1e-4, 1e-6), torch.float16: (2e-2, 2e-3), torch.bfloat16: (2e-1, 2e-2)}
MODES = [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)]
MODE_IDS = ["llama-offset0", "gemma-offset1", "none-offset0"]
SHAPES = [(2, 128, 512), (5, 123, 123), (2, 2, 8), (9, 7, 41), (2, 40000)]
EPS = 1e-6


def reference(x, r, w, dy, ds, offset, casting_mode, dtype):
    """y, s, dx, dr, dw of the float64 reference; ds None: s unused"""
    xr, rr, wr = _ref.leaf(x), _ref.leaf(r), _ref.leaf(w)
    s = _ref.st_round(xr + rr, dtype)
    y = _ref.rms_norm(s, wr, EPS, offset, casting_mode, dtype)
    if ds is None:
        y.backward(dy.to(torch.float64))
    else:
        torch.autograd.backward((y, s), (dy.to(torch.float64), ds.to(torch.float64)))
    return y, s, xr.grad, rr.grad, wr.grad


def check(got, want, dtype, what):
    atol, rtol = TOL[dtype]
    for g, e, name in zip(got, want, ("y", "s", "dx", "dr", "dw")):
        assert g.dtype == dtype, (name, g.dtype)
        _ref.assert_close(g, e, atol, rtol, "%s %s" % (what, name))


def inputs(shape, dtype):
    x, r = torch.randn(*shape).to(dtype), torch.randn(*shape).to(dtype)
    w = torch.randn(shape[-1]).to(dtype)
    return x, r, w, torch.randn(*shape).to(dtype), torch.randn(*shape).to(dtype)


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "out-of-place"])
@pytest.mark.parametrize("casting_mode, offset", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("module", [LigerFusedAddRMSNorm, ut.FusedAddRMSNorm], ids=["Liger", "ut"])
def test_module(module, shape, dtype, casting_mode, offset, in_place):
    x, r, w, dy, ds = inputs(shape, dtype)
    m = module(hidden_size=shape[-1], eps=EPS, offset=offset, casting_mode=casting_mode, in_place=in_place).to(dtype)
    with torch.no_grad():
        m.weight.copy_(w)
    h, res = x.clone().requires_grad_(), r.clone().requires_grad_()
    y, s = m(h, res)
    torch.autograd.backward((y, s), (dy.clone(), ds.clone()))
    check((y, s, h.grad, res.grad, m.weight.grad), reference(x, r, w, dy, ds, offset, casting_mode, dtype), dtype,
          "%s %s" % (module.__name__, casting_mode))


@pytest.mark.parametrize("casting_mode, offset", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fn", [liger_fused_add_rms_norm, LigerFusedAddRMSNormFunction.apply, ut.fused_add_rms_norm],
                         ids=["liger_fused_add_rms_norm", "Function", "ut.fused_add_rms_norm"])
def test_functional(fn, dtype, casting_mode, offset):
    x, r, w, dy, ds = inputs((9, 7, 41), dtype)
    h, res, wl = x.clone().requires_grad_(), r.clone().requires_grad_(), w.clone().requires_grad_()
    y, s = fn(h, res, wl, EPS, offset, casting_mode, False)
    torch.autograd.backward((y, s), (dy, ds))
    check((y, s, h.grad, res.grad, wl.grad), reference(x, r, w, dy, ds, offset, casting_mode, dtype), dtype,
          "functional")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_only_y_used(dtype):
    """s unused: dS is None and the kernel adds nothing for it"""
    x, r, w, dy, _ = inputs((3, 5, 1024), dtype)
    h, res, wl = x.clone().requires_grad_(), r.clone().requires_grad_(), w.clone().requires_grad_()
    y, _s = ut.fused_add_rms_norm(h, res, wl)
    y.backward(dy)
    got = (y, _s, h.grad, res.grad, wl.grad)
    check(got, reference(x, r, w, dy, None, 0.0, "llama", dtype), dtype, "only y")


def test_only_s_used():
    """y unused: dx = dr = ds, dw = 0"""
    x, r, w, _, ds = inputs((4, 64), torch.float32)
    h, res, wl = x.clone().requires_grad_(), r.clone().requires_grad_(), w.clone().requires_grad_()
    _y, s = ut.fused_add_rms_norm(h, res, wl)
    s.backward(ds)
    assert torch.equal(h.grad, ds) and torch.equal(res.grad, ds) and not wl.grad.any()


def test_in_place_writes_dx_over_a_private_gradient():
    x, r, w, dy, ds = inputs((4, 256), torch.float32)
    h, res = x.clone().requires_grad_(), r.clone().requires_grad_()
    y, s = LigerFusedAddRMSNormFunction.apply(h, res, w, EPS, 0.0, "llama", True)
    g = dy.clone()
    torch.autograd.backward((y, s), (g, ds))
    assert torch.equal(g, dy), "the caller's own gradient is not written over"
    atol, rtol = TOL[torch.float32]
    _ref.assert_close(h.grad, reference(x, r, w, dy, ds, 0.0, "llama", torch.float32)[2], atol, rtol, "dx")


def test_two_leaves_get_equal_unshared_gradients():
    """x and r both leaves: dr is a copy of dx (autograd gives them apart), 2 MiB and more in the pool's pages"""
    x, r, w, dy, ds = inputs((256, 2048), torch.float32)
    h, res = x.clone().requires_grad_(), r.clone().requires_grad_()
    y, s = ut.fused_add_rms_norm(h, res, w)
    torch.autograd.backward((y, s), (dy, ds))
    assert torch.equal(h.grad, res.grad) and h.grad.data_ptr() != res.grad.data_ptr()
    h.grad.mul_(2)  # an update of one leaf's gradient leaves the other's
    assert torch.equal(res.grad * 2, h.grad)


def test_empty_batch():
    x = torch.zeros(0, 16, requires_grad=True)
    w = torch.ones(16, requires_grad=True)
    y, s = ut.fused_add_rms_norm(x, torch.zeros(0, 16), w)
    assert y.shape == (0, 16) and s.shape == (0, 16)
    y.sum().backward()
    assert x.grad.shape == (0, 16) and torch.equal(w.grad, torch.zeros(16))


def test_module_init_and_repr():
    m = LigerFusedAddRMSNorm(8, init_fn="zeros", in_place=True)
    assert torch.equal(m.weight, torch.zeros(8)) and m.in_place and m.casting_mode == "llama"
    assert "eps=1e-06" in repr(m)


def test_bad_inputs_are_refused():
    x, w = torch.randn(4, 8), torch.ones(8)
    with pytest.raises(ValueError, match="R has shape"):
        ut.fused_add_rms_norm(x, torch.randn(4, 9), w)
    with pytest.raises(ValueError, match="last dimension is 8"):
        ut.fused_add_rms_norm(x, x, torch.ones(9))
    with pytest.raises(ValueError, match="casting_mode"):
        ut.fused_add_rms_norm(x, x, w, casting_mode="llama3")
    with pytest.raises(TypeError, match="float64"):
        ut.fused_add_rms_norm(x.double(), x.double(), w.double())
