"""gpumem: share libgpumem's memory pools with Python GPU runtimes.

numba, CuPy and PyTorch each keep a pool of their own; in one process,
memory freed by one is never reused by another, and none of it shows in
libgpumem's memory report.  This package routes their allocations to
libgpumem's pool for each device (the experimental C tier
<gpumem/experimental/foreign.h>, through ctypes; no compiled extension):

    NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba python3 prog.py   # numba
    import gpumem.cupy; gpumem.cupy.install()                 # CuPy
    import gpumem.torch; gpumem.torch.install()               # PyTorch

and gpumem.memory_report() shows what each runtime holds.  The C tier is
experimental: this package and the library must come from one release.
doc/python.md has the whole story.
"""
import contextlib
import ctypes

from . import _lib
from ._lib import GpumemError

__all__ = [
    "GpumemError", "version", "backend", "device_count", "alloc", "free", "host_alloc", "host_free",
    "managed_alloc", "lookup", "device_pointer", "ipc_handle", "release_held", "stats", "runtimes",
    "memory_report", "memory_info", "trace_start", "trace_stop", "trace_mark", "trace_region", "trace",
    "Stream", "defer_cleanup", "PER_THREAD_STREAM", "LEGACY_STREAM", "LEGACY_ONLY_STREAM",
]

_L = _lib.lib
_check = _lib.check

#: CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, as stream values.
LEGACY_STREAM = 1
PER_THREAD_STREAM = 2
#: The legacy default stream, for memory used on it alone: its free records
#: no event (GPUMEM_FOREIGN_STREAM_LEGACY_ONLY; CuPy's null stream).
LEGACY_ONLY_STREAM = 3

IPC_HANDLE_SIZE = 64


def version():
    """The library's version, such as '1.1.0'."""
    return _L.gpumem_version_string().decode()


def backend():
    """The driver backend in use: 'cuda' or 'sim' (GPUMEM_BACKEND)."""
    name = ctypes.c_char_p()
    _check(_L.gpumem_backend(ctypes.byref(name)))
    return name.value.decode()


def device_count():
    n = ctypes.c_int()
    _check(_L.gpumem_device_count(ctypes.byref(n)))
    return n.value


def _rt(runtime):
    return None if runtime is None else runtime.encode()


def _stream(stream):
    """A stream value: None or an int (a CUstream), or an object with .handle
    or .ptr (numba's and CuPy's streams) or .cuda_stream (PyTorch's)."""
    if stream is None:
        return 0
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if v is not None:
            stream = v
            break
    v = getattr(stream, "value", stream)  # ctypes.c_void_p
    return int(v or 0)


def alloc(size, device=0, stream=0, runtime="python"):
    """Device memory: size bytes of device's pool for work on stream (a
    CUstream; 0 is the legacy default stream).  Returns the pointer as an
    int (0 for size 0).  Free it with free()."""
    p = ctypes.c_void_p()
    _check(_L.gpumem_foreign_alloc(_rt(runtime), device, size, _stream(stream), ctypes.byref(p)))
    return p.value or 0


def free(ptr, stream=0):
    """Frees memory of alloc() or managed_alloc(), ordered after the work
    queued on stream so far.  Freeing 0 does nothing; a pointer that is not
    live raises GpumemError (nothing is freed)."""
    _check(_L.gpumem_foreign_free(ptr or None, _stream(stream)))


def host_alloc(size, device=0, mapped=False, portable=False, wc=False, runtime="python"):
    """Page-locked host memory from device's page-locked pool for these
    flags; returns the host pointer as an int.  Free it with host_free()."""
    flags = ((_lib.HOST_MAPPED if mapped else 0) | (_lib.HOST_PORTABLE if portable else 0)
             | (_lib.HOST_WRITECOMBINED if wc else 0))
    p = ctypes.c_void_p()
    _check(_L.gpumem_foreign_host_alloc(_rt(runtime), device, size, flags, ctypes.byref(p)))
    return p.value or 0


def host_free(ptr):
    """Frees memory of host_alloc()."""
    _check(_L.gpumem_foreign_host_free(ptr or None))


def managed_alloc(size, device=0, attach_global=True, runtime="python"):
    """Managed memory (cuMemAllocManaged), not pooled; free it with free()."""
    p = ctypes.c_void_p()
    _check(_L.gpumem_foreign_managed_alloc(_rt(runtime), device, size, 1 if attach_global else 0,
                                           ctypes.byref(p)))
    return p.value or 0


def lookup(ptr):
    """What a live allocation is: a dict with device, base, size and kind
    ('device', 'pinned', 'mapped' or 'managed'); ptr is its start."""
    d, b, s, k = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_int()
    _check(_L.gpumem_foreign_lookup(ptr or None, ctypes.byref(d), ctypes.byref(b), ctypes.byref(s), ctypes.byref(k)))
    return {"device": d.value, "base": b.value or 0, "size": s.value, "kind": _lib.KINDS.get(k.value, str(k.value))}


def device_pointer(ptr):
    """The device address of mapped memory of host_alloc(mapped=True)."""
    d = ctypes.c_uint64()
    _check(_L.gpumem_foreign_device_pointer(ptr or None, ctypes.byref(d)))
    return d.value


def ipc_handle(ptr):
    """(handle, offset): the driver's 64-byte CUipcMemHandle of the driver
    allocation holding device address ptr, and ptr's offset in it.  ptr may
    be memory of alloc(), an address inside it, or another library's device
    memory (gpumem_foreign_ipc_handle)."""
    h = ctypes.create_string_buffer(IPC_HANDLE_SIZE)
    off = ctypes.c_size_t()
    _check(_L.gpumem_foreign_ipc_handle(ptr or None, h, ctypes.byref(off)))
    return h.raw, off.value


def release_held(device=-1):
    """Gives the blocks the pools hold for reuse back to the driver (-1: every device)."""
    _check(_L.gpumem_foreign_release_held(device))


def _context(device):
    c = ctypes.c_void_p()
    _check(_L.gpumem_foreign_context(device, ctypes.byref(c)))
    return c


def memory_info(device=0):
    """(free, total) bytes of device, from the driver."""
    f, t = ctypes.c_uint64(), ctypes.c_uint64()
    _check(_L.gpumem_memory_info(_context(device), ctypes.byref(f), ctypes.byref(t)))
    return f.value, t.value


def stats(runtime="python"):
    """One runtime's live memory: a dict of struct gpumem_foreign_stats."""
    s = _lib.ForeignStats(size=ctypes.sizeof(_lib.ForeignStats))
    _check(_L.gpumem_foreign_stats(_rt(runtime), ctypes.byref(s)))
    return {name: getattr(s, name) for name, _ in _lib.ForeignStats._fields_ if name != "size"}


def runtimes():
    """The runtimes that allocated so far, in order of first use."""
    out, i = [], 0
    name = ctypes.c_char_p()
    while _L.gpumem_foreign_runtime(i, ctypes.byref(name)) == 0:
        out.append(name.value.decode())
        i += 1
    return out


def memory_report(device=0, device_info=False):
    """libgpumem's memory report of device (every context of it in this
    process: gpumem_memory_report with GPUMEM_MEMORY_WHOLE_DEVICE) as a
    dict, and under 'runtimes' each foreign runtime's live memory.
    device_info=True adds the driver's free and total memory (one driver call)."""
    r = _lib.MemoryReport(size=ctypes.sizeof(_lib.MemoryReport))
    flags = _lib.GPUMEM_MEMORY_WHOLE_DEVICE | (_lib.GPUMEM_MEMORY_DEVICE_INFO if device_info else 0)
    _check(_L.gpumem_memory_report(_context(device), flags, ctypes.byref(r)))
    out = {}
    for name, typ in _lib.MemoryReport._fields_:
        if name in ("size", "flags"):
            continue
        v = getattr(r, name)
        out[name] = {f: getattr(v, f) for f, _ in _lib.Usage._fields_} if typ is _lib.Usage else v
    out["runtimes"] = {rt: stats(rt) for rt in runtimes()}
    return out


def trace_start(path, flags=0):
    """Starts a trace of the whole library into path (gpumem_trace_start);
    foreign allocations appear in regions named after their runtime."""
    _check(_L.gpumem_trace_start(str(path).encode(), flags))


def trace_stop():
    _check(_L.gpumem_trace_stop())


def trace_mark(name):
    _check(_L.gpumem_trace_mark(name.encode()))


@contextlib.contextmanager
def trace_region(name):
    """A named region of the trace (gpumem_trace_push / pop)."""
    _check(_L.gpumem_trace_push(name.encode()))
    try:
        yield
    finally:
        _check(_L.gpumem_trace_pop())


@contextlib.contextmanager
def trace(path, flags=0):
    """with gpumem.trace("run.gmtrace"): ... records a trace of the block."""
    trace_start(path, flags)
    try:
        yield
    finally:
        trace_stop()


@contextlib.contextmanager
def defer_cleanup(device=0):
    """numba's defer_cleanup for the library's deferred driver frees of device."""
    ctx = _context(device)
    _check(_L.gpumem_defer_cleanup_begin(ctx))
    try:
        yield
    finally:
        _check(_L.gpumem_defer_cleanup_end(ctx))


class Stream:
    """A libgpumem stream of device's foreign context; .handle is its CUstream
    as an int, to give to alloc() and free() or to another runtime."""

    def __init__(self, device=0, non_blocking=False):
        self._s = ctypes.c_void_p()
        _check(_L.gpumem_stream_create(_context(device), 1 if non_blocking else 0, ctypes.byref(self._s)))
        h = ctypes.c_void_p()
        _check(_L.gpumem_foreign_stream_handle(self._s, ctypes.byref(h)))
        self.handle = h.value or 0
        self.device = device

    def synchronize(self):
        _check(_L.gpumem_stream_synchronize(self._s))

    def query(self):
        """True when the stream's work is done."""
        st = _L.gpumem_stream_query(self._s)
        if st in (0,):
            return True
        if _L.gpumem_status_string(st) == b"GPUMEM_ERROR_NOT_READY":
            return False
        _check(st)

    def close(self):
        if self._s:
            s, self._s = self._s, None
            _check(_L.gpumem_stream_destroy(s))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
