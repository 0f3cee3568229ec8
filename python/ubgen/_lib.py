"""libubgen.so through ctypes: where it is, its C types, its functions.

The library is found, in order, at $UBGEN_LIB, at the path `make install`
recorded next to this package (_install.py), or in the build tree this
package sits in (python/ubgen -> build/lib). ctypes releases the GIL for
the length of every call, so several Python threads run kernels at once.
"""
import ctypes
import os

F32, F16, BF16 = 0, 1, 2
DTYPE_NAMES = ("f32", "f16", "bf16")

OK, EINVAL, ERANGE, EUB, ENOMEM, ECOMPILE, ENOTFOUND, EIO = range(8)
BACKENDS = {"auto": 0, "aot": 1, "tcc": 2, "gcc": 3}
CASTINGS = {"llama": 0, "gemma": 1, "none": 2}
REDUCTIONS = {"mean": 0, "sum": 1, "none": 2}


class Config(ctypes.Structure):
    _fields_ = [
        ("ub_bytes", ctypes.c_size_t),
        ("safety_margin", ctypes.c_double),
        ("threads", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("tuning_db", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("spec_path", ctypes.c_char_p),
    ]


ARG_PTR, ARG_I64, ARG_F64 = 0, 1, 2


class _ArgValue(ctypes.Union):
    _fields_ = [("p", ctypes.c_void_p), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


class Arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("v", _ArgValue)]


class FlceOpts(ctypes.Structure):
    _fields_ = [
        ("ignore_index", ctypes.c_int64),
        ("label_smoothing", ctypes.c_float),
        ("lse_square_scale", ctypes.c_float),
        ("softcap", ctypes.c_float),
        ("reduction", ctypes.c_int),
        ("ce_weight", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("grad_output", ctypes.c_void_p),
        ("token_scaling", ctypes.c_int),
        ("accum_dtype", ctypes.c_int),
    ]


class FlceOut(ctypes.Structure):
    _fields_ = [
        ("loss", ctypes.c_void_p),
        ("z_loss", ctypes.c_void_p),
        ("argmax", ctypes.c_void_p),
        ("dx", ctypes.c_void_p),
        ("dweight", ctypes.c_void_p),
        ("dbias", ctypes.c_void_p),
        ("token_accuracy", ctypes.c_void_p),
    ]


class CeOut(ctypes.Structure):
    _fields_ = [
        ("loss", ctypes.c_void_p),
        ("z_loss", ctypes.c_void_p),
        ("argmax", ctypes.c_void_p),
        ("token_accuracy", ctypes.c_void_p),
        ("dlogits", ctypes.c_void_p),
    ]


def _candidates():
    env = os.environ.get("UBGEN_LIB")
    if env:
        return [env]
    found = []
    try:
        from . import _install  # written by `make install`

        found.append(_install.LIB)
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, "..", "..", "build", "lib", "libubgen.so"))
    return found


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(os.path.abspath(path)), os.path.abspath(path)
        tried.append(path)
    raise ImportError(
        "ubgen: libubgen.so not found (tried %s); build it with `make`, install it with `make install`, "
        "or set UBGEN_LIB to its path" % ", ".join(tried)
    )


lib, LIB_PATH = _load()

_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_f = ctypes.c_float
_int = ctypes.c_int


def _proto(name, args, res=ctypes.c_int):
    fn = getattr(lib, name)
    fn.argtypes = args
    fn.restype = res
    return fn


ctx_create = _proto("ubg_ctx_create", [ctypes.POINTER(Config), ctypes.POINTER(_p)])
ctx_destroy = _proto("ubg_ctx_destroy", [_p], None)
ctx_error = _proto("ubg_ctx_error", [_p], ctypes.c_char_p)
ctx_last_variant = _proto("ubg_ctx_last_variant", [_p], ctypes.c_char_p)
status_str = _proto("ubg_status_str", [_int], ctypes.c_char_p)
set_variant = _proto("ubg_set_variant", [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p])
prepare = _proto("ubg_prepare", [_p, ctypes.c_char_p, ctypes.c_char_p, _int, ctypes.c_char_p])
launch_sized = _proto("ubg_launch_sized", [_p, ctypes.c_char_p, ctypes.c_char_p, _int, ctypes.POINTER(Arg),
                                           ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)])
rms_norm_fwd = _proto("ubg_rms_norm_fwd", [_p, _int, _i64, _i64, _p, _p, _f, _f, _int, _p, _p])
rms_norm_bwd = _proto("ubg_rms_norm_bwd", [_p, _int, _i64, _i64, _p, _p, _p, _p, _f, _int, _p, _p])
embedding_fwd = _proto("ubg_embedding_fwd", [_p, _int, _i64, _i64, _p, _i64, _p, _p])
embedding_bwd = _proto("ubg_embedding_bwd", [_p, _int, _i64, _i64, _i64, _p, _p, _i64, _p])
attn_res_fwd = _proto("ubg_attn_res_fwd", [_p, _int, _i64, _i64, _i64, _p, _p, _p, _f, _p, _p, _p])
attn_res_bwd = _proto("ubg_attn_res_bwd", [_p, _int, _i64, _i64, _i64, _p, _p, _p, _p, _p, _p, _p, _p, _p])
flce_opts_init = _proto("ubg_flce_opts_init", [ctypes.POINTER(FlceOpts)], None)
flce = _proto(
    "ubg_flce", [_p, _int, _i64, _i64, _i64, _p, _p, _p, ctypes.POINTER(FlceOpts), ctypes.POINTER(FlceOut)]
)
cross_entropy = _proto(
    "ubg_cross_entropy", [_p, _int, _i64, _i64, _p, _p, ctypes.POINTER(FlceOpts), ctypes.POINTER(CeOut)]
)


class UbgenError(RuntimeError):
    """A failure of the library that is not the caller's input: a kernel
    that did not compile, a file it could not read."""


class OutOfBounds(ValueError, AssertionError):
    """An index or target outside its range. A ValueError, and an
    AssertionError whose message says "out of bounds", as Liger's kernels
    raise one: code written for Liger that catches it keeps working."""


def raise_for(status, handle):
    """The exception for a non-OK status, with the library's message (the
    calling thread's last failure on this context)."""
    msg = ctx_error(handle)
    text = msg.decode("utf-8", "replace") if msg else status_str(status).decode()
    if status == ERANGE:
        raise OutOfBounds(text + " (out of bounds)")
    if status in (EINVAL, EUB):
        raise ValueError(text)
    if status == ENOMEM:
        raise MemoryError(text)
    raise UbgenError(text)
