"""Bad inputs are refused before anything is written: a TypeError (wrong
dtype or type) or ValueError (device, shape, index, option value) whose
message names the argument, every tensor involved left as it was, no
gradient accumulated, and the process context unchanged by a refused
ubgen.configure."""
import re

import pytest
import torch

import ubgen
import ubgen.torch as ut
from ubgen.liger import LigerCrossEntropyLoss, LigerFusedLinearCrossEntropyLoss, LigerRMSNorm
from ubgen.liger.ops.cross_entropy import liger_cross_entropy_kernel


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def T(*shape, dtype=torch.float32, grad=False):
    return torch.randn(*shape).to(dtype).requires_grad_(grad)


def ids(*v):
    return torch.tensor(v, dtype=torch.int64)


X4, W10 = T(4, 8, grad=True), T(10, 8, grad=True)
TGT = ids(1, 2, 3, 4)

# (id, call, exception, pattern the message must match: it names the argument)
CASES = [
    # ---- RMSNorm
    ("rms X float64", lambda: ut.rms_norm(T(3, 8, dtype=torch.float64), T(8)), TypeError, r"\bX\b.*float64"),
    ("rms X int", lambda: ut.rms_norm(torch.ones(3, 8, dtype=torch.long), None), TypeError, r"\bX\b.*int64"),
    ("rms X list", lambda: ut.rms_norm([[1.0, 2.0]], None), TypeError, r"\bX\b.*torch\.Tensor"),
    ("rms X meta", lambda: ut.rms_norm(meta(3, 8), T(8)), ValueError, r"\bX\b.*meta"),
    ("rms W meta", lambda: ut.rms_norm(T(3, 8), meta(8)), ValueError, r"\bW\b.*meta"),
    ("rms W length", lambda: ut.rms_norm(T(3, 8), T(7)), ValueError, r"\bW\b.*\(7,\).*8"),
    ("rms W 2-D", lambda: ut.rms_norm(T(3, 8), T(1, 8)), ValueError, r"\bW\b.*\(1, 8\)"),
    ("rms casting_mode", lambda: ut.rms_norm(T(3, 8), T(8), casting_mode="llamaa"), ValueError,
     r"casting_mode='llamaa'"),
    ("rms casting_mode code", lambda: ut.rms_norm(T(3, 8), T(8), casting_mode=7), ValueError, r"casting_mode=7"),
    ("rms eps nan", lambda: ut.rms_norm(T(3, 8), T(8), eps=float("nan")), ValueError, r"\beps\b.*nan"),
    ("rms offset inf", lambda: ut.rms_norm(T(3, 8), T(8), offset=float("inf")), ValueError, r"\boffset\b.*inf"),
    ("RMSNorm casting_mode", lambda: ut.RMSNorm(8, casting_mode="bad"), ValueError, r"casting_mode='bad'"),
    ("LigerRMSNorm casting_mode", lambda: LigerRMSNorm(8, casting_mode="bad")(T(2, 8)), ValueError,
     r"casting_mode='bad'"),
    # ---- Embedding
    ("emb weight float64", lambda: ut.embedding(ids(1, 2), T(5, 3, dtype=torch.float64)), TypeError,
     r"\bweight\b.*float64"),
    ("emb indices float", lambda: ut.embedding(torch.tensor([1.0, 2.0]), T(5, 3)), TypeError, r"\bindices\b.*float32"),
    ("emb indices list", lambda: ut.embedding([1, 2], T(5, 3)), TypeError, r"\bindices\b.*torch\.Tensor"),
    ("emb weight meta", lambda: ut.embedding(ids(1, 2), meta(5, 3)), ValueError, r"\bweight\b.*meta"),
    ("emb indices meta", lambda: ut.embedding(meta(2, dtype=torch.long), T(5, 3)), ValueError, r"\bindices\b.*meta"),
    ("emb weight 1-D", lambda: ut.embedding(ids(1, 2), T(5)), ValueError, r"\bweight\b.*\(5,\)"),
    ("emb index 200", lambda: ut.embedding(ids(1, 200, 3), T(50, 3)), ValueError, r"indices\[1\] = 200"),
    ("emb index -1", lambda: ut.embedding(ids(0, 1, 2, -1), T(50, 3)), ValueError, r"indices\[3\] = -1"),
    ("emb index == V", lambda: ut.embedding(ids(49, 50), T(50, 3)), ValueError, r"indices\[1\] = 50"),
    ("emb padding_idx", lambda: ut.embedding(ids(1, 2), T(5, 3), padding_idx=7), ValueError, r"padding_idx=7"),
    ("Embedding padding_idx", lambda: ut.Embedding(5, 3, padding_idx=-6), ValueError, r"padding_idx=-6"),
    # ---- AttnRes
    ("attn V float64", lambda: ut.attn_res(T(3, 2, 8, dtype=torch.float64), T(8), T(8)), TypeError, r"\bV\b.*float64"),
    ("attn list block float64", lambda: ut.attn_res([T(2, 8), T(2, 8, dtype=torch.float64)], T(8), T(8)), TypeError,
     r"float64"),
    ("attn V meta", lambda: ut.attn_res(meta(3, 2, 8), T(8), T(8)), ValueError, r"\bV\b.*meta"),
    ("attn list block meta", lambda: ut.attn_res([T(2, 8), meta(2, 8)], T(8), T(8)), ValueError, r"V\[1\].*meta"),
    ("attn w_query meta", lambda: ut.attn_res(T(3, 2, 8), meta(8), T(8)), ValueError, r"w_query.*meta"),
    ("attn w_query length", lambda: ut.attn_res(T(3, 2, 8), T(7), T(8)), ValueError, r"w_query.*\(7,\).*8"),
    ("attn w_norm length", lambda: ut.attn_res(T(3, 2, 8), T(8), T(9)), ValueError, r"w_norm.*\(9,\).*8"),
    ("attn V 1-D", lambda: ut.attn_res(T(8), T(8), T(8)), ValueError, r"\bV\b.*\(8,\)"),
    ("attn list shapes differ", lambda: ut.attn_res([T(2, 8), T(2, 7)], T(8), T(8)), ValueError, r"V\[1\]"),
    ("attn empty list", lambda: ut.attn_res([], T(8), T(8)), ValueError, r"\bV\b.*empty"),
    ("attn eps nan", lambda: ut.attn_res(T(3, 2, 8), T(8), T(8), eps=float("nan")), ValueError, r"\beps\b"),
    ("attn 300 blocks", lambda: ut.attn_res(T(300, 1, 4), T(4), T(4)), ValueError, r"nblocks = 300"),
    # ---- FLCE
    ("flce input float64", lambda: ut.fused_linear_cross_entropy(T(4, 8, dtype=torch.float64), W10, TGT), TypeError,
     r"_input.*float64"),
    ("flce input meta", lambda: ut.fused_linear_cross_entropy(meta(4, 8), W10, TGT), ValueError, r"_input.*meta"),
    ("flce weight meta", lambda: ut.fused_linear_cross_entropy(X4, meta(10, 8), TGT), ValueError, r"\bweight\b.*meta"),
    ("flce target meta", lambda: ut.fused_linear_cross_entropy(X4, W10, meta(4, dtype=torch.long)), ValueError,
     r"target.*meta"),
    ("flce bias meta", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, bias=meta(10)), ValueError, r"bias.*meta"),
    ("flce ce_weight meta", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, ce_weight=meta(10)), ValueError,
     r"ce_weight.*meta"),
    ("flce weight width", lambda: ut.fused_linear_cross_entropy(X4, T(10, 7), TGT), ValueError,
     r"\bweight\b.*\(10, 7\)"),
    ("flce input 3-D", lambda: ut.fused_linear_cross_entropy(T(2, 2, 8), W10, TGT), ValueError, r"_input.*\(2, 2, 8\)"),
    ("flce target length", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT[:3]), ValueError, r"target.*3.*4"),
    ("flce target float", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT.float()), TypeError, r"target.*float32"),
    ("flce target 200", lambda: ut.fused_linear_cross_entropy(X4, W10, ids(1, 200, 3, 4)), ValueError,
     r"target\[1\] = 200"),
    ("flce target -5", lambda: ut.fused_linear_cross_entropy(X4, W10, ids(1, 2, -5, 4)), ValueError,
     r"target\[2\] = -5"),
    ("flce bias length", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, bias=T(9)), ValueError, r"\bbias\b.*9"),
    ("flce ce_weight length", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, ce_weight=T(9)), ValueError,
     r"ce_weight.*9"),
    ("flce ce_weight int",
     lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, ce_weight=torch.ones(10, dtype=torch.long)), TypeError,
     r"ce_weight.*int64"),
    ("flce reduction", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, reduction="avg"), ValueError,
     r"reduction='avg'"),
    ("flce label_smoothing", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, label_smoothing=1.5), ValueError,
     r"label_smoothing = 1\.5"),
    ("flce softcap", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, softcap=-1.0), ValueError, r"softcap=-1\.0"),
    ("flce lse_square_scale", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, lse_square_scale=float("nan")),
     ValueError, r"lse_square_scale = nan"),
    ("flce return flag", lambda: ut.fused_linear_cross_entropy(X4, W10, TGT, return_z_loss=1), TypeError,
     r"return_z_loss"),
    ("FLCE loss reduction", lambda: ut.FusedLinearCrossEntropyLoss(reduction="avg"), ValueError, r"reduction='avg'"),
    ("LigerFLCE loss reduction at call", lambda: LigerFusedLinearCrossEntropyLoss()(W10, X4, ids(1, 2, 3, 10)),
     ValueError, r"target\[3\] = 10"),
    # ---- cross entropy
    ("ce input float64", lambda: ut.cross_entropy(T(4, 10, dtype=torch.float64), TGT), TypeError, r"_input.*float64"),
    ("ce input meta", lambda: ut.cross_entropy(meta(4, 10), TGT), ValueError, r"_input.*meta"),
    ("ce target meta", lambda: ut.cross_entropy(T(4, 10), meta(4, dtype=torch.long)), ValueError, r"target.*meta"),
    ("ce target 200", lambda: ut.cross_entropy(T(4, 10), ids(1, 200, 3, 4)), ValueError, r"target\[1\] = 200"),
    ("ce weight length", lambda: ut.cross_entropy(T(4, 10), TGT, weight=T(9)), ValueError, r"weight.*9"),
    ("ce reduction", lambda: ut.cross_entropy(T(4, 10), TGT, reduction="avg"), ValueError, r"reduction='avg'"),
    ("ce label_smoothing", lambda: ut.CrossEntropyLoss(label_smoothing=-0.1), ValueError, r"label_smoothing=-0\.1"),
    ("LigerCE target at call", lambda: LigerCrossEntropyLoss()(T(4, 10), ids(0, 1, 2, 99)), ValueError,
     r"target\[3\] = 99"),
    # ---- configure
    ("configure backend cuda", lambda: ubgen.configure(backend="cuda"), ValueError, r"backend='cuda'"),
    ("configure ub_bytes 10", lambda: ubgen.configure(ub_bytes=10), ValueError, r"ub_bytes = 10"),
    ("configure ub_bytes 1 TiB", lambda: ubgen.configure(ub_bytes=2 ** 40), ValueError, r"ub_bytes"),
    ("configure threads 0", lambda: ubgen.configure(threads=0), ValueError, r"threads=0"),
    ("configure threads str", lambda: ubgen.configure(threads="2"), ValueError, r"threads='2'"),
    ("configure threads 5000", lambda: ubgen.configure(threads=5000), ValueError, r"threads = 5000"),
    ("configure safety_margin", lambda: ubgen.configure(safety_margin=2.0), ValueError, r"safety_margin"),
    ("configure unknown setting", lambda: ubgen.configure(device="cuda"), TypeError, r"device"),
]


@pytest.mark.parametrize("call, exc, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused(call, exc, pattern, restore_context):
    before = ubgen.context()
    settings = ubgen.settings()
    snap = {"X4": X4.detach().clone(), "W10": W10.detach().clone(), "TGT": TGT.clone()}
    with pytest.raises(exc) as info:
        call()
    # a refusal, not a failed assert; an index out of range is also an
    # AssertionError that says so, as Liger's kernels raise
    if isinstance(info.value, AssertionError):
        assert isinstance(info.value, ubgen.OutOfBounds) and "out of bounds" in str(info.value), repr(info.value)
    assert re.search(pattern, str(info.value)), "message %r does not match %r" % (str(info.value), pattern)
    # nothing written: the shared inputs as they were, no gradient, the same process context
    assert torch.equal(X4.detach(), snap["X4"]) and torch.equal(W10.detach(), snap["W10"])
    assert torch.equal(TGT, snap["TGT"])
    assert X4.grad is None and W10.grad is None
    assert ubgen.context() is before and ubgen.settings() == settings


def test_refused_flce_leaves_gradients_alone():
    """a refused call accumulates nothing into .grad that was already there"""
    x = T(4, 8, grad=True)
    w = T(10, 8, grad=True)
    b = T(10, grad=True)
    x.grad, w.grad, b.grad = torch.full((4, 8), 7.0), torch.full((10, 8), 7.0), torch.full((10,), 7.0)
    before = [t.detach().clone() for t in (x, w, b)]
    with pytest.raises(ValueError, match=r"target\[0\] = 10"):
        ut.fused_linear_cross_entropy(x, w, ids(10, 1, 2, 3), b).backward()
    for t, old in zip((x, w, b), before):
        assert torch.equal(t.detach(), old)
        assert torch.equal(t.grad, torch.full_like(t.grad, 7.0))


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "out-of-place"])
def test_rms_norm_backward_with_dy_on_x_leaves_x_untouched(in_place):
    """dY given as X's own memory (y.backward(x.detach())): dX is never
    written over it, in_place or not, and the gradients are right"""
    x = T(6, 32, grad=True)
    w = T(32, grad=True)
    x_before = x.detach().clone()
    y = ut.rms_norm(x, w, in_place=in_place)
    y.backward(x.detach())
    assert torch.equal(x.detach(), x_before)
    x64, w64 = x_before.double().requires_grad_(True), w.detach().double().requires_grad_(True)
    y64 = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * w64
    y64.backward(x_before.double())
    assert torch.allclose(x.grad.double(), x64.grad, atol=1e-4, rtol=1e-5)
    assert torch.allclose(w.grad.double(), w64.grad, atol=1e-4, rtol=1e-5)


def test_refused_liger_kernel_launch_writes_nothing():
    """the stand-in for Liger's Triton kernel writes the gradient over X_ptr
    and each row's loss into loss_ptr: with a target out of range, neither
    is touched"""
    X = torch.randn(4, 64)
    Y = ids(1, 2, 64, 3)
    loss = torch.full((4,), 5.0)
    X_before = X.clone()
    with pytest.raises(ValueError, match=r"target\[2\] = 64"):
        liger_cross_entropy_kernel[(4,)](X_ptr=X, X_stride=64, Y_ptr=Y, Y_stride=1, loss_ptr=loss, n_cols=64,
                                         n_non_ignore=4, ignore_index=-100, lse_square_scale=0.0,
                                         label_smoothing=0.0, reduction="mean", softcap=0.0, HAS_GRADIENTS=True)
    assert torch.equal(X, X_before)
    assert torch.equal(loss, torch.full((4,), 5.0))


@pytest.mark.parametrize("n_rows, n_cols, where", [(1000, 64, "X_ptr"), (5, 64, "X_ptr"), (4, 65, "X_ptr"),
                                                    (-1, 64, "n_rows"), (4, 2.5, "n_cols")])
def test_liger_kernel_grid_past_the_tensors_is_refused(n_rows, n_cols, where):
    """n_rows and n_cols are the caller's (Triton's kernel trusts them): more
    than X_ptr holds is a ValueError naming them, before anything is written"""
    X, Y, loss = torch.randn(4, 64), ids(1, 2, 3, 4), torch.full((4,), 5.0)
    X_before = X.clone()
    with pytest.raises(ValueError, match=where):
        liger_cross_entropy_kernel[(n_rows,)](X_ptr=X, X_stride=64, Y_ptr=Y, Y_stride=1, loss_ptr=loss, n_cols=n_cols,
                                              n_non_ignore=4, ignore_index=-100, lse_square_scale=0.0,
                                              label_smoothing=0.0, reduction="mean", softcap=0.0)
    assert torch.equal(X, X_before) and torch.equal(loss, torch.full((4,), 5.0))
    with pytest.raises(ValueError, match="loss_ptr"):
        liger_cross_entropy_kernel[(4,)](X_ptr=X, X_stride=64, Y_ptr=Y, Y_stride=1, loss_ptr=loss[:2], n_cols=64,
                                         n_non_ignore=4, ignore_index=-100, lse_square_scale=0.0,
                                         label_smoothing=0.0, reduction="mean", softcap=0.0)


def test_error_is_per_call_not_sticky():
    """after a refused call the next good call works and its result is right"""
    with pytest.raises(ValueError):
        ut.embedding(ids(0, 99), T(5, 3))
    w = T(5, 3)
    assert torch.equal(ut.embedding(ids(4, 0), w), w[[4, 0]])


@pytest.mark.parametrize("op", ["rms", "flce", "attn"])
def test_float64_parameters_are_converted(op):
    """documents the current behaviour: only the primary input's dtype is
    checked; a parameter of another float dtype (float64 included) is
    converted to it, as for mixed precision, and its gradient comes back in
    its own dtype"""
    if op == "rms":
        x, w = T(3, 16, grad=True), T(16, dtype=torch.float64, grad=True)
        ut.rms_norm(x, w, in_place=False).sum().backward()
        ref_w = w.detach().float().requires_grad_(True)
        ut.rms_norm(x.detach(), ref_w, in_place=False).sum().backward()
        assert w.grad.dtype == torch.float64 and torch.equal(w.grad, ref_w.grad.double())
    elif op == "flce":
        x, w = T(4, 8, grad=True), T(10, 8, dtype=torch.float64, grad=True)
        ut.fused_linear_cross_entropy(x, w, TGT).backward()
        assert w.grad.dtype == torch.float64
    else:
        wq = T(8, dtype=torch.float64, grad=True)
        ut.attn_res(T(3, 2, 8), wq, T(8)).sum().backward()
        assert wq.grad.dtype == torch.float64
