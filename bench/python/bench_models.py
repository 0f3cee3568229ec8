"""The benchmark users would run (Liger's headline figure): a Hugging Face
model family's training step on the CPU, stock against the same weights
patched by ubgen.liger's apply function for the family
(_apply_liger_kernel_to_instance, Liger's defaults: RMSNorm, the MLP,
RoPE, the causal-LM forward with the fused linear cross entropy). Random
init, random tokens; a step is forward (model(input_ids, labels=...).loss,
as a trainer calls it), backward and an SGD update. The two models
alternate step by step; what an apply function replaces in the family's
module (apply_rotary_pos_emb, or F.cross_entropy for granite) is put back
to stock for every stock step. Reported: the median step time of the
steps after the first, and the peak resident memory a step adds, each
patched over stock; JSON in Liger's format, and a bar plot per dtype.

    bench_models.py [--families llama,qwen3,...] [--dtypes f32,bf16] [--batch B] [--seq T]
                    [--steps N] [--layers L] [--hidden H] [--vocab V] [--out FILE] [--plot DIR]

The yardstick (docs/performance.md) is `--families llama` at 4 x 256 and
8 x 1024.
"""
import argparse
import copy
import importlib
import json
import os
import statistics
import sys

import torch

import common

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from ubgen.liger.transformers import monkey_patch  # noqa: E402

# the vision-language families: their conditional-generation model
VL = ("qwen2_vl", "qwen2_5_vl")
# what a family's mini model needs beyond the common shape
EXTRA = {
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2),
    "qwen3_moe": dict(num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[]),
    "gemma2": dict(final_logit_softcapping=30.0, attn_logit_softcapping=50.0),
    "gemma3_text": dict(final_logit_softcapping=30.0),
    "falcon_h1": dict(mamba_n_groups=1, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=128),
}


def config(family, a):
    from transformers import AutoConfig
    heads = max(1, a.hidden // 64)
    inter = a.hidden * 8 // 3 // 64 * 64
    kw = dict(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=inter, num_hidden_layers=a.layers,
              num_attention_heads=heads, num_key_value_heads=heads, head_dim=64, max_position_embeddings=a.seq,
              pad_token_id=0, bos_token_id=1, eos_token_id=2, moe_intermediate_size=inter // 2,
              sliding_window=a.seq)
    if family == "falcon_h1":  # its state heads must fill expand x hidden
        kw.update(mamba_d_ssm=2 * a.hidden, mamba_n_heads=2 * a.hidden // 64, mamba_d_head=64)
    if family in VL:  # trained on text; a one-block vision tower, M-RoPE sections of the 64-wide head
        rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [16, 8, 8]}
        return AutoConfig.for_model(family, text_config=dict(kw, rope_parameters=rope),
                                    vision_config=dict(depth=1, embed_dim=64, num_heads=1, out_hidden_size=a.hidden))
    if family == "llama4":  # its causal LM is the text model's
        return AutoConfig.for_model("llama4_text", **kw, intermediate_size_mlp=inter, num_local_experts=4,
                                    interleave_moe_layer_step=2)
    return AutoConfig.for_model(family, **kw, **EXTRA.get(family, {}))


def step(model, ids, lr=1e-3):
    t0 = common.time.perf_counter()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
                p.grad = None
    return common.time.perf_counter() - t0, loss.item()


class Globals:
    """the family module's names and F.cross_entropy, as stock or as patched"""

    def __init__(self, modeling):
        self.modeling = modeling
        self.stock = (dict(vars(modeling)), torch.nn.functional.cross_entropy)

    def patched_now(self):
        self.patched = (dict(vars(self.modeling)), torch.nn.functional.cross_entropy)

    def use(self, which):
        names, ce = getattr(self, which)
        vars(self.modeling).update(names)
        torch.nn.functional.cross_entropy = ce


def run(family, dt, a):
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText
    fam = monkey_patch.FAMILIES[family]
    modeling = importlib.import_module("transformers.models.%s.modeling_%s" % (fam.module, fam.module))
    torch.manual_seed(0)
    auto = AutoModelForImageTextToText if family in VL else AutoModelForCausalLM
    stock = auto.from_config(config(family, a)).to(dt).train()
    patched = copy.deepcopy(stock)
    env = Globals(modeling)
    monkey_patch._apply_liger_kernel_to_instance(patched)
    env.patched_now()
    ids = torch.randint(3, a.vocab, (a.batch, a.seq), generator=torch.Generator().manual_seed(1))
    times, peaks, first = {"stock": [], "patched": []}, {"stock": [], "patched": []}, {}
    for i in range(a.steps + 1):
        for name, model in (("stock", stock), ("patched", patched)):
            env.use(name)
            held = {}

            def one():
                held["t"], held["loss"] = step(model, ids)

            peak = common.peak_extra_bytes(one) / 2 ** 20
            if i == 0:
                first[name] = held["loss"]
                continue
            times[name].append(held["t"])
            peaks[name].append(peak)
    env.use("stock")
    return {k: statistics.median(v) for k, v in times.items()}, {k: max(v) for k, v in peaks.items()}, first


def plot(results, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    for dtype in sorted({r["dtype"] for r in results}):
        rows = [r for r in results if r["dtype"] == dtype]
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 3.6), constrained_layout=True)
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["time_ratio"] for r in rows], 0.4, label="step time, patched / stock")
        ax.bar([x + 0.2 for x in xs], [r["memory_ratio"] for r in rows], 0.4, label="peak memory, patched / stock")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xticks(list(xs), [r["family"] for r in rows], rotation=45, ha="right")
        ax.set_title("training step, %s, batch %d x %d, %d threads" % (dtype, rows[0]["batch"], rows[0]["seq"],
                                                                      rows[0]["threads"]))
        ax.legend(fontsize=8)
        path = os.path.join(out_dir, "models_%s.png" % dtype)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print("wrote", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(monkey_patch.FAMILIES))
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--out", default="bench_models.json")
    ap.add_argument("--plot")
    a = ap.parse_args()
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    results, records = [], []
    for family in a.families.split(","):
        if family not in monkey_patch.FAMILIES:
            sys.exit("bench_models: --families %s: not one of %s" % (family, ", ".join(monkey_patch.FAMILIES)))
        for dname in a.dtypes.split(","):
            t, m, first = run(family, dtypes[dname], a)
            r = {"family": family, "dtype": dname, "batch": a.batch, "seq": a.seq, "threads": torch.get_num_threads(),
                 "torch": torch.__version__, "stock_s": t["stock"], "patched_s": t["patched"],
                 "stock_mib": m["stock"], "patched_mib": m["patched"], "time_ratio": t["patched"] / t["stock"],
                 "memory_ratio": m["patched"] / m["stock"], "first_loss": first}
            results.append(r)
            print("%-12s %-4s %d x %d: step stock %.3f s, patched %.3f s (%.3f); peak stock %.0f MiB, patched %.0f "
                  "MiB (%.3f); first loss %.5f / %.5f" % (family, dname, a.batch, a.seq, t["stock"], t["patched"],
                                                          r["time_ratio"], m["stock"], m["patched"],
                                                          r["memory_ratio"], first["stock"], first["patched"]),
                  flush=True)
            extra = {"dtype": dname, "B": a.batch, "T": a.seq, "layers": a.layers, "hidden": a.hidden,
                     "vocab": a.vocab}
            for prov, key in (("torch", "stock"), ("ubgen", "patched")):
                records.append(common.entry("train_step_" + family, prov, "full", "speed", "s", "BT", "B x T",
                                            [a.batch * a.seq], [(t[key],) * 3], extra))
                records.append(common.entry("train_step_" + family, prov, "full", "memory", "MiB", "BT", "B x T",
                                            [a.batch * a.seq], [(m[key],) * 3], extra))
            common.write_json(a.out, records)
            with open(os.path.splitext(a.out)[0] + "_summary.json", "w") as f:
                json.dump(results, f, indent=1)
    if a.plot:
        plot(results, a.plot)


if __name__ == "__main__":
    main()
