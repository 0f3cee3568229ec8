"""The generalized JSD (ubgen.torch's JSDFunction / jsd / JSD and Liger's
LigerJSDFunction, liger_jsd, LigerJSD) against a float64 reference through
autograd: the loss and its gradient over _input, at Liger-Kernel's
test_jsd.py shapes (2 x 1024 x 3200 and 41 x 401 x 1271), dtypes and
tolerances (f32 1e-7 / 1e-6, f16 1e-3 / 1e-3, bf16 1e-7 / 5e-2), its beta
values (0 and 1 the forward and reverse KL), ignore_index 2 and 42 with
some rows ignored, every row ignored, a grad_output other than 1 (the loss
not the last layer) and the symmetry of beta = 0.5. Inputs are
log_softmax(randn) rows, as Liger's."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerJSD, LigerJSDFunction, liger_jsd

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-7, 1e-6), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-7, 5e-2)}
LIGER_SHAPES = [(2, 1024, 3200), (41, 401, 1271)]
SMALL_SHAPES = [(2, 64, 3200), (3, 7, 1271)]  # the beta and ignore_index sweeps: Liger's V, fewer rows


def jsd_ref(log_q, log_p, beta, labels=None, ignore_index=-100):
    """float64 JSD as docs/semantics.md defines it: a term whose probability
    is 0 is 0"""
    q, p = log_q.exp(), log_p.exp()
    zero = torch.zeros((), dtype=log_q.dtype)
    if beta == 0:
        terms = torch.where(p == 0, zero, p * (log_p - log_q))
    elif beta == 1:
        terms = torch.where(q == 0, zero, q * (log_q - log_p))
    else:
        log_m = (beta * p + (1 - beta) * q).log()
        terms = (beta * torch.where(p == 0, zero, p * (log_p - log_m)) +
                 (1 - beta) * torch.where(q == 0, zero, q * (log_q - log_m)))
    rows = terms.sum(-1)
    keep = torch.ones_like(rows, dtype=torch.bool) if labels is None else labels != ignore_index
    n = int(keep.sum())
    return torch.where(keep, rows, zero).sum() / max(n, 1)


def inputs(B, T, V, dtype, seed=0):
    torch.manual_seed(seed)
    log_q = torch.randn(B * T, V).log_softmax(dim=-1).to(dtype)
    log_p = torch.randn(B * T, V).log_softmax(dim=-1).to(dtype)
    return log_q, log_p


def labels_with_ignored(BT, V, ignore_index, seed=1):
    """random labels, a random number (1 to BT / 2) of them ignore_index, as Liger's test"""
    g = torch.Generator().manual_seed(seed)
    label = torch.randint(0, V, (BT,), generator=g)
    k = int(torch.randint(1, max(BT // 2, 2), (1,), generator=g))
    label[torch.randperm(BT, generator=g)[:k]] = ignore_index
    return label


def check(fn, log_q, log_p, beta, labels=None, ignore_index=-100, grad_output=None):
    dtype = log_q.dtype
    x = log_q.clone().requires_grad_()
    loss = fn(x, log_p, labels, beta, ignore_index)
    xr = _ref.leaf(log_q)
    want = jsd_ref(xr, log_p.double(), beta, labels, ignore_index)
    g = torch.ones((), dtype=dtype) if grad_output is None else torch.tensor(grad_output, dtype=dtype)
    loss.backward(g)
    want.backward(g.double())
    atol, rtol = TOL[dtype]
    assert loss.dtype == dtype and loss.shape == () and x.grad.dtype == dtype
    _ref.assert_close(loss, want, atol, rtol, "loss")
    _ref.assert_close(x.grad, xr.grad, atol, rtol, "d_input")
    return loss


FNS = {
    "Function": LigerJSDFunction.apply,
    "liger_jsd": lambda x, t, lab, b, ii: liger_jsd(x, t, shift_labels=lab, beta=b, ignore_index=ii),
    "Module": lambda x, t, lab, b, ii: LigerJSD(beta=b, ignore_index=ii)(x, t, lab),
    "ut": ut.jsd,
}


# Liger's 41 x 401 x 1271 (21M elements; 20 s of float64 reference a dtype) in f32 only: its V is SMALL_SHAPES'
LIGER_CASES = [(LIGER_SHAPES[0], dt) for dt in DTYPES] + [(LIGER_SHAPES[1], torch.float32)]


@pytest.mark.parametrize("shape, dtype", LIGER_CASES,
                         ids=["x".join(map(str, s)) + "-" + str(dt)[len("torch."):] for s, dt in LIGER_CASES])
def test_liger_shapes(shape, dtype):
    log_q, log_p = inputs(*shape, dtype)
    out = check(FNS["Module"], log_q, log_p, 0.5)
    # beta = 0.5 is symmetric: the teacher as the input gives the same loss
    swapped = LigerJSD()(log_p, log_q)
    _ref.assert_close(swapped, out.detach().double(), *TOL[dtype], "symmetry")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_beta(beta, shape, dtype):
    check(FNS["Module"], *inputs(*shape, dtype), beta)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("ignore_index", [2, 42])
@pytest.mark.parametrize("fn", sorted(FNS))
def test_ignore_index(fn, ignore_index, shape, dtype):
    B, T, V = shape
    check(FNS[fn], *inputs(B, T, V, dtype), 0.5, labels_with_ignored(B * T, V, ignore_index), ignore_index)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("beta, ignore_index, grad_output", [(0.5, 2, 2.0), (0.1, 42, 1.0), (1.0, -100, -0.5)])
def test_not_last_layer(beta, ignore_index, grad_output, dtype):
    B, T, V = SMALL_SHAPES[0]
    check(FNS["liger_jsd"], *inputs(B, T, V, dtype), beta, labels_with_ignored(B * T, V, ignore_index),
          ignore_index, grad_output)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_f32_teacher(dtype):
    """an f32 target with a half-precision input is read in f32, not rounded
    to the input's dtype (Liger's kernel loads each in its own dtype): the
    gradient within the rounding of its own dtype (half an ulp and the f16
    subnormals' step), where a target rounded to it would be 0.4% (f16) or
    3% (bf16) off"""
    log_q, _ = inputs(1, 4, 300, dtype)
    _, log_p = inputs(1, 4, 300, torch.float32, seed=3)
    check(FNS["ut"], log_q, log_p, 0.5)
    x = log_q.clone().requires_grad_()
    ut.jsd(x, log_p).backward()
    xr = _ref.leaf(log_q)
    jsd_ref(xr, log_p.double(), 0.5).backward()
    half_ulp = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]
    _ref.assert_close(x.grad, xr.grad, 6e-8, 1.01 * half_ulp, "d_input")


def test_every_row_ignored():
    log_q, log_p = inputs(2, 10, 32, torch.bfloat16)
    x = log_q.clone().requires_grad_()
    loss = LigerJSD()(x, log_p, torch.full((20,), -100))
    loss.backward()
    assert loss.item() == 0 and loss.dtype == torch.bfloat16 and not x.grad.any()


def test_masked_tokens_add_nothing():
    """a log-probability of -Inf (a masked token) in either row: a finite
    loss and gradient where torch's 0 * -Inf is NaN (the gradient written
    out, as autograd's through torch.where is NaN there too); reverse KL
    is +Inf where q > 0 = p, as KL(Q || P) is"""
    log_q, log_p = inputs(1, 4, 16, torch.float32)
    log_q[:, :3] = -float("inf")
    log_p[:, 1:4] = -float("inf")
    log_q, log_p = log_q.log_softmax(-1), log_p.log_softmax(-1)
    lq, lp = log_q.double(), log_p.double()
    q, p = lq.exp(), lp.exp()
    for beta in (0.5, 0.1, 1.0):
        x = log_q.clone().requires_grad_()
        loss = ut.jsd(x, log_p, beta=beta)
        loss.backward()
        if beta == 1:
            want = torch.where(q == 0, 0.0, q * (lq - lp) + q)
        else:
            want = torch.where(q == 0, 0.0, (1 - beta) * q * (lq - (beta * p + (1 - beta) * q).log()))
        _ref.assert_close(loss, jsd_ref(lq, lp, beta), 1e-7, 1e-6, "loss")
        _ref.assert_close(x.grad, want / 4, 1e-7, 1e-6, "d_input")
        assert torch.isfinite(loss) == (beta != 1)


def test_no_grad_writes_no_gradient():
    log_q, log_p = inputs(1, 8, 100, torch.float32)
    with torch.no_grad():
        loss = ut.jsd(log_q, log_p)
    _ref.assert_close(loss, jsd_ref(log_q.double(), log_p.double(), 0.5), 1e-7, 1e-6, "loss")


def test_bad_inputs_are_refused():
    log_q, log_p = inputs(1, 4, 8, torch.float32)
    with pytest.raises(ValueError, match="beta"):
        ut.jsd(log_q, log_p, beta=1.5)
    with pytest.raises(ValueError, match="shift_labels"):
        ut.jsd(log_q, log_p, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="target"):
        ut.jsd(log_q, log_p[:, :4])
    with pytest.raises(TypeError, match="float64"):
        ut.jsd(log_q.double(), log_p)
    with pytest.raises(TypeError, match="target"):
        ut.jsd(log_q, torch.zeros(4, 8, dtype=torch.long))
