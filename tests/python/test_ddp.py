"""Distributed training on an existing engine: a mini Llama patched by
apply_liger_kernel_to_llama under torch.distributed DDP (gloo, two
processes started by torchrun) against the same model in one process on
the same global batch (ddp_train.py): every step's loss, the first step's
gradients and the final parameters within 1e-5 relative (f32)."""
import os
import shutil
import subprocess
import sys

import pytest
import torch

pytest.importorskip("transformers")
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.integration
def test_ddp_on_two_processes_matches_one(tmp_path):
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    assert torchrun, "torchrun is not installed beside %s" % sys.executable
    env = dict(os.environ, OMP_NUM_THREADS="1")
    script = os.path.join(HERE, "ddp_train.py")
    one, two = str(tmp_path / "one.pt"), str(tmp_path / "two.pt")
    # a hang fails the test, not the run (each takes seconds)
    r = subprocess.run([sys.executable, script, "--out", one], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([torchrun, "--standalone", "--nproc-per-node", "2", script, "--out", two],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = torch.load(one), torch.load(two)
    torch.testing.assert_close(torch.tensor(b["losses"]), torch.tensor(a["losses"]), rtol=1e-5, atol=0)
    assert a["losses"][-1] < a["losses"][0]
    for what in ("grads", "params"):
        for name, want in a[what].items():
            torch.testing.assert_close(b[what][name], want, rtol=1e-5, atol=1e-7,
                                       msg=lambda m, name=name, what=what: "%s %s: %s" % (what, name, m))
