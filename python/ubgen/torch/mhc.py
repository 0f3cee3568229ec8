"""Manifold-constrained hyper-connections (mHC, Liger's LigerMHC*Function),
forward and backward in one place (specs/mhc.json):

    x [..., HC, C] (HC <= 16 streams), phi [HC*C, M], b [M], M = HC*HC + 2*HC,
    alpha_pre, alpha_post, alpha_res scalars
    coeffs:   -> h_pre [..., HC], h_post [..., HC], h_res [..., HC, HC]  (float32)
    pre:      x, h_pre -> x_in [..., C] = sum_i h_pre[i] x[i]
    post_res: x, f_out [..., C], h_post, h_res
              -> x_out [..., HC, C] = sum_i h_res[o, i] x[i] + h_post[o] f_out
The kernels take x (and f_out, the gradients of x_in and x_out) in x's
dtype, everything else in float32: phi is copied to float32 (HC*C*M
elements, a few per cent of x at Liger's shapes), and its gradient is
returned in phi's dtype. Sinkhorn's backward recomputes the forward, so
nothing of its iterations is saved.
"""
import math
import warnings

import torch

from . import _util

MAX_STREAMS = 16  # the spec's hc maximum


def _streams(x):
    """x [..., HC, C] checked, as (x contiguous, tokens, HC, C)"""
    xc = _util.tensor("x", x, min_ndim=3)
    _util.dtype_code("x", xc)
    HC, C = xc.shape[-2], xc.shape[-1]
    if HC > MAX_STREAMS:
        raise ValueError("x has %d streams (shape %s); ubgen's mHC takes at most %d" % (HC, tuple(x.shape), MAX_STREAMS))
    rows = xc.numel() // (HC * C) if HC * C else 0
    return xc, rows, HC, C


def _f32(name, t, shape):
    """t as contiguous float32 of `shape` elements laid out as given (ValueError naming the shapes)"""
    tc = _util.tensor(name, t)
    if tc.numel() != math.prod(shape):
        raise ValueError("%s has shape %s; %s is needed" % (name, tuple(t.shape), tuple(shape)))
    return tc.to(torch.float32).reshape(shape)


class MHCCoeffsFunction(torch.autograd.Function):
    """Liger's LigerMHCCoeffsFunction: apply(x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32, tmax,
    rms_eps, pre_eps, sinkhorn_eps, post_mult) -> (h_pre, h_post, h_res), float32"""

    @staticmethod
    def forward(ctx, x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32, tmax, rms_eps, pre_eps, sinkhorn_eps,
                post_mult):
        allowed = (torch.bfloat16, torch.float16, torch.float32) if allow_fp32 else (torch.bfloat16, torch.float16)
        if x.dtype not in allowed:  # Liger asserts this; its tests expect the AssertionError
            raise AssertionError("x has dtype %s; mHC's coefficients take %s (allow_fp32=%s)"
                                 % (x.dtype, ", ".join(str(d) for d in allowed), bool(allow_fp32)))
        xc, rows, HC, C = _streams(x)
        K, M = HC * C, HC * HC + 2 * HC
        if phi.dim() != 2 or tuple(phi.shape) != (K, M):
            raise ValueError("phi has shape %s; [HC*C, HC*HC + 2*HC] = %s is needed" % (tuple(phi.shape), (K, M)))
        phi32 = _f32("phi", phi, (K, M))
        b32 = _f32("b", b, (M,))
        alpha = torch.cat([_f32(n, a, (1,)) for n, a in
                           (("alpha_pre", alpha_pre), ("alpha_post", alpha_post), ("alpha_res", alpha_res))])
        if int(tmax) < 1:
            raise ValueError("tmax=%d; Sinkhorn needs at least one step" % int(tmax))
        outer = tuple(xc.shape[:-2])
        h_pre, h_post = torch.empty(outer + (HC,)), torch.empty(outer + (HC,))
        h_res, mix, invr = torch.empty(outer + (HC, HC)), torch.empty((rows, M)), torch.empty((rows,))
        if rows:
            _util.launch("mhc", "coeffs_fwd", xc.dtype, x=xc, phi=phi32, b=b32, alpha=alpha, h_pre=h_pre,
                         h_post=h_post, h_res=h_res, mix=mix, invr=invr, rows=rows, hc=HC, c=C, tmax=int(tmax),
                         rms_eps=_util.f32(rms_eps), pre_eps=_util.f32(pre_eps),
                         sinkhorn_eps=_util.f32(sinkhorn_eps), post_mult=_util.f32(post_mult))
        ctx.save_for_backward(xc, phi32, b32, alpha, mix, invr)
        ctx.meta = (rows, HC, C, int(tmax), float(sinkhorn_eps), float(post_mult), phi.dtype, b.dtype,
                    [(a.shape, a.dtype) for a in (alpha_pre, alpha_post, alpha_res)])
        return h_pre, h_post, h_res

    @staticmethod
    def backward(ctx, dh_pre, dh_post, dh_res):
        xc, phi32, b32, alpha, mix, invr = ctx.saved_tensors
        rows, HC, C, tmax, sinkhorn_eps, post_mult, phi_dtype, b_dtype, alphas = ctx.meta
        K, M = HC * C, HC * HC + 2 * HC
        g = [None if t is None else _f32(n, t, s) for n, t, s in
             (("dh_pre", dh_pre, (rows, HC)), ("dh_post", dh_post, (rows, HC)), ("dh_res", dh_res, (rows, HC, HC)))]
        dx = _util.empty(tuple(xc.shape), xc.dtype)
        dphi, db, dalpha = torch.zeros((K, M)), torch.zeros(M), torch.zeros(3)
        if rows:
            _util.launch("mhc", "coeffs_bwd", xc.dtype, dh_pre=g[0], dh_post=g[1], dh_res=g[2], x=xc, phi=phi32,
                         b=b32, alpha=alpha, mix=mix, invr=invr, dx=dx, dphi=dphi, db=db, dalpha=dalpha, rows=rows,
                         hc=HC, c=C, tmax=tmax, sinkhorn_eps=_util.f32(sinkhorn_eps), post_mult=_util.f32(post_mult))
        da = [dalpha[i].reshape(shape).to(dtype) for i, (shape, dtype) in enumerate(alphas)]
        return (dx, dphi.to(phi_dtype), db.to(b_dtype), da[0], da[1], da[2]) + (None,) * 6


class MHCPreFunction(torch.autograd.Function):
    """Liger's LigerMHCPreFunction: apply(x [..., HC, C], h_pre [..., HC]) -> x_in [..., C] in x's dtype"""

    @staticmethod
    def forward(ctx, x, h_pre):
        xc, rows, HC, C = _streams(x)
        h = _f32("h_pre", h_pre, (rows, HC))
        out = _util.empty(tuple(xc.shape[:-2]) + (C,), xc.dtype)
        if rows:
            _util.launch("mhc", "pre_fwd", xc.dtype, x=xc, h_pre=h, out=out, rows=rows, hc=HC, c=C)
        ctx.save_for_backward(xc, h)
        ctx.meta = (rows, HC, C, h_pre.shape, h_pre.dtype)
        return out

    @staticmethod
    def backward(ctx, dout):
        xc, h = ctx.saved_tensors
        rows, HC, C, h_shape, h_dtype = ctx.meta
        g = _util.same_dtype("dout", _util.tensor("dout", dout), xc.dtype)
        dx, dh = _util.empty(tuple(xc.shape), xc.dtype), torch.zeros((rows, HC))
        if rows:
            _util.launch("mhc", "pre_bwd", xc.dtype, dout=g, x=xc, h_pre=h, dx=dx, dh_pre=dh, rows=rows, hc=HC, c=C)
        return dx, dh.view(h_shape).to(h_dtype)


class MHCPostResFunction(torch.autograd.Function):
    """Liger's LigerMHCPostResFunction: apply(x [..., HC, C], f_out [..., C], h_post [..., HC],
    h_res [..., HC, HC]) -> x_out [..., HC, C] in x's dtype (f_out taken in x's dtype)"""

    @staticmethod
    def forward(ctx, x, f_out, h_post, h_res):
        xc, rows, HC, C = _streams(x)
        f = _util.same_dtype("f_out", _util.tensor("f_out", f_out), xc.dtype)
        if f.numel() != rows * C:
            raise ValueError("f_out has shape %s; x %s needs %s" % (tuple(f_out.shape), tuple(x.shape),
                                                                  tuple(x.shape[:-2]) + (C,)))
        hp, hr = _f32("h_post", h_post, (rows, HC)), _f32("h_res", h_res, (rows, HC, HC))
        out = _util.empty(tuple(xc.shape), xc.dtype)
        if rows:
            _util.launch("mhc", "post_res_fwd", xc.dtype, x=xc, f_out=f, h_post=hp, h_res=hr, out=out, rows=rows,
                         hc=HC, c=C)
        ctx.save_for_backward(xc, f, hp, hr)
        ctx.meta = (rows, HC, C, f_out.shape, f_out.dtype, h_post.shape, h_post.dtype, h_res.shape, h_res.dtype)
        return out

    @staticmethod
    def backward(ctx, dout):
        xc, f, hp, hr = ctx.saved_tensors
        rows, HC, C, f_shape, f_dtype, hp_shape, hp_dtype, hr_shape, hr_dtype = ctx.meta
        g = _util.same_dtype("dout", _util.tensor("dout", dout), xc.dtype)
        dx, df = _util.empty(tuple(xc.shape), xc.dtype), _util.empty(tuple(f.shape), xc.dtype)
        dhp, dhr = torch.zeros((rows, HC)), torch.zeros((rows, HC, HC))
        if rows:
            _util.launch("mhc", "post_res_bwd", xc.dtype, dout=g, x=xc, f_out=f, h_post=hp, h_res=hr, dx=dx,
                         df_out=df, dh_post=dhp, dh_res=dhr, rows=rows, hc=HC, c=C)
        return dx, df.view(f_shape).to(f_dtype), dhp.view(hp_shape).to(hp_dtype), dhr.view(hr_shape).to(hr_dtype)


def mhc_coeffs(x, phi, b, alpha_pre, alpha_post, alpha_res, *, allow_fp32=False, tmax=20, rms_eps=1e-6,
               pre_eps=0.0, sinkhorn_eps=1e-6, post_mult=2.0):
    return MHCCoeffsFunction.apply(x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32, int(tmax),
                                   float(rms_eps), float(pre_eps), float(sinkhorn_eps), float(post_mult))


def mhc_pre(x, h_pre):
    return MHCPreFunction.apply(x, h_pre)


def mhc_post_res(x, f_out, h_post, h_res):
    return MHCPostResFunction.apply(x, f_out, h_post, h_res)


def _layer_dtype(layer, default):
    """the dtype of layer's first parameter (default without one)"""
    for p in layer.parameters() if hasattr(layer, "parameters") else ():
        return p.dtype
    return default


def mhc_forward(x, layer, phi, b, alpha_pre, alpha_post, alpha_res, *, allow_fp32=False, tmax=20, rms_eps=1e-6,
                pre_eps=0.0, sinkhorn_eps=1e-6, post_mult=2.0, return_coeffs=False):
    """coefficients, pre, layer (on x_in in its parameters' dtype), post_res"""
    h_pre, h_post, h_res = mhc_coeffs(x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32=allow_fp32, tmax=tmax,
                                      rms_eps=rms_eps, pre_eps=pre_eps, sinkhorn_eps=sinkhorn_eps,
                                      post_mult=post_mult)
    x_in = mhc_pre(x, h_pre)
    x_out = mhc_post_res(x, layer(x_in.to(_layer_dtype(layer, x_in.dtype))), h_post, h_res)
    return (x_out, (h_pre, h_post, h_res)) if return_coeffs else x_out


class MHC(torch.nn.Module):
    """A layer [..., C] -> [..., C] wrapped in HC residual streams [..., HC, C]:
    phi ~ N(0, 0.02^2) [HC*C, HC*HC + 2*HC] in phi_dtype, b zeros (float32),
    alpha_pre, alpha_post, alpha_res ones (float32)"""

    def __init__(self, layer, *, hc, c, tmax=20, rms_eps=1e-6, pre_eps=0.0, sinkhorn_eps=1e-6, post_mult=2.0,
                 phi_dtype=torch.float16, allow_fp32=False):
        super().__init__()
        self.layer, self.hc, self.c = layer, int(hc), int(c)
        if hc > MAX_STREAMS:
            warnings.warn("hc=%d exceeds the recommended range [2, 16]; ubgen's mHC kernels refuse it" % hc,
                          stacklevel=2)
        self.tmax, self.rms_eps, self.pre_eps = int(tmax), float(rms_eps), float(pre_eps)
        self.sinkhorn_eps, self.post_mult, self.allow_fp32 = float(sinkhorn_eps), float(post_mult), bool(allow_fp32)
        m, k = hc * hc + 2 * hc, hc * c
        self.phi = torch.nn.Parameter(torch.randn(k, m, dtype=phi_dtype) * 0.02)
        self.b = torch.nn.Parameter(torch.zeros(m, dtype=torch.float32))
        self.alpha_pre = torch.nn.Parameter(torch.tensor(1.0))
        self.alpha_post = torch.nn.Parameter(torch.tensor(1.0))
        self.alpha_res = torch.nn.Parameter(torch.tensor(1.0))

    def forward(self, x):
        if x.shape[-2] != self.hc or x.shape[-1] != self.c:
            raise ValueError("Expected x.shape[-2:]=[%d, %d], got %s" % (self.hc, self.c, list(x.shape[-2:])))
        return mhc_forward(x, self.layer, self.phi, self.b, self.alpha_pre, self.alpha_post, self.alpha_res,
                           allow_fp32=self.allow_fp32, tmax=self.tmax, rms_eps=self.rms_eps, pre_eps=self.pre_eps,
                           sinkhorn_eps=self.sinkhorn_eps, post_mult=self.post_mult)

    def extra_repr(self):
        return "hc=%d, c=%d, tmax=%d" % (self.hc, self.c, self.tmax)
