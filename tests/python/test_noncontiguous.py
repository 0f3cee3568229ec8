"""Non-contiguous inputs (transposed, strided, expanded views) are accepted:
they are made contiguous first and give exactly the results, and the
gradients, of the same values stored contiguously; the views themselves
are not modified."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import liger_cross_entropy, liger_fused_linear_cross_entropy

from _ref import DTYPE_IDS, DTYPES


def strided(t):
    """t's values in a non-contiguous view: every other element of a buffer
    twice as wide in the last dimension"""
    buf = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype)
    buf[..., ::2] = t
    v = buf[..., ::2]
    assert not v.is_contiguous() and torch.equal(v, t)
    return v


def transposed(t):
    """a 2-D t's values as the transpose of a contiguous transpose"""
    v = t.t().contiguous().t()
    assert not v.is_contiguous() and torch.equal(v, t)
    return v


def leaves(*ts):
    return [t.detach().requires_grad_(True) for t in ts]


def grads(*ts):
    return [t.grad for t in ts]


def same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert (u is None and v is None) or torch.equal(u, v)


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rms_norm(dtype, in_place):
    x, w, dy = torch.randn(3, 7, 96).to(dtype), torch.randn(96).to(dtype), torch.randn(3, 7, 96).to(dtype)
    xc, wc = leaves(x.clone(), w.clone())
    yc = ut.rms_norm(xc, wc, casting_mode="gemma", offset=1.0, in_place=in_place)
    yc.backward(dy.clone())
    xs, ws = leaves(strided(x), strided(w))
    dys = strided(dy)
    dys_before = dys.clone()
    ys = ut.rms_norm(xs, ws, casting_mode="gemma", offset=1.0, in_place=in_place)
    ys.backward(dys)
    same([ys, *grads(xs, ws)], [yc, *grads(xc, wc)])
    assert torch.equal(dys, dys_before), "a non-contiguous dY was written (dX goes to its contiguous copy)"
    # a transposed 2-D input, and the expanded gradient of .sum()
    x2 = torch.randn(64, 10).to(dtype)
    xt, = leaves(transposed(x2))
    yt = ut.rms_norm(xt, None, in_place=in_place)
    yt.sum().backward()  # dY is an expanded (stride 0) tensor of ones
    xk, = leaves(x2.clone())
    yk = ut.rms_norm(xk, None, in_place=False)
    yk.backward(torch.ones_like(yk))
    same([yt, xt.grad], [yk, xk.grad])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_embedding(dtype):
    w = torch.randn(200, 32).to(dtype)
    idx = torch.randint(0, 200, (8, 12))
    dout = torch.randn(8, 12, 32).to(dtype)
    wc, = leaves(w.clone())
    oc = ut.embedding(idx, wc, padding_idx=5)
    oc.backward(dout)
    ws, = leaves(transposed(w))
    idx_s = idx.t().contiguous().t()  # a non-contiguous index tensor
    assert not idx_s.is_contiguous()
    os_ = ut.embedding(idx_s, ws, padding_idx=5)
    os_.backward(strided(dout))
    same([os_, ws.grad], [oc, wc.grad])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_attn_res(dtype):
    V = torch.randn(4, 2, 6, 48).to(dtype)
    wq, wn = (torch.randn(48) * 0.3).to(dtype), torch.randn(48).to(dtype)
    dout = torch.randn(2, 6, 48).to(dtype)
    Vc, wqc, wnc = leaves(V.clone(), wq.clone(), wn.clone())
    hc = ut.attn_res(Vc, wqc, wnc)
    hc.backward(dout)
    # V as a permuted view [N, B, T, D] of a [B, N, T, D] buffer, the weights strided
    Vp, = leaves(V.permute(1, 0, 2, 3).contiguous().permute(1, 0, 2, 3))
    assert not Vp.is_contiguous()
    wqs, wns = leaves(strided(wq), strided(wn))
    hs = ut.attn_res(Vp, wqs, wns)
    hs.backward(strided(dout))
    same([hs, *grads(Vp, wqs, wns)], [hc, *grads(Vc, wqc, wnc)])
    # a list of non-contiguous blocks
    blocks = leaves(*[strided(V[i]) for i in range(4)])
    hl = ut.attn_res(blocks, wq, wn)
    hl.backward(dout)
    assert torch.equal(hl, hc)
    for i in range(4):
        assert torch.equal(blocks[i].grad, Vc.grad[i])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_flce(dtype, reduction):
    bt, H, V = 40, 24, 90
    x, w, b = torch.randn(bt, H).to(dtype), torch.randn(V, H).to(dtype), torch.randn(V).to(dtype)
    cw = torch.rand(V) + 0.5
    t = torch.randint(0, V, (bt,))
    t[::7] = -100
    g = torch.rand(bt) + 0.5 if reduction == "none" else torch.tensor(2.0)
    kw = dict(lse_square_scale=1e-4, label_smoothing=0.1, reduction=reduction, softcap=15.0, return_z_loss=True,
              return_token_accuracy=True, return_predicted_tokens=True)
    xc, wc, bc = leaves(x.clone(), w.clone(), b.clone())
    rc = liger_fused_linear_cross_entropy(xc, wc, t, bc, cw, **kw)
    rc.loss.backward(g)
    xs, ws, bs = leaves(transposed(x), transposed(w), strided(b))
    ts = strided(t.unsqueeze(0))[0]
    assert not ts.is_contiguous()
    rs = liger_fused_linear_cross_entropy(xs, ws, ts, bs, strided(cw), **kw)
    rs.loss.backward(strided(g.reshape(1, -1))[0] if reduction == "none" else g)
    same([rs.loss, rs.z_loss, rs.token_accuracy, rs.predicted_tokens, *grads(xs, ws, bs)],
         [rc.loss, rc.z_loss, rc.token_accuracy, rc.predicted_tokens, *grads(xc, wc, bc)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_cross_entropy(dtype, reduction):
    bt, V = 36, 70
    logits = torch.randn(bt, V).to(dtype)
    t = torch.randint(0, V, (bt,))
    t[::5] = 3
    cw = torch.rand(V) + 0.5
    kw = dict(ignore_index=3, lse_square_scale=1e-4, label_smoothing=0.1, reduction=reduction, softcap=15.0,
              return_z_loss=True, return_token_accuracy=True, return_predicted_tokens=True)
    g = torch.rand(bt).to(dtype) if reduction == "none" else torch.tensor(0.5).to(dtype)
    xc, = leaves(logits.clone())
    rc = liger_cross_entropy(xc, t, cw, **kw)
    rc.loss.backward(g)
    xs, = leaves(transposed(logits))
    before = xs.detach().clone()
    rs = liger_cross_entropy(xs, t, strided(cw), **kw)
    rs.loss.backward(g)
    assert torch.equal(xs.detach(), before)
    same([rs.loss, rs.z_loss, rs.token_accuracy, rs.predicted_tokens, xs.grad],
         [rc.loss, rc.z_loss, rc.token_accuracy, rc.predicted_tokens, xc.grad])
