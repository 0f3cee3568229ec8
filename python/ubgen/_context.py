"""Contexts: one per process by default, created on first use.

A context holds the settings (backend, threads, UB budget, tuning DB,
cache directory), the compiled kernels and the UB arenas. It may be used
from several threads at once. configure() replaces the process context;
the one it replaces is kept until the process exits, since another thread
may be inside a call on it.
"""
import ctypes
import threading

from . import _lib


class Context:
    """A libubgen context. Arguments left as None take the library's
    defaults (and its UBGEN_* environment variables)."""

    def __init__(self, backend=None, threads=None, ub_bytes=None, safety_margin=None, tuning_db=None,
                 cache_dir=None):
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
        self._keep = [s.encode() if s is not None else None for s in (tuning_db, cache_dir)]
        cfg.tuning_db, cfg.cache_dir = self._keep
        handle = ctypes.c_void_p()
        status = _lib.ctx_create(ctypes.byref(cfg), ctypes.byref(handle))
        if status != _lib.OK:
            _lib.raise_for(status, None)
        self.handle = handle.value
        self.settings = dict(backend=backend, threads=threads, ub_bytes=ub_bytes, safety_margin=safety_margin,
                             tuning_db=tuning_db, cache_dir=cache_dir)

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

    def close(self):
        if self.handle:
            _lib.ctx_destroy(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_lock = threading.Lock()
_current = None
_retired = []
_settings = {}


def context():
    """The process context, created on first use (thread-safe)."""
    global _current
    ctx = _current
    if ctx is None:
        with _lock:
            if _current is None:
                _current = Context(**_settings)
            ctx = _current
    return ctx


def configure(**settings):
    """Sets the process context's settings (backend, threads, ub_bytes,
    safety_margin, tuning_db, cache_dir) and creates it anew: the next
    call runs on it. A bad setting raises and changes nothing."""
    global _current, _settings
    fresh = Context(**settings)
    with _lock:
        if _current is not None:
            _retired.append(_current)
        _current = fresh
        _settings = dict(settings)
    return fresh


def settings():
    """The settings the process context was made with (None: a default)."""
    return dict(context().settings)
