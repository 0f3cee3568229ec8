"""Modulated RMSNorm (ubgen.torch's ModulatedRMSNorm / modulated_rms_norm /
ModulatedRMSNormFunction and Liger's LigerModulatedRMSNorm,
LigerModulatedRMSNormFunction, liger_modulated_rms_norm) against a float64
torch reference through autograd: y = (1 + scale) * RMSNorm(x) + shift,
scale and shift broadcast over the rows by repeat_interleave, so their
gradients are autograd's sums. The grid of Liger-Kernel's
test_modulated_rms_norm.py (shapes, casting modes with their offsets,
global / batch / per-row modulation, with and without shift and weight)
plus float16, with Liger's tolerances: f32 (1e-4, 1e-6), bf16 (1e-1, 2e-2)
and atol 2e-1 for bf16 "none"; f16 (2e-2, 2e-3) as tests/python/test_rms_norm.py."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerModulatedRMSNorm, LigerModulatedRMSNormFunction, liger_modulated_rms_norm

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-4, 1e-6), torch.float16: (2e-2, 2e-3), torch.bfloat16: (1e-1, 2e-2)}
MODES = [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)]
MODE_IDS = ["llama-offset0", "gemma-offset1", "none-offset0"]
EPS = 1e-6


def broadcast(m, x):
    """m's rows repeated over the rows of x [..., H] they serve"""
    H = x.shape[-1]
    rows = x.numel() // H
    m2 = m.reshape(-1, H)
    return m2.repeat_interleave(rows // m2.shape[0], dim=0).reshape(x.shape)


class GradRound(torch.autograd.Function):
    """t unchanged; its gradient rounded to dtype (the kernel's g = rnd(dy * rnd(1 + scale)))"""

    @staticmethod
    def forward(ctx, t, dtype):
        ctx.dtype = dtype
        return t.view_as(t)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype).to(g.dtype), None


def reference(x, w, scale, shift, dy, offset, casting_mode, dtype):
    """y, dx, dw, dscale, dshift of the float64 reference; the RMSNorm is
    rounded to dtype before the modulation where the kernel rounds it
    (gemma, and no weight), 1 + scale, and the gradient reaching the
    RMSNorm, as docs/semantics.md says"""
    xr, sr = _ref.leaf(x), _ref.leaf(scale)
    wr = None if w is None else _ref.leaf(w)
    hr = None if shift is None else _ref.leaf(shift)
    n = _ref.rms_norm(xr, wr, EPS, offset, casting_mode, dtype)
    if wr is None or casting_mode == "gemma":
        n = _ref.st_round(n, dtype)
    y = GradRound.apply(n, dtype) * _ref.st_round(1 + broadcast(sr, xr), dtype)
    if hr is not None:
        y = y + broadcast(hr, xr)
    y.backward(dy.to(torch.float64))
    return y, xr.grad, None if wr is None else wr.grad, sr.grad, None if hr is None else hr.grad


def check(got, want, dtype, what, atol=None):
    tol_a, rtol = TOL[dtype]
    for g, r, name in zip(got, want, ("y", "dx", "dw", "dscale", "dshift")):
        if r is None:
            assert g is None, "%s %s: expected None" % (what, name)
            continue
        _ref.assert_close(g, r, tol_a if atol is None else atol, rtol, "%s %s" % (what, name))


def modulation(shape, mode, dtype, has_shift):
    """Liger's _make_modulation: [H] (global), [B, H] (batch) or x's shape (row)"""
    H = shape[-1]
    mod_shape = {"global": (H,), "batch": (shape[0], H), "row": shape}[mode]
    scale = torch.randn(mod_shape, dtype=dtype) * 0.1
    shift = torch.randn(mod_shape, dtype=dtype) * 0.1 if has_shift else None
    return scale, shift


def leaves(*ts):
    return [None if t is None else t.clone().requires_grad_(True) for t in ts]


@pytest.mark.parametrize("elementwise_affine", [True, False], ids=["affine", "no-affine"])
@pytest.mark.parametrize("has_shift", [True, False], ids=["shift", "no-shift"])
@pytest.mark.parametrize("scale_mode", ["global", "batch", "row"])
@pytest.mark.parametrize("casting_mode, offset", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(2, 128, 512), (5, 123, 123)], ids=["2x128x512", "5x123x123"])
def test_correctness(shape, dtype, casting_mode, offset, scale_mode, has_shift, elementwise_affine):
    """Liger's test_correctness: LigerModulatedRMSNorm(in_place=False)"""
    H = shape[-1]
    x, dy = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    scale, shift = modulation(shape, scale_mode, dtype, has_shift)
    norm = LigerModulatedRMSNorm(hidden_size=H, offset=offset, casting_mode=casting_mode, in_place=False,
                                 elementwise_affine=elementwise_affine).to(dtype)
    w = None
    if elementwise_affine:
        w = torch.randn(H, dtype=dtype)
        with torch.no_grad():
            norm.weight.copy_(w)
    h, s, sh = leaves(x, scale, shift)
    g = dy.clone()
    y = norm(h, s, sh)
    y.backward(g)
    assert torch.equal(g, dy), "in_place=False modified the gradient it was given"
    assert y.dtype == dtype and s.grad.shape == scale.shape
    atol = 2e-1 if dtype == torch.bfloat16 and casting_mode == "none" else None
    check((y, h.grad, None if w is None else norm.weight.grad, s.grad, None if sh is None else sh.grad),
          reference(x, w, scale, shift, dy, offset, casting_mode, dtype), dtype,
          "%s %s %s" % (casting_mode, scale_mode, dtype), atol)


@pytest.mark.parametrize("elementwise_affine", [True, False], ids=["affine", "no-affine"])
@pytest.mark.parametrize("has_shift", [True, False], ids=["shift", "no-shift"])
@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "out-of-place"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fn", [liger_modulated_rms_norm, ut.modulated_rms_norm,
                                lambda X, W, s, sh, in_place: LigerModulatedRMSNormFunction.apply(
                                    X, W, s, sh, 1e-6, 0.0, "llama", in_place)],
                         ids=["liger_modulated_rms_norm", "ut.modulated_rms_norm", "Function"])
def test_correctness_functional(fn, dtype, in_place, has_shift, elementwise_affine):
    """Liger's test_correctness_functional: batch modulation of [2, 3, 8]"""
    shape = (2, 3, 8)
    x, dy = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    scale, shift = modulation(shape, "batch", dtype, has_shift)
    w = torch.randn(8, dtype=dtype) if elementwise_affine else None
    h, wl, s, sh = leaves(x, w, scale, shift)
    y = fn(h, wl, s, sh, in_place=in_place)
    y.backward(dy.clone())
    check((y, h.grad, None if wl is None else wl.grad, s.grad, None if sh is None else sh.grad),
          reference(x, w, scale, shift, dy, 0.0, "llama", dtype), dtype, "functional")


@pytest.mark.parametrize("has_shift", [True, False], ids=["shift", "no-shift"])
@pytest.mark.parametrize("scale_mode", ["global", "batch", "row"])
def test_mixed_dtype_modulation(scale_mode, has_shift):
    """Liger's test_mixed_dtype_modulation: x bf16, scale and shift f32; the
    output in x's dtype, the modulation's gradients in theirs (the kernel
    takes scale and shift rounded to bf16), against an f32 computation"""
    shape = (2, 4, 64)
    x, dy = torch.randn(shape, dtype=torch.bfloat16), torch.randn(shape, dtype=torch.bfloat16)
    scale, shift = modulation(shape, scale_mode, torch.float32, has_shift)
    norm = LigerModulatedRMSNorm(hidden_size=64, in_place=False).to(torch.bfloat16)
    h, s, sh = leaves(x, scale, shift)
    y = norm(h, s, sh)
    y.backward(dy)
    assert y.dtype == torch.bfloat16 and s.grad.dtype == torch.float32
    assert sh is None or sh.grad.dtype == torch.float32
    want = reference(x.float(), norm.weight.detach().float(), scale, shift, dy.float(), 0.0, "llama", torch.float32)
    for got, ref, name in zip((y, h.grad, s.grad, None if sh is None else sh.grad),
                              (want[0], want[1], want[3], want[4]), ("y", "dx", "dscale", "dshift")):
        if ref is not None:
            _ref.assert_close(got, ref, 1e-1, 2e-2, "mixed " + name)


def test_module_defaults_and_repr():
    m = LigerModulatedRMSNorm(16)
    assert torch.equal(m.weight.detach(), torch.ones(16)) and m.variance_epsilon == 1e-6
    assert m.offset == 0.0 and m.casting_mode == "llama" and m.in_place is True
    assert LigerModulatedRMSNorm(16, init_fn="zeros").weight.detach().abs().sum() == 0
    assert LigerModulatedRMSNorm(16, elementwise_affine=False).weight is None
    assert "weight_shape=(16,)" in repr(m)


def test_bad_inputs_are_refused():
    x = torch.randn(6, 8)
    with pytest.raises(ValueError, match="multiple of X's last dimension 8"):
        ut.modulated_rms_norm(x, None, torch.randn(12))
    with pytest.raises(ValueError, match="4 rows of 8 .* do not divide X's 6 rows"):
        ut.modulated_rms_norm(x, None, torch.randn(4, 8))
    with pytest.raises(ValueError, match="shift must broadcast as scale does"):
        ut.modulated_rms_norm(x, None, torch.randn(2, 8), torch.randn(6, 8))
    with pytest.raises(ValueError, match="W has shape"):
        ut.modulated_rms_norm(x, torch.ones(7), torch.randn(8))
    with pytest.raises(ValueError, match="casting_mode"):
        ut.modulated_rms_norm(x, None, torch.randn(8), casting_mode="fp8")
    with pytest.raises(TypeError, match="float64"):
        ut.modulated_rms_norm(x.double(), None, torch.randn(8))
