"""The mappings ubgen.torch keeps for its large outputs: reused only once no
tensor views them, their contents never shared between live tensors,
bounded by the pool limit, returned by empty_cache."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.torch import _util

BIG = (1024, 1024)  # 4 MiB of f32: pooled


@pytest.fixture(autouse=True)
def fresh_pool():
    ut.empty_cache()
    yield
    ut.set_pool_limit(2 << 30)
    ut.empty_cache()


def test_a_freed_output_mapping_is_reused_and_a_viewed_one_is_not():
    x = torch.randn(*BIG)
    y1 = ut.rms_norm(x, None)
    p1 = y1.data_ptr()
    held = ut.pool_bytes()
    assert held >= 4 << 20
    view = y1[3:]  # keeps the mapping in use
    del y1
    y2 = ut.rms_norm(x, None)
    p2 = y2.data_ptr()
    assert p2 != p1, "a mapping still viewed was handed out again"
    keep = view.clone()
    y2.fill_(7.0)
    assert torch.equal(view, keep), "a live tensor's memory was written by another output"
    del view, keep, y2
    held = ut.pool_bytes()
    y3 = ut.rms_norm(x, None)
    assert y3.data_ptr() in (p1, p2) and ut.pool_bytes() == held, "a free mapping was not reused"
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert torch.allclose(y3, ref, atol=1e-6, rtol=1e-5)


def test_reuse_gives_the_same_address_once_free():
    a = _util.empty(BIG, torch.float32)
    pa = a.data_ptr()
    del a
    b = _util.empty(BIG, torch.float32)
    assert b.data_ptr() == pa
    c = _util.empty(BIG, torch.float32)
    assert c.data_ptr() != pa
    assert b.data_ptr() % (2 << 20) == 0 and c.data_ptr() % (2 << 20) == 0, "not on a 2 MiB boundary"


def test_empty_cache_and_the_limit():
    a = _util.empty(BIG, torch.float32)
    del a
    assert ut.pool_bytes() > 0
    ut.empty_cache()
    assert ut.pool_bytes() == 0
    ut.set_pool_limit(0)
    b = _util.empty(BIG, torch.float32)
    b.fill_(1.0)
    assert ut.pool_bytes() == 0 and float(b.sum()) == 1024 * 1024
    small = _util.empty((3, 5), torch.float32)  # below 2 MiB: torch's own
    assert small.shape == (3, 5)
    for bad in (-1, 1.5, "1G"):
        with pytest.raises(ValueError, match="pool limit"):
            ut.set_pool_limit(bad)
