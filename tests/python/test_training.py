"""The Modules in a tiny training loop: forward, backward, optimizer step.
Every parameter gets a finite, non-zero gradient and changes, and a few
steps on a fixed batch lower the loss."""
import pytest
import torch
import torch.nn.functional as F

import ubgen.torch as ut
from ubgen.liger import (LigerCrossEntropyLoss, LigerEmbedding, LigerFusedLinearCrossEntropyLoss, LigerRMSNorm,
                         liger_attn_res)

import _ref

V, D, N_BLOCKS, B, T = 97, 32, 3, 2, 6


class TinyLM(torch.nn.Module):
    """embedding -> N blocks (tanh(linear)) mixed by AttnRes -> RMSNorm ->
    FLCE head; and the same head's logits through CrossEntropyLoss"""

    def __init__(self, liger, dtype):
        super().__init__()
        self.liger = liger
        self.emb = (LigerEmbedding(V, D, padding_idx=0) if liger else ut.Embedding(V, D, padding_idx=0)).to(dtype)
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(D, D, dtype=dtype) for _ in range(N_BLOCKS)])
        self.attn = ut.AttnRes(D, dtype=dtype)
        with torch.no_grad():
            self.attn.w_query.normal_(0, 0.5)
        self.norm = (LigerRMSNorm(D, casting_mode="gemma", offset=1.0, in_place=True) if liger
                     else ut.RMSNorm(D, casting_mode="llama", in_place=False)).to(dtype)
        self.head = torch.nn.Linear(D, V, bias=True, dtype=dtype)
        self.flce = (LigerFusedLinearCrossEntropyLoss(lse_square_scale=1e-4, label_smoothing=0.05) if liger
                     else ut.FusedLinearCrossEntropyLoss(lse_square_scale=1e-4, label_smoothing=0.05))
        self.ce = LigerCrossEntropyLoss(label_smoothing=0.05) if liger else ut.CrossEntropyLoss(label_smoothing=0.05)

    def forward(self, ids, target):
        h = self.emb(ids)
        outs = []
        for blk in self.blocks:
            h = torch.tanh(blk(h))
            outs.append(h)
        if self.liger:
            mixed = liger_attn_res(outs, self.attn.w_query, self.attn.w_norm)
        else:
            mixed = self.attn(torch.stack(outs))
        x = self.norm(mixed + h).reshape(-1, D)
        loss = self.flce(self.head.weight, x, target.reshape(-1), self.head.bias)
        logits = x @ self.head.weight.t() + self.head.bias
        return loss + 0.5 * self.ce(logits, target.reshape(-1))

    def reference(self, ids, target):
        """the same loss in float64 torch ops, on float64 leaf copies of the
        parameters: (loss, {name: leaf})"""
        p = {n: _ref.leaf(q) for n, q in self.named_parameters()}
        h = F.embedding(ids, p["emb.weight"], padding_idx=0)
        outs = []
        for i in range(N_BLOCKS):
            h = torch.tanh(F.linear(h, p["blocks.%d.weight" % i], p["blocks.%d.bias" % i]))
            outs.append(h)
        mixed = _ref.attn_res(torch.stack(outs), p["attn.w_query"], p["attn.w_norm"], 1e-6, torch.float32)
        mode, offset = ("gemma", 1.0) if self.liger else ("llama", 0.0)
        x = _ref.rms_norm(mixed + h, p["norm.weight"], 1e-6, offset, mode, torch.float32).reshape(-1, D)
        t = target.reshape(-1)
        loss, _ = _ref.flce(x, p["head.weight"], t, p["head.bias"], lse_square_scale=1e-4, label_smoothing=0.05)
        ce, _ = _ref.cross_entropy(x @ p["head.weight"].t() + p["head.bias"], t, label_smoothing=0.05)
        return loss + 0.5 * ce, p


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("liger", [False, True], ids=["ubgen.torch", "ubgen.liger"])
def test_training_steps(liger, dtype):
    model = TinyLM(liger, dtype)
    ids = torch.randint(1, V, (B, T))
    ids[0, :2] = 0  # padding tokens
    target = torch.randint(0, V, (B, T))
    target[1, -1] = -100
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}

    losses = []
    for step in range(6):
        opt.zero_grad(set_to_none=True)
        loss = model(ids, target)
        assert loss.shape == () and torch.isfinite(loss)
        loss.backward()
        if step == 0:
            for n, p in model.named_parameters():
                assert p.grad is not None, n
                assert p.grad.dtype == p.dtype, n
                assert torch.isfinite(p.grad).all(), n
                assert p.grad.abs().sum() > 0, n
            assert torch.count_nonzero(model.emb.weight.grad[0]) == 0  # the padding row learns nothing
            if dtype == torch.float32:  # the step's loss and every gradient, against float64 torch
                ref_loss, ref_p = model.reference(ids, target)
                ref_loss.backward()
                _ref.assert_close(loss, ref_loss, 1e-5, 1e-5, "loss")
                for n, q in model.named_parameters():
                    _ref.assert_close(q.grad, ref_p[n].grad, 1e-5, 1e-3, n + ".grad")
        opt.step()
        losses.append(loss.item())

    for n, p in model.named_parameters():
        changed = ~torch.eq(p.detach(), before[n])
        assert changed.any(), "%s did not change" % n
    assert torch.equal(model.emb.weight[0].detach(), before["emb.weight"][0])
    assert losses[-1] < losses[0], losses


def test_adam_step_rms_norm_weight_only():
    """the RMSNorm weight alone, trained with Adam to scale the output"""
    torch.manual_seed(0)
    norm = ut.RMSNorm(16)
    opt = torch.optim.Adam(norm.parameters(), lr=0.05)
    x = torch.randn(8, 16)
    want = 2 * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    first = None
    for _ in range(40):
        opt.zero_grad()
        loss = (norm(x) - want).pow(2).mean()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.05 * first
    assert torch.allclose(norm.weight.detach(), torch.full((16,), 2.0), atol=0.3)
