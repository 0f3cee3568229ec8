"""The same bits from Python whatever the backend (aot, tcc, gcc) and the
number of threads (1, 2): ubgen.configure(backend=..., threads=...,
cache_dir=<private 0700 directory>) then every op forward and backward,
compared with torch.equal against the default context's run."""
import os
import stat

import pytest
import torch

import ubgen

import _workload

CONFIGS = [(backend, threads) for backend in ("aot", "tcc", "gcc") for threads in (1, 2)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_backends_and_threads_bitwise_equal(dtype, private_cache_dir, restore_context):
    inp = _workload.make_inputs(dtype)
    ubgen.configure()
    base = _workload.run_all(inp)
    assert base["flce_mean_loss"].isfinite().all() and base["rms_dw"].abs().sum() > 0
    for backend, threads in CONFIGS:
        ctx = ubgen.configure(backend=backend, threads=threads, cache_dir=private_cache_dir)
        assert ubgen.context() is ctx
        assert ubgen.settings()["backend"] == backend and ubgen.settings()["threads"] == threads
        got = _workload.run_all(inp)
        # each backend really ran: the last call's variants carry its name
        variant = ctx.last_variant()
        assert variant and ("@" + backend) in variant, (backend, variant)
        _workload.assert_bitwise_equal(got, base, "backend=%s threads=%d" % (backend, threads))
    # the gcc backend compiled into the private cache, which stays private
    st = os.stat(private_cache_dir)
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert any(name.endswith(".so") for name in os.listdir(private_cache_dir))


def test_configure_resets_to_defaults(restore_context):
    ubgen.configure(backend="tcc", threads=1)
    assert ubgen.settings()["backend"] == "tcc"
    ubgen.configure()
    assert all(v is None for v in ubgen.settings().values())
    x = torch.randn(3, 40)
    ubgen.torch.rms_norm(x, None)
    assert "@tcc" not in ubgen.context().last_variant()


def test_forced_variant_round_trip(restore_context):
    """Context.set_variant: forcing the variant automatic selection chose
    runs it (the same bits); an unknown kernel, pass or variant is a
    ValueError naming it; None is automatic selection again"""
    ctx = ubgen.configure(threads=1)
    x, w = torch.randn(2, 64), torch.randn(64)
    y_auto = ubgen.torch.rms_norm(x, w)
    chosen = ctx.last_variant()
    assert chosen.startswith("rms_norm_fwd_f32_"), chosen
    name = chosen.split("@")[0]
    ctx.set_variant("rms_norm", "fwd", name)
    y_forced = ubgen.torch.rms_norm(x, w)
    assert ctx.last_variant().split("@")[0] == name
    assert torch.equal(y_forced, y_auto)
    with pytest.raises(ValueError, match="no-such-variant"):
        ctx.set_variant("rms_norm", "fwd", "no-such-variant")
    with pytest.raises(ValueError, match="no-such-kernel"):
        ctx.set_variant("no-such-kernel", "fwd", name)
    with pytest.raises(ValueError, match="no-such-pass"):
        ctx.set_variant("rms_norm", "no-such-pass", name)
    ctx.set_variant("rms_norm", "fwd", None)
    assert torch.equal(ubgen.torch.rms_norm(x, w), y_auto)
    assert torch.allclose(y_auto, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, atol=1e-5)


def test_flce_chunk_forced_by_name(restore_context):
    """ubg_flce's chunk is a variant like any pass's: forced from Python by
    name it runs that chunk with the default's bits and says so; a name that
    is not chunk=N is a ValueError naming it"""
    ctx = ubgen.configure(threads=1)
    torch.manual_seed(3)
    x, w = torch.randn(40, 32), torch.randn(300, 32) * 0.1
    t = torch.randint(0, 300, (40,))
    loss_auto = ubgen.torch.fused_linear_cross_entropy(x, w, t)
    assert "(spec rule)" in ctx.last_variant(), ctx.last_variant()
    ctx.set_variant("flce", "chunk", "chunk=7")
    loss_forced = ubgen.torch.fused_linear_cross_entropy(x, w, t)
    assert ctx.last_variant().endswith(";chunk=7 (ubg_set_variant)"), ctx.last_variant()
    assert torch.equal(loss_forced, loss_auto)
    with pytest.raises(ValueError, match="chunk=7x"):
        ctx.set_variant("flce", "chunk", "chunk=7x")
    ctx.set_variant("flce", "chunk", None)
    ubgen.torch.fused_linear_cross_entropy(x, w, t)
    assert "(spec rule)" in ctx.last_variant(), ctx.last_variant()
    ref = torch.nn.functional.cross_entropy(x.double() @ w.double().t(), t)
    assert abs(loss_auto.item() - ref.item()) < 1e-5


def _onednn_refusal(ctx):
    """None when ctx takes gemm=onednn, else the refusal's text"""
    try:
        ctx.set_variant("flce", "chunk", "chunk=16,gemm=onednn")
        return None
    except ValueError as e:
        return str(e)


def test_flce_on_onednn_matches_torch(restore_context):
    """gemm=onednn (bf16) forced from Python: the loss and both gradients
    through autograd within bf16 tolerance of torch's float64 math on the
    same values; in a build without oneDNN the name is refused, saying so"""
    ctx = ubgen.configure(threads=2)
    refusal = _onednn_refusal(ctx)
    if refusal is not None:
        assert "without oneDNN" in refusal, refusal
        pytest.skip("this library was built without oneDNN: only the refusal is tested")
    torch.manual_seed(5)
    x = torch.randn(70, 96).to(torch.bfloat16).requires_grad_()
    w = (torch.randn(1000, 96) * 0.1).to(torch.bfloat16).requires_grad_()
    t = torch.randint(0, 1000, (70,))
    t[3] = -100
    loss = ubgen.torch.fused_linear_cross_entropy(x, w, t)
    assert ctx.last_variant().startswith("onednn;") and ";onednn;onednn;chunk=16" in ctx.last_variant(), ctx.last_variant()
    loss.backward()
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    ref = torch.nn.functional.cross_entropy(x64 @ w64.t(), t)
    ref.backward()
    assert abs(loss.item() - ref.item()) < 1e-4 * abs(ref.item())
    for got, want in ((x.grad, x64.grad), (w.grad, w64.grad)):
        scale = want.abs().max().item()
        assert (got.double() - want).abs().max().item() <= 2e-2 * scale
