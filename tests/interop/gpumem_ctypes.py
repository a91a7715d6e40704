"""A small ctypes binding of libgpumem for the interop scripts.

The library is the one GPUMEM_LIBRARY names (tests/test-interop.sh sets it to
the built lib/.libs/libgpumem.so.1).  Every call checks its status and raises
GpumemError with gpumem_last_error().  Exit codes of the scripts: 0 passed,
77 skipped (after a line "SKIP: reason"), anything else failed.
"""
import ctypes
import os
import sys

MAX_NDIM = 32
IPC_HANDLE_SIZE = 2048
POINTER_KINDS = {0: "unknown", 1: "device", 2: "pinned", 3: "mapped", 4: "managed"}


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(77)


def need(module):
    """Imports a package or skips the script."""
    try:
        return __import__(module, fromlist=["_"])
    except Exception as e:  # ImportError, or a broken CUDA install
        skip("%s is not usable: %s" % (module, e))


class GpumemError(RuntimeError):
    pass


class CAI(ctypes.Structure):
    """gpumem_cuda_array_interface (gpumem/interop.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("version", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_NDIM), ("has_strides", ctypes.c_int),
                ("strides", ctypes.c_int64 * MAX_NDIM), ("typestr", ctypes.c_char * 24),
                ("descr", ctypes.c_char_p), ("descr_buffer", ctypes.c_char_p),
                ("descr_buffer_size", ctypes.c_size_t), ("data", ctypes.c_uint64),
                ("readonly", ctypes.c_int), ("has_mask", ctypes.c_int), ("has_stream", ctypes.c_int),
                ("stream", ctypes.c_ssize_t)]


class PointerInfo(ctypes.Structure):
    """gpumem_pointer_info (gpumem/ipc.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("kind", ctypes.c_int), ("device", ctypes.c_int),
                ("driver_context", ctypes.c_uint64), ("device_pointer", ctypes.c_uint64),
                ("host_pointer", ctypes.c_void_p), ("range_start", ctypes.c_uint64),
                ("range_size", ctypes.c_uint64), ("ipc_capable", ctypes.c_int)]


class IpcHandle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * IPC_HANDLE_SIZE)]


P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
I64P = ctypes.POINTER(ctypes.c_int64)

_SIGNATURES = {
    "gpumem_context_create": [ctypes.c_int, PP],
    "gpumem_context_release": [P],
    "gpumem_dtype_from_typestr": [ctypes.c_char_p, PP],
    "gpumem_host_array_wrap": [P, ctypes.c_int, I64P, I64P, P, PP],
    "gpumem_to_device": [P, P, P, ctypes.c_uint, PP],
    "gpumem_device_array": [P, ctypes.c_int, I64P, I64P, P, ctypes.c_char, P, PP],
    "gpumem_array_copy": [P, P, P],
    "gpumem_array_release": [P],
    "gpumem_array_device_pointer": [P, ctypes.POINTER(ctypes.c_uint64)],
    "gpumem_array_to_dlpack": [P, ctypes.c_uint, PP],
    "gpumem_array_from_dlpack": [P, P, ctypes.c_uint, PP],
    "gpumem_array_interface": [P, P, ctypes.POINTER(CAI)],
    "gpumem_is_cuda_array": [ctypes.c_uint64, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(PointerInfo)],
    "gpumem_ipc_get_handle": [P, ctypes.POINTER(IpcHandle)],
    "gpumem_ipc_open": [P, ctypes.POINTER(IpcHandle), PP],
}

_CTYPES = {"<f4": ctypes.c_float, "<f8": ctypes.c_double, "<i4": ctypes.c_int32, "<i8": ctypes.c_int64}


class Lib:
    def __init__(self, path=None):
        path = path or os.environ.get("GPUMEM_LIBRARY", "libgpumem.so.1")
        os.environ.setdefault("GPUMEM_BACKEND", "cuda")
        self.so = ctypes.CDLL(path)
        self.so.gpumem_last_error.restype = ctypes.c_char_p
        self.so.gpumem_last_error.argtypes = []
        for name, args in _SIGNATURES.items():
            f = getattr(self.so, name)
            f.argtypes = args
            f.restype = ctypes.c_int

    def call(self, name, *args):
        st = getattr(self.so, name)(*args)
        if st != 0:
            raise GpumemError("%s: status %d: %s" % (name, st, self.so.gpumem_last_error().decode()))

    def out(self, name, *args):
        p = ctypes.c_void_p()
        self.call(name, *(args + (ctypes.byref(p),)))
        return p

    # ---- conveniences ----
    def context(self, device=0):
        return self.out("gpumem_context_create", device)

    def dtype(self, typestr):
        return self.out("gpumem_dtype_from_typestr", typestr.encode())

    def to_device(self, ctx, values, typestr="<f4", shape=None):
        """A device array of the values (a flat list), C order."""
        shape = shape or (len(values),)
        buf = (_CTYPES[typestr] * len(values))(*values)
        s = (ctypes.c_int64 * len(shape))(*shape)
        h = self.out("gpumem_host_array_wrap", ctypes.cast(buf, P), len(shape), s, None, self.dtype(typestr))
        try:
            return self.out("gpumem_to_device", ctx, h, None, 0)
        finally:
            self.call("gpumem_array_release", h)

    def read(self, array, count, typestr="<f4", shape=None):
        """The array's elements as a flat list, C order."""
        shape = shape or (count,)
        buf = (_CTYPES[typestr] * count)()
        s = (ctypes.c_int64 * len(shape))(*shape)
        h = self.out("gpumem_host_array_wrap", ctypes.cast(buf, P), len(shape), s, None, self.dtype(typestr))
        try:
            self.call("gpumem_array_copy", h, array, None)
        finally:
            self.call("gpumem_array_release", h)
        return list(buf)

    def write(self, array, values, typestr="<f4", shape=None):
        shape = shape or (len(values),)
        buf = (_CTYPES[typestr] * len(values))(*values)
        s = (ctypes.c_int64 * len(shape))(*shape)
        h = self.out("gpumem_host_array_wrap", ctypes.cast(buf, P), len(shape), s, None, self.dtype(typestr))
        try:
            self.call("gpumem_array_copy", array, h, None)
        finally:
            self.call("gpumem_array_release", h)

    def release(self, array):
        self.call("gpumem_array_release", array)

    def interface(self, array):
        """The __cuda_array_interface__ dict of an array."""
        d = CAI()
        d.size = ctypes.sizeof(CAI)
        self.call("gpumem_array_interface", array, None, ctypes.byref(d))
        cai = {"shape": tuple(d.shape[i] for i in range(d.ndim)), "typestr": d.typestr.decode(),
               "data": (d.data, bool(d.readonly)), "version": d.version,
               "strides": tuple(d.strides[i] for i in range(d.ndim)) if d.has_strides else None}
        if d.has_stream:
            cai["stream"] = d.stream
        return cai

    def pointer_info(self, pointer):
        r = ctypes.c_int()
        info = PointerInfo()
        info.size = ctypes.sizeof(PointerInfo)
        self.call("gpumem_is_cuda_array", pointer, ctypes.byref(r), ctypes.byref(info))
        return bool(r.value), info


# ---- DLPack capsules (the CPython C API through ctypes) ----
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [P, ctypes.c_char_p, P]
_api.PyCapsule_GetPointer.restype = P
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DLTENSOR = ctypes.c_char_p(b"dltensor")  # kept alive: the capsule keeps a pointer to its name
_USED = ctypes.c_char_p(b"used_dltensor")


def capsule_of(lib, array):
    """A "dltensor" capsule (legacy DLManagedTensor) of a gpumem array; the
    consumer calls the tensor's deleter."""
    t = lib.out("gpumem_array_to_dlpack", array, 0)
    return _api.PyCapsule_New(t, _DLTENSOR, None)


class Exported:
    """An object with __dlpack__ / __dlpack_device__, for from_dlpack()."""

    def __init__(self, lib, array, device):
        self.lib, self.array, self.device = lib, array, device

    def __dlpack__(self, stream=None, **kwargs):
        return capsule_of(self.lib, self.array)

    def __dlpack_device__(self):
        return (2, self.device)  # kDLCUDA


def import_capsule(lib, ctx, capsule):
    """A gpumem array owning the capsule's tensor (the capsule is marked used)."""
    t = _api.PyCapsule_GetPointer(capsule, _DLTENSOR)
    a = lib.out("gpumem_array_from_dlpack", ctx, ctypes.c_void_p(t), 0)
    _api.PyCapsule_SetName(capsule, _USED)
    return a


class Checks:
    """Counts failed checks; exit() ends the script."""

    def __init__(self):
        self.failed = 0

    def ok(self, cond, name):
        print(("ok: " if cond else "FAILED: ") + name)
        if not cond:
            self.failed += 1

    def exit(self):
        sys.exit(1 if self.failed else 0)
