"""The package as a user gets it: `make install` into a prefix, then
imported from there by a fresh interpreter in another directory, with no
UBGEN_LIB and no build tree on its path, running ops on each backend; and
the README's C and Python examples, built and run as written."""
import os
import re
import subprocess
import sys

import pytest

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("UBGEN_LIB", "PYTHONPATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    build = os.environ.get("UBGEN_TEST_BUILD", "build")
    r = subprocess.run(["make", "-s", "-C", SRC, "BUILD=" + build, "PYTHON=" + sys.executable, "install",
                        "PREFIX=%s" % prefix], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    ver = "%d.%d" % sys.version_info[:2]
    pydir = prefix / "lib" / ("python%s" % ver) / "dist-packages"
    assert (pydir / "ubgen" / "__init__.py").exists(), r.stdout
    return prefix, pydir


def test_installed_package_runs_every_backend(installed, tmp_path):
    prefix, pydir = installed
    script = (
        "import torch, ubgen, ubgen.torch as ut, ubgen.liger as L\n"
        "assert ubgen.LIB_PATH == %r, ubgen.LIB_PATH\n"
        "x = torch.randn(5, 300)\n"
        "ref = None\n"
        "for be in ('aot', 'tcc', 'gcc'):\n"
        "    ubgen.configure(backend=be, cache_dir=%r)\n"
        "    y = L.liger_rms_norm(x, torch.ones(300), 1e-6)\n"
        "    assert '@' + be in ubgen.context().last_variant(), ubgen.context().last_variant()\n"
        "    ref = y if ref is None else ref\n"
        "    assert torch.equal(y, ref), be\n"
        "print('ok')\n" % (str(prefix / "lib" / "libubgen.so"), str(tmp_path)))
    os.chmod(tmp_path, 0o700)
    r = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path), capture_output=True, text=True,
                       env=_clean_env(PYTHONPATH=str(pydir)))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_readme_python_example_runs_as_written(tmp_path):
    with open(os.path.join(SRC, "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "README.md has no Python example"
    r = subprocess.run([sys.executable, "-c", blocks[0]], cwd=str(tmp_path), capture_output=True, text=True,
                       env=_clean_env(PYTHONPATH=os.path.join(SRC, "python"),
                                      UBGEN_LIB=os.environ.get("UBGEN_LIB", "")))
    assert r.returncode == 0, r.stdout + r.stderr
    loss = float(r.stdout.split()[-1])
    assert 9.0 < loss < 12.0, r.stdout  # about ln(32000) = 10.4 at the start


def test_installed_library_has_a_versioned_soname(installed):
    """libubgen.so -> libubgen.so.0 -> libubgen.so.0.x.y, whose SONAME is
    libubgen.so.0: what a program linked with -lubgen asks for at run time"""
    prefix, _ = installed
    lib = prefix / "lib"
    assert os.readlink(str(lib / "libubgen.so")) == "libubgen.so.0"
    real = os.readlink(str(lib / "libubgen.so.0"))
    assert re.fullmatch(r"libubgen\.so\.0\.\d+\.\d+", real), real
    assert (lib / real).is_file() and not (lib / real).is_symlink()
    r = subprocess.run(["readelf", "-d", str(lib / real)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Library soname: [libubgen.so.0]" in r.stdout, r.stdout


def test_readme_c_example_builds_and_runs_as_written(installed, tmp_path):
    """the README's C program, compiled by the README's command against the
    installed prefix, prints what double-precision formulas give"""
    import numpy as np
    prefix, _ = installed
    with open(os.path.join(SRC, "README.md")) as f:
        text = f.read()
    blocks = re.findall(r"```c\n(.*?)```", text, re.S)
    assert blocks, "README.md has no C example"
    assert "cc app.c $(pkg-config --cflags --libs ubgen) -o app" in text
    (tmp_path / "app.c").write_text(blocks[0])
    env = _clean_env(PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"), LD_LIBRARY_PATH=str(prefix / "lib"))
    r = subprocess.run("cc app.c $(pkg-config --cflags --libs ubgen) -o app && ./app", shell=True, cwd=str(tmp_path),
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    # the program's inputs, in double precision
    rows, cols, vocab, dim, bt = 4, 1024, 512, 64, 8
    x = (np.arange(rows * cols) % 7 - 3.0).reshape(rows, cols)
    rstd = 1 / np.sqrt((x[0] ** 2).mean() + 1e-6)
    got = re.search(r"rms_norm: y\[0\] = (\S+), rstd\[0\] = (\S+), by rms_norm_fwd_f32_\w+@\w+", out)
    assert got, out
    assert abs(float(got.group(1)) - x[0, 0] * rstd) < 1e-4 and abs(float(got.group(2)) - rstd) < 1e-4, out
    assert "embedding: rows 0 0.05 5.11" in out, out
    table = 0.01 * (np.arange(vocab * dim) // dim).astype(np.float32).astype(np.float64).reshape(vocab, dim)
    h = (0.01 * np.float32(1) * (np.arange(bt * dim) % 13)).astype(np.float32).astype(np.float64).reshape(bt, dim)
    logits = h @ table.T
    m = logits.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
    want = (lse - logits[np.arange(bt), 3 * np.arange(bt)]).mean()
    got = re.search(r"flce: loss (\S+)", out)
    assert got and abs(float(got.group(1)) - want) < 1e-3 * max(1, want), (out, want)
    assert "refused: ubg_flce: target[0] = 512 is outside" in out, out


def test_adding_a_kernel_walks_through_as_written(installed, tmp_path):
    """docs/adding-a-kernel.md, done as a user does it: its files written
    into a directory outside the tree, its shell commands run in order
    against the installed ubgen (command, C library, Python package)."""
    prefix, pydir = installed
    with open(os.path.join(SRC, "docs", "adding-a-kernel.md")) as f:
        doc = f.read()
    files = re.findall(r"```\w+ (\S+)\n(.*?)```", doc, re.S)
    assert {"softcap.json", "softcap_fwd.c.tmpl", "softcap_bwd.c.tmpl", "softcap_ref.c", "app.c",
            "softcap.py"} <= {name for name, _ in files}
    work = tmp_path / "softcap"
    work.mkdir()
    for name, body in files:
        (work / name).write_text(body)
    commands = "".join(re.findall(r"```sh\n(.*?)```", doc, re.S))
    # `python3` in the page is the interpreter that has torch: a script that
    # runs it, since a link to a virtual environment's python leaves the
    # environment behind
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    (shim / "python3").chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = _clean_env(PATH="%s:%s:%s" % (shim, prefix / "bin", os.environ.get("PATH", "/usr/bin:/bin")),
                     PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"), LD_LIBRARY_PATH=str(prefix / "lib"),
                     PYTHONPATH=str(pydir), UBGEN_CACHE_DIR=str(cache))
    r = subprocess.run(["sh", "-ex", "-c", commands], cwd=str(work), capture_output=True, text=True, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "softcap.fwd: 12 variants, 36 runs, 0 failed; checked against the reference" in out, out
    assert "merged into %s" % (cache / "tuning.json") in out, out
    assert re.search(r"softcap_fwd_f32_b\d+@(tcc|gcc): max error", out), out
    assert re.search(r"softcap_fwd_f32_b\d+@aot: max error", out), out
    assert "softcap from Python: softcap_bwd_f32_b" in out, out


@pytest.mark.integration
def test_pip_install_into_a_fresh_venv_trains_a_patched_llama(tmp_path):
    """pip install . into a new virtual environment (without a pip of its
    own: torch, transformers, pip and setuptools are this interpreter's,
    seen through a .pth, so nothing is downloaded; the build tree reused
    through UBGEN_BUILD), then, from
    another directory with no UBGEN_LIB or PYTHONPATH, a mini Llama made
    after apply_liger_kernel_to_llama() trains and its loss falls"""
    import site
    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    py = str(venv / "bin" / "python")
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True).stdout.strip()
    with open(os.path.join(purelib, "host_packages.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    build = os.environ.get("UBGEN_TEST_BUILD", "build")
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", SRC], capture_output=True,
                       text=True, env=_clean_env(UBGEN_BUILD=build))
    assert r.returncode == 0, r.stdout + r.stderr
    script = (
        "import os, torch, ubgen\n"
        "from transformers import LlamaConfig, LlamaForCausalLM\n"
        "from ubgen.liger.transformers import apply_liger_kernel_to_llama\n"
        "assert ubgen.LIB_PATH.startswith(%r), ubgen.LIB_PATH\n"
        "apply_liger_kernel_to_llama()\n"
        "torch.manual_seed(0)\n"
        "cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,\n"
        "                  num_attention_heads=4, num_key_value_heads=2, pad_token_id=0)\n"
        "model = LlamaForCausalLM(cfg).train()\n"
        "assert type(model.model.norm).__name__ == 'LigerRMSNorm'\n"
        "ids = torch.randint(3, 128, (2, 16))\n"
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-2)\n"
        "losses = []\n"
        "for _ in range(5):\n"
        "    loss = model(input_ids=ids, labels=ids).loss\n"
        "    loss.backward(); opt.step(); opt.zero_grad(); losses.append(loss.item())\n"
        "assert losses[-1] < losses[0] - 0.1, losses\n"
        "print('ok')\n" % (str(venv),))
    r = subprocess.run([py, "-c", script], cwd=str(tmp_path), capture_output=True, text=True, env=_clean_env())
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
