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
