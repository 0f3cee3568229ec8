"""8 Python threads calling mixed ops (RMSNorm forward and backward,
embedding, AttnRes, FLCE, cross entropy) at once on the shared process
context: every thread gets exactly the bits of a single-threaded run, round
after round. ctypes releases the GIL for each call, so the calls do overlap
in the library."""
import threading

import pytest
import torch

import ubgen

import _workload

N_THREADS = 8
ROUNDS = 10


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_threads_share_the_context(dtype, restore_context):
    ubgen.configure()
    ctx = ubgen.context()
    # each thread has its own inputs (seed) and its own order of the ops
    inputs = [_workload.make_inputs(dtype, seed=100 + i) for i in range(N_THREADS)]
    orders = [_workload.OPS[i % len(_workload.OPS):] + _workload.OPS[:i % len(_workload.OPS)]
              for i in range(N_THREADS)]
    expected = [_workload.run_all(inputs[i]) for i in range(N_THREADS)]

    barrier = threading.Barrier(N_THREADS)
    results = [[None] * ROUNDS for _ in range(N_THREADS)]
    errors = []

    def worker(i):
        try:
            for r in range(ROUNDS):
                barrier.wait(timeout=60)
                results[i][r] = _workload.run_all(inputs[i], orders[i])
        except BaseException as e:  # reported below, with the thread
            errors.append((i, repr(e)))
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    assert ubgen.context() is ctx
    for i in range(N_THREADS):
        for r in range(ROUNDS):
            _workload.assert_bitwise_equal(results[i][r], expected[i], "thread %d round %d" % (i, r))


def test_errors_stay_with_their_thread(restore_context):
    """a thread whose calls are refused gets its own message while others
    run good calls on the same context"""
    ubgen.configure()
    good = _workload.make_inputs(torch.float32, seed=7)
    want = _workload.run_all(good, (_workload.embedding, _workload.rms_norm))
    barrier = threading.Barrier(4)
    out, errors = {}, []

    def bad(i):
        try:
            barrier.wait(timeout=60)
            for _ in range(20):
                try:
                    ubgen.torch.embedding(torch.tensor([0, 1000 + i]), torch.randn(10, 4))
                except ValueError as e:
                    assert "indices[1] = %d" % (1000 + i) in str(e), str(e)
                else:
                    raise AssertionError("not refused")
        except BaseException as e:
            errors.append(repr(e))

    def ok(i):
        try:
            barrier.wait(timeout=60)
            out[i] = [_workload.run_all(good, (_workload.embedding, _workload.rms_norm)) for _ in range(5)]
        except BaseException as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=f, args=(i,)) for i, f in enumerate((bad, ok, bad, ok))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for runs in out.values():
        for r in runs:
            _workload.assert_bitwise_equal(r, want)
