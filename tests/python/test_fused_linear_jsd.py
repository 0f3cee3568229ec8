"""Fused linear JSD (ubgen.torch's FusedLinearJSDFunction / fused_linear_jsd /
FusedLinearJSD and Liger's LigerFusedLinearJSDFunction,
liger_fused_linear_jsd, LigerFusedLinearJSD) against a float64 reference
through autograd (the two matmuls, log_softmax over the temperature, the
JSD): the loss and the student's gradients, at Liger-Kernel's
test_fused_linear_jsd.py shapes (B, T, H, V = 8, 128, 1024, 4096 and 4, 423,
167, 1423, the student's hidden H / 2, rand inputs and weights), its
tolerances (f32 1e-5 / 5e-4, bf16 and f16 5e-3 / 5e-2), temperatures, betas,
ignore indices, every row ignored, accum_dtype; the generated GEMMs and
chunks of a few rows give the same loss, a grad_output other than 1 scales
the gradients, and bad arguments are refused by name."""
import pytest
import torch

import ubgen
import ubgen.torch as ut
from ubgen.liger import LigerFusedLinearJSD, LigerFusedLinearJSDFunction, liger_fused_linear_jsd

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-5, 5e-4), torch.float16: (5e-3, 5e-2), torch.bfloat16: (5e-3, 5e-2)}
LIGER_SHAPES = [(8, 128, 1024, 4096), (4, 423, 167, 1423)]
SMALL_SHAPES = [(2, 2, 8, 8), (9, 7, 41, 41)]  # Liger's functional test


def fljsd_ref(xs, ws, xt, wt, labels, beta, ignore_index, temperature):
    """float64: log_softmax of each projection over the temperature, the JSD
    of docs/semantics.md (a term whose probability is 0 is 0) per row, the
    rows not ignored averaged"""
    lq = torch.log_softmax(xs @ ws.t() / temperature, dim=-1)
    lp = torch.log_softmax(xt @ wt.t() / temperature, dim=-1)
    q, p = lq.exp(), lp.exp()
    zero = torch.zeros((), dtype=lq.dtype)
    if beta == 0:
        terms = torch.where(p == 0, zero, p * (lp - lq))
    elif beta == 1:
        terms = torch.where(q == 0, zero, q * (lq - lp))
    else:
        lm = (beta * p + (1 - beta) * q).log()
        terms = beta * torch.where(p == 0, zero, p * (lp - lm)) + (1 - beta) * torch.where(q == 0, zero, q * (lq - lm))
    rows = terms.sum(-1)
    keep = torch.ones_like(rows, dtype=torch.bool) if labels is None else labels != ignore_index
    return torch.where(keep, rows, zero).sum() / max(int(keep.sum()), 1)


def inputs(B, T, H, V, dtype, scalar=1.0, seed=0):
    """Liger's: rand weights, rand inputs times scalar, the student's hidden H / 2"""
    torch.manual_seed(seed)
    ws = torch.rand(V, H // 2).to(dtype)
    wt = torch.rand(V, H).to(dtype)
    xs = (torch.rand(B * T, H // 2) * scalar).to(dtype)
    xt = (torch.rand(B * T, H) * scalar).to(dtype)
    return xs, ws, xt, wt


def labels_with_ignored(BT, V, ignore_index, seed=1):
    """random labels, a random number (1 to BT / 2) of them ignore_index, as Liger's test"""
    g = torch.Generator().manual_seed(seed)
    label = torch.randint(0, V, (BT,), generator=g)
    k = int(torch.randint(1, max(BT // 2, 2), (1,), generator=g))
    label[torch.randperm(BT, generator=g)[:k]] = ignore_index
    return label


FNS = {
    "Function": LigerFusedLinearJSDFunction.apply,
    "liger_fused_linear_jsd": lambda xs, ws, xt, wt, lab, b, ii, t, acc: liger_fused_linear_jsd(
        student_input=xs, student_weight=ws, teacher_input=xt, teacher_weight=wt, shift_labels=lab, jsd_beta=b,
        ignore_index=ii, temperature=t, accum_dtype=acc),
    "Module": lambda xs, ws, xt, wt, lab, b, ii, t, acc: LigerFusedLinearJSD(b, ii, t, acc)(xs, ws, xt, wt, lab),
    "ut": ut.fused_linear_jsd,
}


def check(fn, xs, ws, xt, wt, labels=None, beta=0.5, ignore_index=-100, temperature=1.0, accum_dtype=None,
          grad_output=None):
    dtype = xs.dtype
    x, w = xs.clone().requires_grad_(), ws.clone().requires_grad_()
    loss = fn(x, w, xt, wt, labels, beta, ignore_index, temperature, accum_dtype)
    xr, wr = _ref.leaf(xs), _ref.leaf(ws)
    want = fljsd_ref(xr, wr, xt.double(), wt.double(), labels, beta, ignore_index, temperature)
    g = torch.ones(()) if grad_output is None else torch.tensor(grad_output)
    loss.backward(g)
    want.backward(g.double())
    atol, rtol = TOL[dtype]
    assert loss.dtype == torch.float32 and loss.shape == () and x.grad.dtype == dtype and w.grad.dtype == dtype
    _ref.assert_close(loss, want, atol, rtol, "loss")
    _ref.assert_close(x.grad, xr.grad, atol, rtol, "d_student_input")
    _ref.assert_close(w.grad, wr.grad, atol, rtol, "d_student_weight")
    return loss


TB = [(1.0, 0.5), (2.0, 0.1), (1.0, 0.0), (1.0, 1.0)]  # Liger's (temperature, beta): 0 forward KL, 1 reverse KL


@pytest.mark.parametrize("temperature, beta", TB)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", LIGER_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_correctness(shape, dtype, temperature, beta):
    if dtype == torch.float16 and (temperature, beta) != TB[0]:
        pytest.skip("f16 (not in Liger's test) at one temperature and beta")
    check(FNS["Module"], *inputs(*shape, dtype), beta=beta, temperature=temperature)


@pytest.mark.parametrize("temperature, beta, ignore_index", [(1.0, 0.5, 2), (1.0, 0.0, 2), (2.0, 0.1, 42),
                                                            (1.0, 1.0, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("shape", LIGER_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_correctness_with_ignore_index(shape, dtype, temperature, beta, ignore_index):
    B, T, H, V = shape
    check(FNS["Module"], *inputs(*shape, dtype), labels_with_ignored(B * T, V, ignore_index), beta, ignore_index,
          temperature)


@pytest.mark.parametrize("accum_dtype", [None, torch.float32])
@pytest.mark.parametrize("temperature, beta, ignore_index", [(1.0, 0.5, -100), (2.0, 0.1, 42)])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", sorted(FNS))
def test_correctness_functional(fn, shape, dtype, temperature, beta, ignore_index, accum_dtype):
    B, T, H, V = shape
    check(FNS[fn], *inputs(*shape, dtype, scalar=0.5), labels_with_ignored(B * T, V, ignore_index), beta,
          ignore_index, temperature, accum_dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("temperature, beta, ignore_index", [(1.0, 0.5, 2), (2.0, 0.1, 42)])
def test_correctness_all_ignored(dtype, temperature, beta, ignore_index):
    B, T, H, V = LIGER_SHAPES[1]
    xs, ws, xt, wt = inputs(B, T, H, V, dtype)
    x, w = xs.clone().requires_grad_(), ws.clone().requires_grad_()
    loss = LigerFusedLinearJSD(beta, ignore_index, temperature)(x, w, xt, wt, torch.full((B * T,), ignore_index))
    loss.backward()
    assert loss.item() == 0 and not x.grad.any() and not w.grad.any()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("grad_output", [2.0, -0.5])
def test_not_last_layer(dtype, grad_output):
    B, T, H, V = SMALL_SHAPES[1]
    check(FNS["ut"], *inputs(B, T, H, V, dtype), labels_with_ignored(B * T, V, 3), 0.5, 3, 1.5,
          grad_output=grad_output)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_generated_gemms_and_small_chunks(restore_context, dtype):
    """the generated GEMM passes in chunks of all rows and of 5 rows (a
    chunk's variant name leaves out gemm=generated): the loss is the rows'
    sum in row order over the whole call, so the chunk does not change its
    bits"""
    B, T, H, V = 3, 11, 40, 300
    args = inputs(B, T, H, V, dtype)
    labels = labels_with_ignored(B * T, V, 7)
    ctx = ubgen.configure(threads=2)
    losses = {}
    for variant in ("gemm=generated", "chunk=5"):
        ctx.set_variant("fused_linear_jsd", "chunk", variant)
        losses[variant] = check(FNS["ut"], *args, labels, 0.9, 7, 0.7).detach()
    assert torch.equal(losses["gemm=generated"], losses["chunk=5"])


def test_no_gradient_wanted():
    """an input without requires_grad: no dx or dweight computed, the same loss"""
    xs, ws, xt, wt = inputs(*SMALL_SHAPES[1], torch.float32)
    with_grads = ut.fused_linear_jsd(xs.clone().requires_grad_(), ws.clone().requires_grad_(), xt, wt)
    assert torch.equal(ut.fused_linear_jsd(xs, ws, xt, wt), with_grads.detach())


def test_bad_arguments():
    xs, ws, xt, wt = inputs(*SMALL_SHAPES[1], torch.float32)
    with pytest.raises(ValueError, match="temperature"):
        ut.fused_linear_jsd(xs, ws, xt, wt, temperature=0.0)
    with pytest.raises(ValueError, match="temperature cannot be 0"):
        LigerFusedLinearJSD(temperature=0)
    with pytest.raises(ValueError, match="student_weight"):
        ut.fused_linear_jsd(xs, ws[:, 1:], xt, wt)
    with pytest.raises(ValueError, match="teacher_input"):
        ut.fused_linear_jsd(xs, ws, xt[1:], wt)
    with pytest.raises(ValueError, match="shift_labels"):
        ut.fused_linear_jsd(xs, ws, xt, wt, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="jsd_beta"):
        ut.fused_linear_jsd(xs, ws, xt, wt, jsd_beta=1.5)
    with pytest.raises(TypeError, match="student_input"):
        ut.fused_linear_jsd(xs.double(), ws, xt, wt)
