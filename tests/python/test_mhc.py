"""mHC (ubgen.torch's MHCCoeffsFunction, MHCPreFunction, MHCPostResFunction,
MHC and Liger's LigerMHC*Function, liger_mhc_*, LigerMHC) against the
same maths in float64 through autograd, forward and every gradient, over
the shapes of Liger-Kernel's test_mhc.py (B, T, HC, C) plus an odd one;
Liger's tolerances (coefficients: h_pre, h_post / h_res / gradients
f16 8e-3 / 1.5e-2 / 2e-2, bf16 1.5e-2 / 2.5e-2 / 5e-2, f32 5e-4 / 1e-3 /
2e-3; pre and post_res the f16 and bf16 rows), here against float64
rather than Liger's float32 torch reference."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import (LigerMHC, LigerMHCCoeffsFunction, LigerMHCPostResFunction, LigerMHCPreFunction,
                         liger_mhc_coeffs, liger_mhc_post_res, liger_mhc_pre)
from ubgen.liger.transformers.functional import liger_mhc_apply, liger_mhc_forward

import _ref

SHAPES = [(2, 4, 2, 32), (1, 8, 4, 64), (3, 5, 3, 37)]
# dtype: (pre/post tolerance, h_res tolerance, gradient tolerance), Liger's
TOL = {torch.float16: (8e-3, 1.5e-2, 2e-2), torch.bfloat16: (1.5e-2, 2.5e-2, 5e-2),
       torch.float32: (5e-4, 1e-3, 2e-3)}
CFG = dict(tmax=8, rms_eps=1e-6, pre_eps=1e-4, sinkhorn_eps=1e-6, post_mult=2.0)
shape_id = lambda s: "x".join(map(str, s))  # noqa: E731


def sinkhorn(logits, tmax, eps):
    mat = torch.softmax(logits, dim=-1) + eps
    mat = mat / (mat.sum(dim=-2, keepdim=True) + eps)
    for _ in range(tmax - 1):
        mat = mat / (mat.sum(dim=-1, keepdim=True) + eps)
        mat = mat / (mat.sum(dim=-2, keepdim=True) + eps)
    return mat


def coeffs_ref(x, phi, b, a_pre, a_post, a_res, tmax, rms_eps, pre_eps, sinkhorn_eps, post_mult):
    """float64 leaves of the arguments' values, the coefficients in float64"""
    HC, C = x.shape[-2:]
    xm = x.reshape(-1, HC * C)
    invr = torch.rsqrt(xm.pow(2).mean(dim=-1, keepdim=True) + rms_eps)
    mix = (xm @ phi) * invr
    h_pre = torch.sigmoid(mix[:, :HC] * a_pre + b[:HC]) + pre_eps
    h_post = torch.sigmoid(mix[:, HC:2 * HC] * a_post + b[HC:2 * HC]) * post_mult
    h_res = sinkhorn(mix[:, 2 * HC:].reshape(-1, HC, HC) * a_res + b[2 * HC:].reshape(HC, HC), tmax, sinkhorn_eps)
    outer = x.shape[:-2]
    return h_pre.reshape(*outer, HC), h_post.reshape(*outer, HC), h_res.reshape(*outer, HC, HC)


def params(B, T, HC, C, dtype, phi_dtype):
    K, M = HC * C, HC * HC + 2 * HC
    x = torch.randn(B, T, HC, C).to(dtype).requires_grad_()
    phi = (torch.randn(K, M) * 0.02).to(phi_dtype).requires_grad_()
    b = (torch.randn(M) * 0.1).requires_grad_()
    alphas = [torch.tensor(v).requires_grad_() for v in (1.0, 0.8, 1.2)]
    return [x, phi, b] + alphas


def grads_of(ts):
    return [t.grad for t in ts]


@pytest.mark.parametrize("phi_dtype", [torch.float16, torch.float32], ids=["phi_f16", "phi_f32"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("fn", ["Function", "liger_mhc_coeffs", "ut.mhc_coeffs"])
def test_coeffs(fn, shape, dtype, phi_dtype):
    torch.manual_seed(42)
    phi_dtype = torch.float32 if dtype == torch.float32 else phi_dtype
    ps = params(*shape, dtype, phi_dtype)
    allow_fp32 = dtype == torch.float32
    if fn == "Function":
        out = LigerMHCCoeffsFunction.apply(*ps, allow_fp32, *CFG.values())
    else:
        out = (liger_mhc_coeffs if fn == "liger_mhc_coeffs" else ut.mhc_coeffs)(*ps, allow_fp32=allow_fp32, **CFG)
    gs = [torch.randn(o.shape) for o in out]
    torch.autograd.backward(out, gs)
    refs = [_ref.leaf(p) for p in ps]
    want = coeffs_ref(*refs, **CFG)
    torch.autograd.backward(want, [g.double() for g in gs])
    pp, res, gt = TOL[dtype]
    for got, w, name, tol in zip(out, want, ("h_pre", "h_post", "h_res"), (pp, pp, res)):
        assert got.dtype == torch.float32, name
        _ref.assert_close(got, w, tol, tol, name)
    for p, r, name in zip(ps, refs, ("x", "phi", "b", "alpha_pre", "alpha_post", "alpha_res")):
        assert p.grad.dtype == p.dtype and p.grad.shape == p.shape, name
        _ref.assert_close(p.grad, r.grad, gt, gt, "d" + name)


@pytest.mark.parametrize("used", ["pre", "post", "res"])
def test_coeffs_unused_outputs(used):
    """one output in the loss: the others' gradients are None, every input still gets a gradient"""
    torch.manual_seed(42)
    ps = params(1, 8, 4, 64, torch.float16, torch.float16)
    h = dict(zip(("pre", "post", "res"), liger_mhc_coeffs(*ps, tmax=4, rms_eps=1e-6, pre_eps=1e-4)))
    h[used].square().mean().backward()
    refs = [_ref.leaf(p) for p in ps]
    want = dict(zip(("pre", "post", "res"), coeffs_ref(*refs, tmax=4, rms_eps=1e-6, pre_eps=1e-4, sinkhorn_eps=1e-6,
                                                         post_mult=2.0)))
    want[used].square().mean().backward()
    for p, r in zip(ps, refs):  # an alpha the loss does not reach: zero, as Liger's (float64 autograd: None)
        _ref.assert_close(p.grad, torch.zeros_like(r) if r.grad is None else r.grad, 2e-2, 2e-2, used)


def test_coeffs_refuse_fp32_unless_allowed():
    ps = params(1, 2, 2, 8, torch.float32, torch.float32)
    with pytest.raises(AssertionError, match="allow_fp32"):
        liger_mhc_coeffs(*ps)


def test_refusals_name_the_argument():
    x = torch.randn(2, 3, 17, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="at most 16"):
        liger_mhc_pre(x, torch.rand(2, 3, 17))
    x = torch.randn(2, 3, 4, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="h_pre"):
        liger_mhc_pre(x, torch.rand(2, 3, 5))
    with pytest.raises(ValueError, match="f_out"):
        liger_mhc_post_res(x, torch.randn(2, 3, 9, dtype=torch.bfloat16), torch.rand(2, 3, 4), torch.rand(2, 3, 4, 4))
    with pytest.raises(ValueError, match="phi"):
        liger_mhc_coeffs(x, torch.randn(31, 24), torch.zeros(24), *[torch.tensor(1.0)] * 3)


def pre_post_ref(x, h_pre, h_post, h_res, f_out):
    x_in = (x * h_pre.unsqueeze(-1)).sum(dim=-2)
    x_out = torch.einsum("...oi,...ic->...oc", h_res, x) + h_post.unsqueeze(-1) * f_out.unsqueeze(-2)
    return x_in, x_out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("api", ["Function", "liger", "ut", "apply"])
def test_pre_and_post_res(api, shape, dtype):
    torch.manual_seed(42)
    B, T, HC, C = shape
    x = torch.randn(B, T, HC, C).to(dtype).requires_grad_()
    h_pre, h_post = torch.rand(B, T, HC).requires_grad_(), torch.rand(B, T, HC).requires_grad_()
    h_res = torch.rand(B, T, HC, HC).requires_grad_()
    f_out = torch.randn(B, T, C).to(dtype).requires_grad_()
    if api == "Function":
        x_in, x_out = LigerMHCPreFunction.apply(x, h_pre), LigerMHCPostResFunction.apply(x, f_out, h_post, h_res)
    elif api == "liger":
        x_in, x_out = liger_mhc_pre(x, h_pre), liger_mhc_post_res(x, f_out, h_post, h_res)
    elif api == "ut":
        x_in, x_out = ut.mhc_pre(x, h_pre), ut.mhc_post_res(x, f_out, h_post, h_res)
    else:
        x_out, x_in = liger_mhc_apply(x, f_out, h_pre, h_post, h_res, return_x_in=True)
    assert x_in.dtype == dtype and x_out.dtype == dtype and x_in.shape == (B, T, C) and x_out.shape == x.shape
    g_in, g_out = torch.randn(x_in.shape).to(dtype), torch.randn(x_out.shape).to(dtype)
    torch.autograd.backward((x_in, x_out), (g_in, g_out))
    leaves = [_ref.leaf(t) for t in (x, h_pre, h_post, h_res, f_out)]
    want = pre_post_ref(*leaves)
    torch.autograd.backward(want, (g_in.double(), g_out.double()))
    pp, res, gt = TOL[dtype]
    _ref.assert_close(x_in, want[0], pp, pp, "x_in")
    _ref.assert_close(x_out, want[1], res, res, "x_out")
    for t, r, name in zip((x, h_pre, h_post, h_res, f_out), leaves, ("x", "h_pre", "h_post", "h_res", "f_out")):
        assert t.grad.dtype == t.dtype, name
        _ref.assert_close(t.grad, r.grad, gt, gt, "d" + name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("shape", SHAPES[:2], ids=shape_id)
def test_liger_mhc_module(shape, dtype):
    """LigerMHC around a Linear, against the same model in float64; Liger's
    tolerances (4x for dphi and the layer's weight in bf16)"""
    torch.manual_seed(42)
    B, T, HC, C = shape
    layer = torch.nn.Linear(C, C, bias=False, dtype=dtype)
    model = LigerMHC(layer, hc=HC, c=C, tmax=4, pre_eps=1e-4, phi_dtype=dtype)
    x = torch.randn(B, T, HC, C).to(dtype).requires_grad_()
    out = model(x)
    assert out.dtype == dtype and out.shape == x.shape
    grad = torch.randn(out.shape)
    out.backward(grad.to(dtype))

    xr = _ref.leaf(x)
    pr = [_ref.leaf(p) for p in (model.phi, model.b, model.alpha_pre, model.alpha_post, model.alpha_res)]
    wr = _ref.leaf(layer.weight)
    h_pre, h_post, h_res = coeffs_ref(xr, *pr, tmax=4, rms_eps=1e-6, pre_eps=1e-4, sinkhorn_eps=1e-6, post_mult=2.0)
    x_in = (xr * h_pre.unsqueeze(-1)).sum(dim=-2)
    out_ref = torch.einsum("...oi,...ic->...oc", h_res, xr) + h_post.unsqueeze(-1) * (x_in @ wr.T).unsqueeze(-2)
    out_ref.backward(grad.double())
    _, res, gt = TOL[dtype]
    wide = gt * 4 if dtype == torch.bfloat16 else gt
    _ref.assert_close(out, out_ref, res, res, "out")
    _ref.assert_close(x.grad, xr.grad, gt, gt, "dx")
    for p, r, name, tol in zip((model.phi, model.b, model.alpha_pre, model.alpha_post, model.alpha_res), pr,
                               ("phi", "b", "alpha_pre", "alpha_post", "alpha_res"), (wide, gt, gt, gt, gt)):
        _ref.assert_close(p.grad, r.grad, tol, tol, "d" + name)
    _ref.assert_close(layer.weight.grad, wr.grad, wide, wide, "dweight")


def test_forward_helper_returns_coeffs():
    torch.manual_seed(0)
    layer = torch.nn.Linear(32, 32, bias=False, dtype=torch.bfloat16)
    model = LigerMHC(layer, hc=2, c=32, phi_dtype=torch.bfloat16)
    x = torch.randn(2, 3, 2, 32, dtype=torch.bfloat16)
    out, (h_pre, h_post, h_res) = liger_mhc_forward(x, layer, model.phi, model.b, model.alpha_pre, model.alpha_post,
                                                    model.alpha_res, return_coeffs=True)
    assert torch.equal(out, model(x)) and h_pre.shape == (2, 3, 2) and h_res.shape == (2, 3, 2, 2)
