"""Threads that do not fight: a loop that alternates a ubgen op and a torch
op against the sum of each loop alone, on the same threads (ubgen's
process context follows torch's count, docs/python.md "Threads").
Oversubscription (two OpenMP pools each taking every core, or threads
spinning while the other library runs) shows as the alternating loop
taking longer than the sum; this prints the ratio (target: <= 1.10).

    bench_threads.py [--reps N] [--iters N]
"""
import argparse
import os
import statistics
import sys

import torch

import common

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import ubgen.torch as ut  # noqa: E402


def loop(fns, iters):
    t0 = common.time.perf_counter()
    for _ in range(iters):
        for f in fns:
            f()
    return common.time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    x, w = torch.randn(512, 4096), torch.ones(4096)  # RMSNorm of a Llama block's rows
    p, q = torch.randn(512, 1024), torch.randn(1024, 1024)  # one of its GEMMs, smaller

    def ours():
        ut.rms_norm(x, w)

    def theirs():
        p @ q

    loop([ours, theirs], 20)
    ratios = []
    for _ in range(a.reps):
        alone_u, alone_t, both = loop([ours], a.iters), loop([theirs], a.iters), loop([ours, theirs], a.iters)
        ratios.append(both / (alone_u + alone_t))
        print("ubgen alone %.3f s, torch alone %.3f s, alternating %.3f s: %.3fx the sum" % (
            alone_u, alone_t, both, ratios[-1]), flush=True)
    print("bench_threads: torch %s, %d threads: alternating / sum, median %.3f (target <= 1.10)" % (
        torch.__version__, torch.get_num_threads(), statistics.median(ratios)))


if __name__ == "__main__":
    main()
