"""Tensors to C arguments: checks that name the argument, dtype codes,
pointers. A check fails before any call, so a refused op writes nothing."""
import torch

from .. import _lib
from .._context import context

DTYPES = {torch.float32: _lib.F32, torch.float16: _lib.F16, torch.bfloat16: _lib.BF16}


def dtype_code(name, t):
    """the library's dtype of float tensor t (TypeError for any other)"""
    code = DTYPES.get(t.dtype)
    if code is None:
        raise TypeError("%s has dtype %s; ubgen takes torch.float32, torch.float16 or torch.bfloat16" % (name, t.dtype))
    return code


def tensor(name, t, dtype=None, ndim=None, min_ndim=None):
    """t, checked: a CPU tensor (of dtype, with ndim or at least min_ndim
    dimensions, when given), made contiguous"""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise ValueError("%s is on %s; ubgen runs on the CPU (move it with .cpu())" % (name, t.device))
    if dtype is not None and t.dtype != dtype:
        raise TypeError("%s has dtype %s, but %s is needed here" % (name, t.dtype, dtype))
    if ndim is not None and t.dim() != ndim:
        raise ValueError("%s has shape %s; %d dimensions are needed" % (name, tuple(t.shape), ndim))
    if min_ndim is not None and t.dim() < min_ndim:
        raise ValueError("%s has shape %s; at least %d dimensions are needed" % (name, tuple(t.shape), min_ndim))
    return t if t.is_contiguous() else t.contiguous()


def same_dtype(name, t, dtype):
    """t in dtype: the library takes one dtype per call"""
    return t if t is None or t.dtype == dtype else t.to(dtype)


# torch gives a tensor without elements the address 0, which the library
# takes for a missing tensor: such a tensor gets the address of this one
# instead (aligned for every element type; nothing is read or written there)
_EMPTY = torch.empty(8, dtype=torch.float64)


def ptr(t):
    """the address of t's data; None for None"""
    if t is None:
        return None
    return t.data_ptr() if t.numel() else _EMPTY.data_ptr()


def indices(name, t):
    """an index tensor as contiguous int64"""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise ValueError("%s is on %s; ubgen runs on the CPU (move it with .cpu())" % (name, t.device))
    if t.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError("%s has dtype %s; an integer tensor is needed" % (name, t.dtype))
    t = t if t.dtype == torch.int64 else t.long()
    return t if t.is_contiguous() else t.contiguous()


def choice(name, value, table):
    """value (a name in table, or one of its codes) as the code"""
    if isinstance(value, str) and value in table:
        return table[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in table.values():
        return value
    raise ValueError("%s=%r is not one of %s" % (name, value, ", ".join(repr(k) for k in table)))


def call(fn, *args):
    """fn(ctx, *args) on the process context; raises with its message"""
    ctx = context()
    ctx.check(fn(ctx.handle, *args))
    return ctx
