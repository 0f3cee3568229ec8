"""The fused linear cross entropy as a user times it: ubgen.liger's
LigerFusedLinearCrossEntropyLoss against PyTorch eager (logits = x W^T in
the input's dtype, upcast to f32, F.cross_entropy), forward and backward,
on the installed torch; and the ceiling of both, torch's own three GEMMs
of the step (logits = x W^T, dx = G W, dW = G^T x) on the whole batch and
on the chunks of rows ubgen's call ran (dW summed in place, in the dtype).

    bench_flce.py [--out FILE] [--reps N] [--quick] [--dtypes f32,bf16]
                  [--shapes BTxHxV,...] [--variants NAME;...]

Shapes: BT in 1024, 2048, 4096, 8192 at H = 4096 and V in 32000, 128256,
and BT 1024, H 512, V 32000 (--quick: the last and BT 1024 at H 4096, V
32000). Providers run in one process with the same threads (torch's
count; ubgen's default follows it), interleaved repetition by repetition;
speed is the median of the repetitions (20th and 80th percentiles kept).
--variants adds ubgen with flce.chunk forced to each name (for example
gemm=generated, chunk=512,gemm=onednn). Memory, after every timing (each
large block fresh from the kernel, common.memory_mode): the resident
memory a full step adds at its peak less the gradients dx and dW, which
both must hold. Writes Liger's JSON format (plot.py draws it)."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import common

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import ubgen  # noqa: E402
from ubgen.liger.transformers import LigerFusedLinearCrossEntropyLoss  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
SHAPES = [(bt, 4096, v) for v in (32000, 128256) for bt in (1024, 2048, 4096, 8192)] + [(1024, 512, 32000)]
QUICK = [(1024, 512, 32000), (1024, 4096, 32000)]


def inputs(BT, H, V, dt):
    torch.manual_seed(0)
    x = (torch.randn(BT, H) / H ** 0.5).to(dt).requires_grad_()
    W = (torch.randn(V, H) / H ** 0.5).to(dt).requires_grad_()
    t = torch.randint(0, V, (BT,))
    return x, W, t


def full_step(loss_of, x, W):
    """forward and backward; the grads dropped after"""
    t0 = common.time.perf_counter()
    loss = loss_of()
    loss.backward()
    sec = common.time.perf_counter() - t0
    x.grad = W.grad = None
    return {"full": sec}


def torch_loss(x, W, t):
    return F.cross_entropy((x @ W.t()).float(), t)


def torch_gemms(x, W, G):
    """torch's three GEMMs of the step alone, on the whole batch"""
    t0 = common.time.perf_counter()
    x @ W.t()
    G @ W
    G.t() @ x
    return {"full": common.time.perf_counter() - t0}


def torch_gemms_chunked(x, W, G, chunk, dW):
    """the same three GEMMs on chunks of rows, as the fused loss runs them"""
    t0 = common.time.perf_counter()
    dW.zero_()
    for o in range(0, x.shape[0], chunk):
        xc, gc = x[o:o + chunk], G[o:o + chunk]
        xc @ W.t()
        gc @ W
        dW.addmm_(gc.t(), xc)
    return {"full": common.time.perf_counter() - t0}


def chunk_of_last_call():
    """the rows per chunk of ubgen's last FLCE call (its last variant ends
    with ";chunk=N (where N came from)")"""
    return int(ubgen.context().last_variant().rsplit("chunk=", 1)[1].split()[0])


def providers(BT, H, V, dt, variants):
    x, W, t = inputs(BT, H, V, dt)
    G = torch.randn(BT, V).to(dt) / V
    ours = LigerFusedLinearCrossEntropyLoss()
    ran = {}

    def ubgen_step():  # and the chunk it ran, for torch-gemms-chunked (timed after it)
        r = full_step(lambda: ours(W, x, t), x, W)
        ran["chunk"] = chunk_of_last_call()
        return r

    cases = {
        "torch": lambda: full_step(lambda: torch_loss(x, W, t), x, W),
        "ubgen": ubgen_step,
    }
    for name in variants:
        cases["ubgen:" + name] = forced(name, lambda: full_step(lambda: ours(W, x, t), x, W))
    cases["torch-gemms"] = lambda: torch_gemms(x.detach(), W.detach(), G)
    dW = torch.empty_like(W)
    cases["torch-gemms-chunked"] = lambda: torch_gemms_chunked(x.detach(), W.detach(), G, ran["chunk"], dW)
    grads = (BT * H + V * H) * x.element_size()
    return cases, grads


def forced(name, fn):
    """fn run with flce.chunk forced to name on the process context"""
    def run():
        ubgen.context().set_variant("flce", "chunk", name)
        try:
            return fn()
        finally:
            ubgen.context().set_variant("flce", "chunk", None)
    return run


def speed(shapes, dtypes, variants, reps, records, save):
    for dname in dtypes:
        for BT, H, V in shapes:
            cases, _ = providers(BT, H, V, DTYPES[dname], variants)
            got = common.interleaved(cases, reps)
            med = {p: common.percentiles(m["full"]) for p, m in got.items()}
            ratios = {p: med[p][0] / med["torch"][0] for p in med}
            print("flce %-4s BT=%-5d H=%-5d V=%-6d full step: %s" % (
                dname, BT, H, V, "  ".join("%s %.0f ms (%.3fx)" % (p, med[p][0], ratios[p]) for p in med)),
                flush=True)
            for p, ys in med.items():
                records.add("speed", dname, H, V, p, BT, ys, round(ratios[p], 3))
            save()
            del cases


def memory(shapes, dtypes, records, save):
    common.memory_mode()
    for dname in dtypes:
        for BT, H, V in shapes:
            cases, grads = providers(BT, H, V, DTYPES[dname], [])
            mem = {}
            for p in ("torch", "ubgen"):
                cases[p]()  # warmed up: compiled, primitives made
                mem[p] = max(common.peak_extra_bytes(cases[p]) - grads, 0) / 2 ** 20
            share = mem["ubgen"] / mem["torch"] if mem["torch"] else 0
            print("flce %-4s BT=%-5d H=%-5d V=%-6d peak beyond the gradients: ubgen %.0f MB, torch %.0f MB (%.1f%%)" % (
                dname, BT, H, V, mem["ubgen"], mem["torch"], 100 * share), flush=True)
            for p, mb in mem.items():
                records.add("memory", dname, H, V, p, BT, (mb, mb, mb), round(mb / mem["torch"], 4) if mem["torch"] else 0)
            save()
            del cases


class Records:
    """the points measured, as Liger's JSON records: one per (metric,
    dtype, H, V, provider), its x values the BTs (plot.py draws one PNG per
    kernel name and dtype: the name carries H and V)"""

    def __init__(self):
        self.points = {}  # (metric, dtype, H, V, provider) -> [(BT, (p50, p20, p80), over torch)]

    def add(self, metric, dtype, H, V, provider, BT, ys, over_torch):
        self.points.setdefault((metric, dtype, H, V, provider), []).append((BT, ys, over_torch))

    def json(self):
        out = []
        for (metric, dtype, H, V, prov), pts in self.points.items():
            pts.sort()
            extra = {"H": H, "V": V, "dtype": dtype, "threads": torch.get_num_threads(),
                     "over_torch": [r for _, _, r in pts]}
            if metric == "memory":
                extra["what"] = "peak resident memory of a full step beyond the gradients dx and dW"
            out.append(common.entry("fused_linear_cross_entropy_H%d_V%d" % (H, V), prov, "full", metric,
                                    "ms" if metric == "speed" else "MB", "BT", "B x T", [b for b, _, _ in pts],
                                    [y for _, y, _ in pts], extra))
        return out


def parse_shapes(text):
    try:
        return [tuple(int(v) for v in s.split("x")) for s in text.split(",")]
    except ValueError:
        sys.exit("bench_flce: --shapes %r: want BTxHxV[,BTxHxV...]" % text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench_flce.json")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--shapes")
    ap.add_argument("--variants", default="")
    ap.add_argument("--no-memory", action="store_true")
    a = ap.parse_args()
    shapes = parse_shapes(a.shapes) if a.shapes else QUICK if a.quick else SHAPES
    dtypes = a.dtypes.split(",")
    for d in dtypes:
        if d not in DTYPES:
            sys.exit("bench_flce: --dtypes %s: not one of %s" % (d, ", ".join(DTYPES)))
    variants = [v for v in a.variants.split(";") if v]
    print("bench_flce: torch %s, %d threads, %s" % (torch.__version__, torch.get_num_threads(), common.cpu_name()))
    records = Records()

    def save():  # after every point: a run cut short keeps what it measured
        common.write_json(a.out, records.json())

    speed(shapes, dtypes, variants, a.reps, records, save)
    if not a.no_memory:
        memory(shapes, dtypes, records, save)
    save()
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()
