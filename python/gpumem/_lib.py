"""ctypes bindings of libgpumem.so.1 (private).

The library is loaded once, from $GPUMEM_LIBRARY when set (a path: the
test suite points it at the build tree), else by its soname,
libgpumem.so.1, wherever the dynamic linker finds it.  Only the calls the
package uses are declared; each is checked by check(), which raises
GpumemError with the library's own message.
"""
import ctypes
import os

__all__ = ["lib", "path", "check", "GpumemError", "c_size_t", "c_void_p"]

c_size_t = ctypes.c_size_t
c_void_p = ctypes.c_void_p
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_uint64 = ctypes.c_uint64
c_char_p = ctypes.c_char_p
P = ctypes.POINTER


class GpumemError(RuntimeError):
    """A libgpumem call failed: .status is the gpumem_status, .name its
    name (GPUMEM_ERROR_...), and the text is gpumem_last_error()."""

    def __init__(self, status, name, message):
        super().__init__(message)
        self.status = status
        self.name = name


def _load():
    where = os.environ.get("GPUMEM_LIBRARY") or "libgpumem.so.1"
    try:
        return ctypes.CDLL(where), where
    except OSError as e:
        raise ImportError(
            "gpumem: cannot load %s (%s); install libgpumem1, or set GPUMEM_LIBRARY to the library's path"
            % (where, e)) from None


lib, path = _load()


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# status.h, version.h, context.h
_fn("gpumem_last_error", c_char_p)
_fn("gpumem_status_string", c_char_p, c_int)
_fn("gpumem_version_string", c_char_p)
_fn("gpumem_backend", c_int, P(c_char_p))
_fn("gpumem_device_count", c_int, P(c_int))
_fn("gpumem_memory_info", c_int, c_void_p, P(c_uint64), P(c_uint64))
# stream.h
_fn("gpumem_stream_create", c_int, c_void_p, c_uint, P(c_void_p))
_fn("gpumem_stream_destroy", c_int, c_void_p)
_fn("gpumem_stream_synchronize", c_int, c_void_p)
_fn("gpumem_stream_query", c_int, c_void_p)
# cleanup.h
_fn("gpumem_defer_cleanup_begin", c_int, c_void_p)
_fn("gpumem_defer_cleanup_end", c_int, c_void_p)
# host.h, array.h, dtype.h: page-locking a caller's buffer (mempin)
_fn("gpumem_dtype_builtin", c_void_p, c_int)
_fn("gpumem_host_array_wrap", c_int, c_void_p, c_int, P(ctypes.c_int64), P(ctypes.c_int64), c_void_p,
    P(c_void_p))
_fn("gpumem_array_release", c_int, c_void_p)
_fn("gpumem_pinned", c_int, c_void_p, P(c_void_p), c_size_t, P(c_void_p))
_fn("gpumem_unpinned", c_int, P(c_void_p))
_fn("gpumem_mapped", c_int, c_void_p, P(c_void_p), c_size_t, c_void_p, P(c_void_p), P(c_void_p))
_fn("gpumem_unmapped", c_int, P(c_void_p))
_fn("gpumem_array_device_pointer", c_int, c_void_p, P(c_uint64))
# memory.h
_fn("gpumem_memory_report", c_int, c_void_p, c_uint, c_void_p)
# trace.h
_fn("gpumem_trace_start", c_int, c_char_p, c_uint)
_fn("gpumem_trace_stop", c_int)
_fn("gpumem_trace_mark", c_int, c_char_p)
_fn("gpumem_trace_push", c_int, c_char_p)
_fn("gpumem_trace_pop", c_int)
# experimental/foreign.h
_fn("gpumem_foreign_alloc", c_int, c_char_p, c_int, c_size_t, c_void_p, P(c_void_p))
_fn("gpumem_foreign_free", c_int, c_void_p, c_void_p)
_fn("gpumem_foreign_host_alloc", c_int, c_char_p, c_int, c_size_t, c_uint, P(c_void_p))
_fn("gpumem_foreign_host_free", c_int, c_void_p)
_fn("gpumem_foreign_managed_alloc", c_int, c_char_p, c_int, c_size_t, c_int, P(c_void_p))
_fn("gpumem_foreign_lookup", c_int, c_void_p, P(c_int), P(c_void_p), P(c_size_t), P(c_int))
_fn("gpumem_foreign_device_pointer", c_int, c_void_p, P(c_uint64))
_fn("gpumem_foreign_ipc_handle", c_int, c_void_p, c_void_p, P(c_size_t))
_fn("gpumem_foreign_context", c_int, c_int, P(c_void_p))
_fn("gpumem_foreign_release_held", c_int, c_int)
_fn("gpumem_foreign_stats", c_int, c_char_p, c_void_p)
_fn("gpumem_foreign_runtime", c_int, c_int, P(c_char_p))
_fn("gpumem_foreign_stream_handle", c_int, c_void_p, P(c_void_p))


def check(status):
    """Raises GpumemError unless status is GPUMEM_OK (0)."""
    if status != 0:
        name = lib.gpumem_status_string(status)
        msg = lib.gpumem_last_error()
        raise GpumemError(status, name.decode() if name else str(status),
                          msg.decode("utf-8", "replace") if msg else "gpumem status %d" % status)


class Usage(ctypes.Structure):
    """struct gpumem_memory_usage"""
    _fields_ = [("bytes", c_uint64), ("count", c_uint64), ("peak_bytes", c_uint64), ("peak_count", c_uint64)]


class MemoryReport(ctypes.Structure):
    """struct gpumem_memory_report (GPUMEM_1.1); later versions only append."""
    _fields_ = [("size", c_size_t), ("flags", c_uint), ("ordinal", c_int), ("contexts", c_uint64),
                ("device_free_bytes", c_uint64), ("device_total_bytes", c_uint64), ("others_bytes", c_uint64),
                ("device", Usage), ("pinned", Usage), ("mapped", Usage), ("managed", Usage),
                ("registered", Usage), ("device_reserved_bytes", c_uint64),
                ("peak_device_reserved_bytes", c_uint64), ("pools", c_uint64), ("pool_held_blocks", c_uint64),
                ("pool_held_bytes", c_uint64), ("pool_largest_free_block", c_uint64),
                ("pending_frees", c_uint64), ("pending_free_bytes", c_uint64), ("driver_allocations", c_uint64),
                ("oom_ladder_runs", c_uint64), ("oom_ladder_successes", c_uint64),
                ("oom_callback_calls", c_uint64), ("oom_callback_successes", c_uint64),
                ("oom_failures", c_uint64)]


class ForeignStats(ctypes.Structure):
    """struct gpumem_foreign_stats"""
    _fields_ = [("size", c_size_t), ("device_bytes", c_uint64), ("device_count", c_uint64),
                ("host_bytes", c_uint64), ("host_count", c_uint64), ("managed_bytes", c_uint64),
                ("managed_count", c_uint64), ("peak_device_bytes", c_uint64), ("allocations", c_uint64),
                ("frees", c_uint64)]


GPUMEM_UINT8 = 5
GPUMEM_MEMORY_DEVICE_INFO = 0x1
GPUMEM_MEMORY_WHOLE_DEVICE = 0x2
HOST_PORTABLE, HOST_MAPPED, HOST_WRITECOMBINED = 0x1, 0x2, 0x4
KINDS = {0: "device", 1: "host", 2: "pinned", 3: "mapped", 4: "managed", 5: "foreign"}
