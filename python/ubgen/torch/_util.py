"""Tensors to the library's arguments: checks that name the argument, the
launch by spec names, and the outputs' memory. A check fails before any
call, so a refused op writes nothing."""
import ctypes
import math
import mmap
import os
import sys
import threading

import torch

from .. import _lib
from .._context import context


# torch dtype -> the library's dtype (_lib.DTYPES), looked up by the dtype
# itself: str(dtype), which _lib.dtype_code takes, costs more than the lookup
_CODES = {getattr(torch, torch_name[len("torch."):]): code for code, (_, torch_name) in enumerate(_lib.DTYPES)}


def dtype_code(name, t):
    """the library's dtype of float tensor t (TypeError for any other)"""
    code = _CODES.get(t.dtype)
    if code is None:
        raise TypeError("%s has dtype %s; ubgen takes torch.float32, torch.float16 or torch.bfloat16" % (name, t.dtype))
    return code


def tensor(name, t, dtype=None, ndim=None, min_ndim=None):
    """t, checked: a CPU tensor (of dtype, with ndim or at least min_ndim
    dimensions, when given), made contiguous"""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if not t.is_cpu:  # t.device.type != "cpu", in a fifth of the time
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


def _use_counts(t):
    """(references to t's TensorImpl, references to its memory), the probe's own included"""
    return t._use_count(), torch._C._storage_Use_Count(t.untyped_storage()._cdata)


try:  # what a tensor no one else holds shows (private APIs of torch 2.x; where absent, nothing is private)
    _PRIVATE = _use_counts(torch.empty(1))
except (AttributeError, RuntimeError, TypeError):
    _PRIVATE = None


def private(t):
    """True when writing over t changes nothing anyone else reads: only the
    caller holds the tensor, and no other tensor (a view, a base) is on its
    memory. A gradient autograd hands to one backward alone is; one handed
    to several consumers, or a caller's own `y.backward(g)`, is not."""
    return _PRIVATE is not None and _use_counts(t) == _PRIVATE


# the specs' reduction values (C's ubg_reduction); batchmean is the distillation losses' alone
REDUCTIONS = {"mean": 0, "sum": 1, "none": 2, "batchmean": 3}


def choice(name, value, table):
    """value (a name in table, or one of its codes) as the code"""
    if isinstance(value, str) and value in table:
        return table[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in table.values():
        return value
    raise ValueError("%s=%r is not one of %s" % (name, value, ", ".join(repr(k) for k in table)))


def rows_cols(t):
    """t as a row-wise kernel's [rows, cols]: rows of its last dimension
    (a 0-dimensional t is one row of one)"""
    cols = t.shape[-1] if t.dim() else 1
    return (t.numel() // cols if cols else 0), cols


def f32(x):
    """x rounded to float32: a float argument as the kernels take it"""
    return ctypes.c_float(x).value


def launch(kernel, pass_, dtype, **args):
    """kernel.pass_ (a spec's pass or composite op) on the process context,
    arguments by the spec's names; raises with the library's message"""
    code = _CODES.get(dtype)
    if code is None:  # not a torch dtype: Context.launch's lookup, and its message
        context().launch(kernel, pass_, dtype, **args)
    else:
        context()._launch_args(kernel, pass_, code, args)


# Outputs of 2 MiB and more live in private anonymous mappings advised
# for transparent huge pages, kept in a pool for reuse once no tensor
# views them any more: PyTorch's CPU allocator hands out fresh pages for
# every large tensor, and a kernel's first write of 32 MiB then spends most
# of its time in page faults (8192 of them with 4 KiB pages). The pool
# keeps at most pool_limit() bytes; empty_cache() returns the free ones.
_HUGE = 2 << 20
_pool = {}  # mapping bytes -> [mmap]
_pool_bytes = 0
_pool_limit = int(os.environ.get("UBGEN_PY_POOL_BYTES", 2 << 30))
_pool_lock = threading.Lock()


# A mapping no tensor views is held by three references only, where these
# loops look: the pool's list, the loop's name and getrefcount's argument
# (a tensor's storage holds one more, for as long as any view of it lives).
_UNUSED = 3


def _mapping(size):
    global _pool_bytes
    bucket = _pool.setdefault(size, [])
    for buf in bucket:
        if sys.getrefcount(buf) == _UNUSED:
            return buf
    if _pool_bytes + size > _pool_limit:
        _drop_free()
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        buf.madvise(mmap.MADV_HUGEPAGE)
    except (AttributeError, OSError):  # no transparent huge pages here: 4 KiB pages
        pass
    if _pool_bytes + size <= _pool_limit:
        bucket.append(buf)
        _pool_bytes += size
    return buf


def _drop_free():
    global _pool_bytes
    for size, bucket in _pool.items():
        keep = [b for b in bucket if sys.getrefcount(b) > _UNUSED]
        _pool_bytes -= size * (len(bucket) - len(keep))
        bucket[:] = keep


def empty(shape, dtype):
    """an uninitialized tensor of shape and dtype for an op's output"""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < _HUGE:  # the sizes one by one: torch parses them faster than a tuple
        return torch.empty(*shape, dtype=dtype) if shape else torch.empty((), dtype=dtype)
    size = (nbytes + 2 * _HUGE - 1) // _HUGE * _HUGE  # room to start on a 2 MiB boundary
    with _pool_lock:  # the view holds the mapping before another thread looks
        buf = _mapping(size)
        raw = torch.frombuffer(buf, dtype=torch.uint8)
    off = (-raw.data_ptr()) % _HUGE
    return raw[off:off + nbytes].view(dtype).view(shape)


def empty_like(t):
    """empty(t.shape, t.dtype); a plain tensor under 2 MiB in one call
    (the shape and dtype read back to Python and parsed again cost twice
    as much)"""
    if type(t) is torch.Tensor and t.nbytes < _HUGE:
        return torch.empty_like(t, memory_format=torch.contiguous_format)
    return empty(t.shape, t.dtype)


def empty_cache():
    """returns the pool's free mappings to the system"""
    with _pool_lock:
        _drop_free()


def pool_bytes():
    """bytes of mappings the pool holds, in use or free"""
    return _pool_bytes


def set_pool_limit(nbytes):
    """the most the pool keeps (default 2 GiB, or $UBGEN_PY_POOL_BYTES); 0 keeps nothing"""
    global _pool_limit
    if not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError("pool limit %r is not a byte count >= 0" % (nbytes,))
    with _pool_lock:
        _pool_limit = nbytes
        if _pool_bytes > nbytes:
            _drop_free()
