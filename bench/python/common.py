"""What every Python benchmark shares: timing in one process with the
providers interleaved, the peak memory of a call, Liger's JSON format."""
import ctypes
import gc
import json
import os
import statistics
import time

import torch


def percentiles(samples):
    """(p50, p20, p80) of a list of numbers"""
    s = sorted(samples)
    q = statistics.quantiles(s, n=10, method="inclusive") if len(s) > 1 else [s[0]] * 9
    return statistics.median(s), q[1], q[7]


def timed(fn):
    """seconds fn() takes"""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(cases, reps, warmup=1):
    """cases: {name: fn() -> {mode: seconds}}; every case once per
    repetition, in turn, so the machine's state changes them alike.
    Returns {name: {mode: [ms, ...]}}."""
    out = {name: {} for name in cases}
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    for _ in range(reps):
        for name, fn in cases.items():
            for mode, sec in fn().items():
                out[name].setdefault(mode, []).append(sec * 1e3)
    return out


_libc = ctypes.CDLL(None)


def memory_mode():
    """From here on large blocks come from mmap and go back to the kernel
    when freed (glibc's M_MMAP_THRESHOLD fixed at 256 KiB), so a call's peak
    shows in its own measurement, not in a heap kept resident; and
    ubgen.torch keeps no mappings for reuse. Call it after the timings:
    it changes how the process allocates for good."""
    from ubgen.torch import _util

    _libc.mallopt(-3, 256 * 1024)  # M_MMAP_THRESHOLD
    _util.set_pool_limit(0)


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def peak_extra_bytes(fn):
    """the resident memory fn() adds at its peak, over what was resident
    before it (inputs and parameters allocated and touched beforehand)"""
    gc.collect()
    _libc.malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = _status("VmRSS:")
    keep = fn()
    peak = _status("VmHWM:")
    del keep
    return max(peak - before, 0)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def entry(kernel, provider, mode, metric, unit, x_name, x_label, xs, ys, extra):
    """one record of Liger's benchmark data format; ys: [(p50, p20, p80)]"""
    return {
        "kernel_name": kernel, "kernel_provider": provider, "kernel_operation_mode": mode,
        "metric_name": metric, "metric_unit": unit, "gpu_name": cpu_name(), "x_name": x_name, "x_label": x_label,
        "x_values": list(xs), "y_values_50": [y[0] for y in ys], "y_values_20": [y[1] for y in ys],
        "y_values_80": [y[2] for y in ys], "extra_benchmark_config_str": json.dumps(extra),
        "timestamp": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "liger_version": "ubgen-0.1.0",
    }


def write_json(path, records):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(records, f, indent=2)
    os.replace(tmp, path)


def set_threads(n):
    torch.set_num_threads(n)
    os.environ.setdefault("UBGEN_THREADS", str(n))
