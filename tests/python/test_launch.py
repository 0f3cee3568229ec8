"""ubgen.launch and ubgen.prepare: any spec'd kernel by name from Python.
The generic path gives the typed path's bits; each buffer's byte size is
checked against the spec before anything runs, and bad values raise with
the argument named."""
import numpy as np
import pytest
import torch

import ubgen
import ubgen.torch as ut


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_launch_gives_the_typed_ops_bits(dtype):
    x, w = torch.randn(7, 300).to(dtype), torch.randn(300).to(dtype)
    y, rstd = torch.empty_like(x), torch.empty(7)
    ubgen.launch("rms_norm", "fwd", dtype, x=x, w=w, y=y, rstd=rstd, rows=7, cols=300, eps=1e-6)
    want = ut.rms_norm(x, w, 1e-6)
    assert torch.equal(y, want)


def test_launch_takes_numpy_arrays_and_omitted_optionals():
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    y, rstd = np.empty_like(x), np.empty(3, np.float32)
    ubgen.launch("rms_norm", "fwd", "f32", x=x, w=None, y=y, rstd=rstd, rows=3, cols=64)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6)
    assert np.allclose(y, want, atol=1e-5)


def test_a_buffer_of_the_wrong_size_is_refused_and_nothing_written():
    x, y, rstd = torch.randn(4, 37), torch.full((4, 37), 7.0), torch.full((4,), 7.0)
    with pytest.raises(ValueError, match=r"x is a buffer of 576 bytes; its shape \[rows, cols\] = \[4, 37\] of f32"):
        ubgen.launch("rms_norm", "fwd", "f32", x=torch.randn(4, 36), y=y, rstd=rstd, rows=4, cols=37)
    with pytest.raises(ValueError, match="y is a buffer of 444 bytes"):
        ubgen.launch("rms_norm", "fwd", "f32", x=x, y=y[:3], rstd=rstd, rows=4, cols=37)
    assert torch.all(y == 7.0) and torch.all(rstd == 7.0)


@pytest.mark.parametrize("name, value, why", [
    ("x", torch.zeros(4, 37, dtype=torch.int32), "x: torch.int32 elements; the call takes f32"),
    ("y", torch.zeros(2, 37, dtype=torch.float64), "y: torch.float64 elements"),
    ("x", torch.zeros(4, 37, dtype=torch.float16), "x: torch.float16 elements"),
    ("y", np.empty((4, 37), dtype=object), "y: numpy object elements"),
    ("y", np.zeros((4, 37), dtype=np.int32), "y: numpy int32 elements"),
    ("y", np.frombuffer(bytes(4 * 37 * 4), dtype=np.float32).reshape(4, 37), "y: a read-only array"),
], ids=["int32-in", "f64-out", "f16-in-f32-call", "numpy-object-out", "numpy-int32-out", "read-only-out"])
def test_a_buffer_of_the_right_size_and_wrong_type_is_refused(name, value, why):
    """a byte count cannot tell f64 from two f32s, f16 from bf16, an object
    array's pointers from floats, or a read-only array from an output: the
    element type the spec gives the argument in the call's dtype, and for
    an output that it can be written, are checked before anything runs"""
    args = dict(x=torch.randn(4, 37), y=torch.full((4, 37), 7.0), rstd=torch.full((4,), 7.0))
    args[name] = value
    with pytest.raises(ValueError, match=why):
        ubgen.launch("rms_norm", "fwd", "f32", rows=4, cols=37, **args)
    assert torch.all(args["rstd"] == 7.0)
    x16 = torch.randn(4, 37, dtype=torch.float16)
    with pytest.raises(ValueError, match="x: torch.float16 elements; the call takes bf16"):
        ubgen.launch("rms_norm", "fwd", "bf16", x=x16, y=torch.empty(4, 37, dtype=torch.bfloat16), rstd=torch.empty(4),
                     rows=4, cols=37)


def test_composite_arguments_are_typed_too():
    """flce.chunk (a composite op): target is i64, the loss f32"""
    x, w = torch.randn(4, 16), torch.randn(32, 16)
    loss = torch.full((1,), 7.0)
    with pytest.raises(ValueError, match="target: torch.int32 elements; the call takes i64"):
        ubgen.launch("flce", "chunk", "f32", x=x, weight=w, target=torch.zeros(4, dtype=torch.int32), loss=loss,
                     bt=4, hidden=16, vocab=32)
    assert loss.item() == 7.0


def test_bad_values_name_the_argument():
    x, y, rstd = torch.randn(4, 8), torch.empty(4, 8), torch.empty(4)
    with pytest.raises(ValueError, match="dtype='f64'"):
        ubgen.launch("rms_norm", "fwd", "f64", x=x, y=y, rstd=rstd, rows=4, cols=8)
    with pytest.raises(ValueError, match="not contiguous"):
        ubgen.launch("rms_norm", "fwd", "f32", x=torch.randn(8, 4).t(), y=y, rstd=rstd, rows=4, cols=8)
    with pytest.raises(TypeError, match="x: list"):
        ubgen.launch("rms_norm", "fwd", "f32", x=[1.0], y=y, rstd=rstd, rows=4, cols=8)
    with pytest.raises(ValueError, match='no kernel named "nope"'):
        ubgen.launch("nope", "fwd", "f32")
    with pytest.raises(ValueError, match="has no argument \"z\""):
        ubgen.launch("rms_norm", "fwd", "f32", x=x, y=y, rstd=rstd, rows=4, cols=8, z=1)
    with pytest.raises(ValueError, match="rows"):
        ubgen.launch("rms_norm", "fwd", "f32", x=x, y=y, rstd=rstd, rows=-4, cols=8)


def test_prepare_says_which_code_serves_a_variant():
    assert ubgen.prepare("rms_norm", "fwd", torch.bfloat16, "rms_norm_fwd_bf16_d1024_m1_t") == \
        "rms_norm_fwd_bf16_d1024_m1_t@aot"
    with pytest.raises(ValueError, match="d17"):
        ubgen.prepare("rms_norm", "fwd", "f32", "rms_norm_fwd_f32_d17_m1_n")


def test_a_users_kernel_through_the_spec_path_setting():
    """ubgen.configure(spec_path=...) serves a kernel that is only data, as
    UBGEN_SPEC_PATH does; the setting is the process context's"""
    import os
    specs = os.path.join(os.path.dirname(__file__), "..", "specs")
    before = ubgen.settings()
    with pytest.raises(ValueError, match="UBGEN_SPEC_PATH"):
        ubgen.prepare("tune_probe", "fwd", "f32", "tune_probe_fwd_f32_d16")
    try:
        ubgen.configure(**dict(before, spec_path=specs))
        x = torch.arange(100, dtype=torch.float32)
        y = torch.empty(100)
        ubgen.prepare("tune_probe", "fwd", "f32", "tune_probe_fwd_f32_d16")
        ubgen.context().set_variant("tune_probe", "fwd", "tune_probe_fwd_f32_d16")  # its d64 is wrong on purpose
        ubgen.launch("tune_probe", "fwd", "f32", x=x, y=y, n=100)
        assert torch.equal(y, 2 * x)
        with pytest.raises(TypeError, match="spec_path"):
            ubgen.configure(spec_path=3)
    finally:
        ubgen.configure(**before)
