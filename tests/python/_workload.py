"""A fixed mixed workload over every op, forward and backward, for the tests
that compare runs bit for bit (backends, thread counts, Python threads,
non-contiguous inputs)."""
import torch

import ubgen.torch as ut


def make_inputs(dtype=torch.float32, seed=1234):
    """the tensors of one round, drawn from their own generator"""
    g = torch.Generator().manual_seed(seed)

    def randn(*s):
        return torch.randn(*s, generator=g).to(dtype)

    bt, H, V = 96, 64, 300
    return dict(
        dtype=dtype,
        rms_x=randn(4, 24, 192), rms_w=randn(192), rms_dy=randn(4, 24, 192),
        emb_w=randn(500, 48), emb_ids=torch.randint(0, 500, (6, 40), generator=g), emb_dout=randn(6, 40, 48),
        ar_v=randn(5, 2, 12, 96), ar_wq=randn(96) * 0.3, ar_wn=1 + 0.1 * randn(96), ar_dout=randn(2, 12, 96),
        ce_x=randn(bt, H), ce_w=randn(V, H) * 0.3, ce_b=randn(V), ce_cw=torch.rand(V, generator=g) + 0.5,
        ce_t=torch.where(torch.rand(bt, generator=g) < 0.2, torch.tensor(-100),
                         torch.randint(0, V, (bt,), generator=g)),
        ce_g=torch.rand(bt, generator=g) + 0.5,
        logits=randn(bt, V),
    )


def _leaf(t):
    return t.detach().clone().requires_grad_(True)


def rms_norm(inp):
    x, w = _leaf(inp["rms_x"]), _leaf(inp["rms_w"])
    y = ut.rms_norm(x, w, eps=1e-6, offset=0.0, casting_mode="llama", in_place=False)
    y.backward(inp["rms_dy"])
    x2 = _leaf(inp["rms_x"])
    y2 = ut.rms_norm(x2, None, eps=1e-5, offset=1.0, casting_mode="gemma", in_place=True)
    y2.backward(inp["rms_dy"].clone())
    return dict(rms_y=y, rms_dx=x.grad, rms_dw=w.grad, rms_y_gemma=y2, rms_dx_gemma=x2.grad)


def embedding(inp):
    w = _leaf(inp["emb_w"])
    out = ut.embedding(inp["emb_ids"], w, padding_idx=3)
    out.backward(inp["emb_dout"])
    return dict(emb_out=out, emb_dw=w.grad)


def attn_res(inp):
    v, wq, wn = _leaf(inp["ar_v"]), _leaf(inp["ar_wq"]), _leaf(inp["ar_wn"])
    h = ut.attn_res(v, wq, wn, eps=1e-6)
    h.backward(inp["ar_dout"])
    return dict(ar_h=h, ar_dv=v.grad, ar_dwq=wq.grad, ar_dwn=wn.grad)


def flce(inp):
    out = {}
    for red in ("mean", "none"):
        x, w, b = _leaf(inp["ce_x"]), _leaf(inp["ce_w"]), _leaf(inp["ce_b"])
        loss, z, acc, pred = ut.fused_linear_cross_entropy(
            x, w, inp["ce_t"], b, inp["ce_cw"], ignore_index=-100, lse_square_scale=1e-4, label_smoothing=0.1,
            reduction=red, softcap=20.0, return_z_loss=True, return_token_accuracy=True,
            return_predicted_tokens=True)
        loss.backward(torch.tensor(1.5) if red == "mean" else inp["ce_g"])
        out.update({"flce_%s_%s" % (red, k): v for k, v in
                    dict(loss=loss, z=z, acc=acc, pred=pred, dx=x.grad, dw=w.grad, db=b.grad).items()})
    return out


def cross_entropy(inp):
    x = _leaf(inp["logits"])
    loss, z, acc, pred = ut.cross_entropy(x, inp["ce_t"], inp["ce_cw"], ignore_index=-100, lse_square_scale=1e-4,
                                          label_smoothing=0.1, reduction="sum", softcap=20.0, return_z_loss=True,
                                          return_token_accuracy=True, return_predicted_tokens=True)
    loss.backward(torch.tensor(0.75))
    return dict(ce_loss=loss, ce_z=z, ce_acc=acc, ce_pred=pred, ce_dx=x.grad)


OPS = (rms_norm, embedding, attn_res, flce, cross_entropy)


def run_all(inp, ops=OPS):
    out = {}
    for op in ops:
        out.update({k: v.detach() for k, v in op(inp).items()})
    return out


def assert_bitwise_equal(a, b, what=""):
    assert sorted(a) == sorted(b)
    bad = [k for k in a if not (a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and torch.equal(a[k], b[k]))]
    assert not bad, "%s: not bitwise equal: %s" % (what, ", ".join(bad))
