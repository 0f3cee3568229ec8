"""The package as a user gets it: `make install` into a prefix, then
imported from there by a fresh interpreter in another directory, with no
UBGEN_LIB and no build tree on its path, running ops on each backend; and
the README's Python example, run as written."""
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
    shim = tmp_path / "bin"  # `python3` in the page is the interpreter that has torch
    shim.mkdir()
    os.symlink(sys.executable, shim / "python3")
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
