"""Contexts: one per process by default, created on first use.

A context holds the settings (backend, threads, UB budget, tuning DB,
cache directory), the compiled kernels and the UB arenas. It may be used
from several threads at once. configure() replaces the process context;
the one it replaces is kept until the process exits, since another thread
may be inside a call on it.
"""
import ctypes
import os
import struct
import sys
import threading

from . import _lib


class Context:
    """A libubgen context. Arguments left as None take the library's
    defaults (and its UBGEN_* environment variables)."""

    def __init__(self, backend=None, threads=None, ub_bytes=None, safety_margin=None, tuning_db=None,
                 cache_dir=None, spec_path=None):
        cfg = _lib.Config()
        if backend is not None:
            if backend not in _lib.BACKENDS:
                raise ValueError("backend=%r is not one of %s" % (backend, ", ".join(_lib.BACKENDS)))
            cfg.backend = _lib.BACKENDS[backend]
        if threads is not None:
            if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
                raise ValueError("threads=%r is not a positive int" % (threads,))
            cfg.threads = threads
        if ub_bytes is not None:
            if not isinstance(ub_bytes, int) or isinstance(ub_bytes, bool) or ub_bytes < 1:
                raise ValueError("ub_bytes=%r is not a positive int" % (ub_bytes,))
            cfg.ub_bytes = ub_bytes
        if safety_margin is not None:
            cfg.safety_margin = float(safety_margin)
        for name, value in (("tuning_db", tuning_db), ("cache_dir", cache_dir), ("spec_path", spec_path)):
            if value is not None and not isinstance(value, str):
                raise TypeError("%s=%r is not a str" % (name, value))
        self._keep = [s.encode() if s is not None else None for s in (tuning_db, cache_dir, spec_path)]
        cfg.tuning_db, cfg.cache_dir, cfg.spec_path = self._keep
        handle = ctypes.c_void_p()
        status = _lib.ctx_create(ctypes.byref(cfg), ctypes.byref(handle))
        if status != _lib.OK:
            _lib.raise_for(status, None)
        self.handle = handle.value
        self.settings = dict(backend=backend, threads=threads, ub_bytes=ub_bytes, safety_margin=safety_margin,
                             tuning_db=tuning_db, cache_dir=cache_dir, spec_path=spec_path)
        self.torch_threads = None  # the process context's: torch's thread count it was made with, when it follows it

    def check(self, status):
        if status != _lib.OK:
            _lib.raise_for(status, self.handle)

    def last_variant(self):
        """The variant(s) this thread's last call on this context ran."""
        v = _lib.ctx_last_variant(self.handle)
        return v.decode() if v else None

    def set_variant(self, kernel, pass_, variant):
        """Forces a variant of kernel.pass_ (None: automatic again)."""
        status = _lib.set_variant(self.handle, kernel.encode(), pass_.encode(),
                                  variant.encode() if variant is not None else None)
        if status == _lib.ENOTFOUND:  # no such kernel, pass or variant: the caller's value
            msg = _lib.ctx_error(self.handle)
            raise ValueError(msg.decode("utf-8", "replace") if msg else _lib.status_str(status).decode())
        self.check(status)

    def prepare(self, kernel, pass_, dtype, variant=None):
        """Gets the code of a variant (None: every variant that fits the
        budget) of kernel.pass_ ready without running it; returns
        "<variant>@<backend>" for the last one."""
        status = _lib.prepare(self.handle, kernel.encode(), pass_.encode(), _dtype_code(dtype),
                              variant.encode() if variant is not None else None)
        self._check_named(status)
        return self.last_variant()

    def launch(self, kernel, pass_, dtype, **args):
        """Runs kernel.pass_ of any spec the library serves (a user's own
        from UBGEN_SPEC_PATH or an emitted table too), arguments by their
        spec names: tensors as torch tensors or numpy arrays, contiguous and
        on the CPU, outputs written in place; None for an omitted optional
        tensor; ints and floats. The library checks every buffer's byte
        size against the spec's shape before anything runs."""
        self._launch_args(kernel, pass_, _dtype_code(dtype), args)

    def _launch_args(self, kernel, pass_, code, args):
        """launch with the dtype as the library's code and the arguments as
        a dict, name -> value: for callers that hold both already
        (ubgen.torch's ops), without a second keyword packing per call"""
        values = list(args.values())
        key = (kernel, pass_, tuple(args), tuple(map(type, values)))
        layout = _layouts.get(key) or _new_layout(key)
        packed, nbytes = layout.pack(values, self.handle, code)
        status = _lib.launch_sized(self.handle, layout.kernel, layout.pass_, code, packed, len(values), nbytes)
        if status != _lib.OK:
            self._check_named(status)

    def _check_named(self, status):
        if status == _lib.ENOTFOUND:  # no such kernel, pass or variant: the caller's value
            msg = _lib.ctx_error(self.handle)
            raise ValueError(msg.decode("utf-8", "replace") if msg else _lib.status_str(status).decode())
        self.check(status)

    def close(self):
        if self.handle:
            _lib.ctx_destroy(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _dtype_code(dtype):
    """"f32", "f16", "bf16", or a torch dtype of one of them"""
    code = _lib.dtype_code(dtype)
    if code is None:
        raise ValueError("dtype=%r is not one of %s (or their torch dtypes)"
                         % (dtype, ", ".join(name for name, _ in _lib.DTYPES)))
    return code


# The packing of launch's arguments, worked out once per call site: on a
# small shape the Python work is most of what an op costs (bench_ops.py's
# overhead), so a call does no more than check its buffers and pack.
_layouts = {}  # (kernel, pass, argument names, their values' types) -> _Layout


def _new_layout(key):
    return _layouts.setdefault(key, _Layout(*key))


class _Layout:
    """How to pack a call of kernel.pass_ whose arguments are names, with
    values of types: each one's kind and the head of its Arg (its name's
    address and kind), and which values go through a function to an
    address and a byte size, checked against the element type the spec
    gives them in the call's dtype (and, for outputs, that they can be
    written): what a byte count cannot tell"""

    def __init__(self, kernel, pass_, names, types):
        self.kernel, self.pass_, self.names = kernel.encode(), pass_.encode(), names
        kinds, self.buffers = [], []  # buffers: (index, function)
        for i, cls in enumerate(types):
            kind, to_buffer = _kind_of(cls)
            kinds.append(kind)
            if to_buffer is not None:
                self.buffers.append((i, to_buffer))
        self.args = _lib.args_struct(kinds)
        # head 1, value 1, head 2, ...: a call puts its values in the gaps
        self.flat = [None] * (2 * len(names))
        self.flat[0::2] = (_lib.arg_head(name, kind) for name, kind in zip(names, kinds))
        self.no_sizes = [-1] * len(names)  # a scalar's "byte size"
        self.sizes = struct.Struct("=%dq" % len(names))
        self.wants = {}  # (context handle, dtype code) -> [(index, function, _Want or None)]

    def pack(self, values, handle, code):
        """(packed Args, packed byte sizes) of a call on context handle in
        dtype code; values is changed"""
        if not values:  # the library reads one Arg and one size even so
            return bytes(ctypes.sizeof(_lib.Arg)), bytes(8)
        buffers = self.wants.get((handle, code)) or self._wants(handle, code)
        names, sizes = self.names, self.no_sizes[:]
        for i, to_buffer, want in buffers:
            values[i], sizes[i] = to_buffer(names[i], values[i], want)
        flat = self.flat[:]
        flat[1::2] = values
        return self.args.pack(*flat), self.sizes.pack(*sizes)

    def _wants(self, handle, code):
        spec = _lib.args_of(handle, self.kernel, self.pass_, code)
        wants = [(i, to_buffer, _Want.of(spec.get(self.names[i]))) for i, to_buffer in self.buffers]
        return self.wants.setdefault((handle, code), wants)


class _Want:
    """what a tensor argument must be: its element type (the spec's name,
    torch's dtype, numpy's name) and whether the call writes it"""

    def __init__(self, elem, written):
        self.elem, self.written, self.dtype_name = elem, written, _lib.ELEMS.get(elem)
        torch = sys.modules.get("torch")
        self.torch_dtype = getattr(torch, self.dtype_name, None) if torch is not None and self.dtype_name else None

    @staticmethod
    def of(info):
        """the _Want of an argument's (elem, written), None for a name the
        spec does not have (the library names it)"""
        return None if info is None or info[0] is None else _Want(*info)

    def refuse(self, name, got):
        raise ValueError("%s: %s elements; the call takes %s (%s) here" % (name, got, self.elem, self.dtype_name))


def _kind_of(cls):
    """(the Arg kind, the function to an (address, byte size) or None) of
    a value of type cls: what Context.launch passes for it. Ints (bool
    too) and floats pack as they are."""
    if cls is type(None):
        return _lib.ARG_PTR, _null
    if issubclass(cls, int):
        return _lib.ARG_I64, (None if cls in (int, bool) else _integer)
    if issubclass(cls, float):
        return _lib.ARG_F64, None
    torch = sys.modules.get("torch")  # not imported: no tensors to pass
    if torch is not None and cls in (torch.Tensor, torch.nn.Parameter):
        return _lib.ARG_PTR, _tensor_buffer
    # a subclass of Tensor (which may answer device and sizes its own way),
    # a numpy array, or neither (TypeError): read each value as it comes
    return _lib.ARG_PTR, _buffer


def _null(name, value, want):
    """an omitted optional tensor: the address 0"""
    return 0, -1


def _integer(name, value, want):
    """an int subclass's value as an int"""
    return int(value), -1


# torch gives a tensor without elements the address 0, which the library
# takes for a missing tensor: an empty tensor or array gets the address of
# this buffer instead (aligned for every element type; nothing is read or
# written there)
_EMPTY = (ctypes.c_double * 8)()
_EMPTY_ADDRESS = ctypes.addressof(_EMPTY)

_NOT_ON_CPU = "%s: a tensor on %s; ubgen runs on the CPU"
_NOT_CONTIGUOUS = "%s: not contiguous (strides %s); pass .contiguous() and read outputs from it"


def _tensor_buffer(name, t, want):
    """_buffer of a torch.Tensor or Parameter, by the attributes quickest
    to read (is_cpu, nbytes: one call each, not two)"""
    if want is not None and t.dtype is not want.torch_dtype:
        want.refuse(name, t.dtype)
    if not t.is_cpu:
        raise ValueError(_NOT_ON_CPU % (name, t.device))
    if not t.is_contiguous():
        raise ValueError(_NOT_CONTIGUOUS % (name, tuple(t.stride())))
    nbytes = t.nbytes
    return (t.data_ptr() if nbytes else _EMPTY_ADDRESS), nbytes


def _buffer(name, value, want):
    """(address, byte size) of a contiguous CPU tensor or array"""
    if hasattr(value, "data_ptr") and hasattr(value, "element_size"):  # a torch tensor
        if want is not None and value.dtype is not want.torch_dtype:
            want.refuse(name, value.dtype)
        if value.device.type != "cpu":
            raise ValueError(_NOT_ON_CPU % (name, value.device))
        if not value.is_contiguous():
            raise ValueError(_NOT_CONTIGUOUS % (name, tuple(value.stride())))
        nbytes = value.numel() * value.element_size()
        return (value.data_ptr() if nbytes else _EMPTY_ADDRESS), nbytes
    if hasattr(value, "__array_interface__") and hasattr(value, "flags"):  # a numpy array
        if want is not None:
            if value.dtype.name != want.dtype_name:
                want.refuse(name, "numpy " + value.dtype.name)
            if want.written and not value.flags["WRITEABLE"]:
                raise ValueError("%s: a read-only array, which the call writes" % name)
        if not value.flags["C_CONTIGUOUS"]:
            raise ValueError("%s: not C-contiguous" % name)
        return (value.__array_interface__["data"][0] if value.nbytes else _EMPTY_ADDRESS), value.nbytes
    raise TypeError("%s: %s is not a tensor, an array, None, an int or a float" % (name, type(value).__name__))


_lock = threading.Lock()
_current = None
_retired = []
_settings = {}
_torch = None  # torch, while the process context follows its thread count


def _follows_torch(settings):
    """torch, when the process context takes its threads from torch's
    intra-op count: torch is loaded and neither configure(threads=) nor
    UBGEN_THREADS gives a count. One count for both keeps the two OpenMP
    pools from oversubscribing the cores (docs/python.md)."""
    torch = sys.modules.get("torch")
    if torch is None or settings.get("threads") is not None or os.environ.get("UBGEN_THREADS"):
        return None
    return torch


def context():
    """The process context, created on first use (thread-safe); made anew
    with torch's thread count when it follows torch and torch.set_num_threads
    changed it."""
    global _current, _torch
    ctx = _current
    if ctx is not None and (_torch is None or _torch.get_num_threads() == ctx.torch_threads):
        return ctx
    with _lock:
        follow = _follows_torch(_settings)
        if _current is None or (follow is not None and follow.get_num_threads() != _current.torch_threads):
            if _current is not None:
                _retired.append(_current)
            _current = _made(_settings, follow)
            _torch = follow
        ctx = _current
    return ctx


def _made(settings, follow):
    """a context of these settings, on torch's thread count when it follows torch"""
    if follow is None:
        return Context(**settings)
    n = follow.get_num_threads()
    ctx = Context(**dict(settings, threads=n))
    ctx.settings["threads"], ctx.torch_threads = None, n
    return ctx


def configure(**settings):
    """Sets the process context's settings (backend, threads, ub_bytes,
    safety_margin, tuning_db, cache_dir, spec_path) and creates it anew: the next
    call runs on it. A bad setting raises and changes nothing."""
    global _current, _settings, _torch
    follow = _follows_torch(settings)
    fresh = _made(settings, follow)
    with _lock:
        if _current is not None:
            _retired.append(_current)
        _current = fresh
        _settings = dict(settings)
        _torch = follow
    return fresh


def settings():
    """The settings the process context was made with (None: a default)."""
    return dict(context().settings)
