"""How ubgen's threads meet torch's (docs/python.md, "Threads"): by
default the process context takes torch's intra-op thread count and
follows torch.set_num_threads; configure(threads=) and UBGEN_THREADS win
over it; and libubgen and torch run on one OpenMP runtime, so their
thread pools are one pool and never oversubscribe the cores (the time of
a loop alternating both is measured by bench/python/bench_threads.py)."""
import os

import pytest
import torch

import ubgen
import ubgen.torch as ut


def _omp_runtimes():
    """the OpenMP runtime files mapped into this process"""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if len(line.split()) >= 6}
    return sorted(p for p in paths if os.path.basename(p).startswith(("libgomp", "libiomp", "libomp")))


def test_one_openmp_runtime():
    ut.rms_norm(torch.randn(4, 64), torch.ones(64))  # libubgen loaded and its pool started
    if any(os.path.basename(p).startswith("libomp") for p in _omp_runtimes()):
        pytest.skip("a clang-built library runs on LLVM's libomp: two runtimes by construction (docs/python.md)")
    assert len(_omp_runtimes()) == 1, "torch and libubgen run on separate OpenMP runtimes: %s" % _omp_runtimes()


def test_threads_follow_torch(restore_context, monkeypatch):
    monkeypatch.delenv("UBGEN_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        ubgen.configure()
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            ut.rms_norm(torch.randn(4, 64), torch.ones(64))
            assert ubgen.context().torch_threads == n and ubgen.settings()["threads"] is None
        ubgen.configure(threads=2)  # an explicit count stays
        torch.set_num_threads(1)
        assert ubgen.settings()["threads"] == 2 and ubgen.context().torch_threads is None
        monkeypatch.setenv("UBGEN_THREADS", "3")  # as does the environment's
        ubgen.configure()
        assert ubgen.settings()["threads"] is None and ubgen.context().torch_threads is None  # the library reads it
    finally:
        torch.set_num_threads(before)
