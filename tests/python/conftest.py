"""pytest setup for the ubgen Python package's tests.

    PYTHONPATH=python python3 -m pytest -q tests/python     (from the source tree)

The package is pure Python over build/lib/libubgen.so (or $UBGEN_LIB). Unless
UBGEN_CACHE_DIR is set, the process context's cache (gcc JIT objects, the
tuning DB it would read) is a private temporary directory, so the suite
neither reads nor writes the user's ~/.cache/ubgen and no tuning DB there
changes which variants run. Every test is seeded from its own id, so it
draws the same tensors whatever runs before it.
"""
import os
import shutil
import stat
import sys
import tempfile
import zlib

import pytest

_OWN_CACHE = None
if not os.environ.get("UBGEN_CACHE_DIR"):
    _OWN_CACHE = tempfile.mkdtemp(prefix="ubgen-pytest-cache-")  # created 0700
    os.environ["UBGEN_CACHE_DIR"] = _OWN_CACHE

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _ref

import torch  # noqa: E402

import ubgen  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


def pytest_report_header(config):
    return "ubgen %s, %s; torch %s; UBGEN_CACHE_DIR=%s" % (
        ubgen.__version__, ubgen.LIB_PATH, torch.__version__, os.environ.get("UBGEN_CACHE_DIR"))


@pytest.fixture(autouse=True)
def _seed(request):
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def private_cache_dir():
    """a fresh directory made with tempfile, mode 0700 (the gcc JIT cache
    must be owned by the user and closed to others)"""
    d = tempfile.mkdtemp(prefix="ubgen-pytest-jit-")
    os.chmod(d, 0o700)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def restore_context():
    """for tests that call ubgen.configure: the process context is set back
    to the defaults afterwards, whatever the test did"""
    yield
    ubgen.configure()
