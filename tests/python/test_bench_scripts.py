"""The benchmark scripts (bench/python) run outside the suite, at sizes it
cannot afford; this checks that each still compiles (a merge once cut two
of bench_ops.py's cases in half, and only the next benchmark run found
it) and that bench_ops.py's usage names every op it has."""
import os
import py_compile
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "python")
SCRIPTS = sorted(f for f in os.listdir(BENCH) if f.endswith(".py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_compiles(script, tmp_path):
    py_compile.compile(os.path.join(BENCH, script), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_bench_ops_usage_names_every_op():
    sys.path.insert(0, BENCH)
    try:
        import bench_ops
    finally:
        sys.path.remove(BENCH)
    usage = bench_ops.__doc__.split("--ops ", 1)[1].split("]", 1)[0].split(",")
    assert usage == list(bench_ops.OPS) + ["overhead"]


def test_bench_in_cache_counts_a_pass_bytes():
    """its GB/s are the pass's tensors over its time: inputs and outputs
    at the shape, in the dtype (T) or their own type"""
    sys.path.insert(0, BENCH)
    try:
        import bench_in_cache
    finally:
        sys.path.remove(BENCH)
    assert bench_in_cache.pass_bytes("softmax", "fwd", dict(rows=2, cols=3), 2) == 2 * 6 * 2  # x, y
    assert bench_in_cache.pass_bytes("softmax", "bwd", dict(rows=2, cols=3), 4) == 3 * 6 * 4  # dy, y, dx
    # x, y [2, 3, 5] in bf16; w, b [6] in bf16; mean, rstd [2, 3] in f32
    shape = dict(batch=2, channels=6, groups=3, cols=5)
    assert bench_in_cache.pass_bytes("group_norm", "fwd", shape, 2) == 2 * 30 * 2 + 2 * 6 * 2 + 2 * 6 * 4
