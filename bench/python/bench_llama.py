"""The yardstick: a training step of a Hugging Face LlamaForCausalLM on the
CPU, stock against the same model patched by ubgen.liger's
apply_liger_kernel_to_llama(model=...) with Liger's defaults (RMSNorm,
SwiGLU and the causal-LM forward with the fused linear cross entropy;
RoPE stays transformers' until ubgen has a rotary kernel). Random init,
random tokens; a step is forward (model(input_ids, labels=...).loss, as a
trainer calls it), backward and an SGD update. Both models start from the
same weights; the steps alternate, stock then patched, and the median of
the steps after the first (warm-up) is reported with each one's peak
resident memory over the step.

    bench_llama.py [--dtype f32|bf16] [--batch B] [--seq T] [--steps N]
                   [--layers L] [--hidden H] [--vocab V]
"""
import argparse
import copy
import os
import statistics
import sys

import torch

import common

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from ubgen.liger.transformers import apply_liger_kernel_to_llama  # noqa: E402


def build(a, dt):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.hidden * 8 // 3 // 64 * 64,
                      num_hidden_layers=a.layers, num_attention_heads=max(1, a.hidden // 64),
                      num_key_value_heads=max(1, a.hidden // 64), max_position_embeddings=a.seq)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(dt).train(), cfg


def patch(model):
    apply_liger_kernel_to_llama(model=model)
    return model


def loss_of(model, ids):
    return model(input_ids=ids, labels=ids).loss


def step(model, ids, lr=1e-3):
    t0 = common.time.perf_counter()
    loss = loss_of(model, ids)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
                p.grad = None
    return common.time.perf_counter() - t0, loss.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args()
    dt = torch.float32 if a.dtype == "f32" else torch.bfloat16
    stock, _ = build(a, dt)
    patched = patch(copy.deepcopy(stock))
    ids = torch.randint(0, a.vocab, (a.batch, a.seq))
    times = {"stock": [], "patched": []}
    peaks = {"stock": [], "patched": []}
    losses = {}
    for i in range(a.steps + 1):
        for name, model in (("stock", stock), ("patched", patched)):
            holder = {}

            def one():
                holder["t"], holder["loss"] = step(model, ids)

            peak = common.peak_extra_bytes(one) / 2 ** 20
            if i == 0:
                losses[name] = holder["loss"]
                continue
            times[name].append(holder["t"])
            peaks[name].append(peak)
    s, p = statistics.median(times["stock"]), statistics.median(times["patched"])
    print("llama %s, %d layers, hidden %d, vocab %d, batch %d x %d, torch %s, %d threads:" % (
        a.dtype, a.layers, a.hidden, a.vocab, a.batch, a.seq, torch.__version__, torch.get_num_threads()))
    print("  first loss: stock %.6f, patched %.6f" % (losses["stock"], losses["patched"]))
    print("  step: stock %.3f s, patched %.3f s: patched/stock %.3f" % (s, p, p / s))
    print("  peak over a step: stock %.0f MiB, patched %.0f MiB: patched/stock %.3f" % (
        max(peaks["stock"]), max(peaks["patched"]), max(peaks["patched"]) / max(peaks["stock"])))


if __name__ == "__main__":
    main()
