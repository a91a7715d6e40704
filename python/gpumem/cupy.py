"""CuPy's device and pinned allocators over libgpumem's pools.

    import gpumem.cupy
    gpumem.cupy.install()

From then on CuPy's arrays take their memory from libgpumem's pool of the
current device, on CuPy's current stream (a block CuPy frees goes back to
the pool ordered after that stream's work), and its page-locked staging
buffers from libgpumem's page-locked pool; both are shared with numba
(gpumem.numba) and PyTorch (gpumem.torch) in the same process and show in
gpumem.memory_report() under the runtime "cupy".  uninstall() gives CuPy
back its own pools.
"""
import ctypes

import cupy

from . import _lib
from . import host_alloc as _host_alloc, host_free as _host_free, LEGACY_ONLY_STREAM as _LEGACY_ONLY

__all__ = ["install", "uninstall", "malloc", "malloc_pinned", "PATH", "OutOfMemoryError", "AllocationError"]

RUNTIME = "cupy"

# The hot path calls the library directly: CuPy allocates and frees often.
_c_alloc = _lib.lib.gpumem_foreign_alloc
_c_free = _lib.lib.gpumem_foreign_free
_RT = RUNTIME.encode()
_get_device = cupy.cuda.runtime.getDevice
_current_stream = cupy.cuda.get_current_stream
_void_p = ctypes.c_void_p
_byref = ctypes.byref
# A free on the stream its allocation was made for (the library keeps it):
# CuPy's own pool, too, returns a block to its allocation stream's arena.
_ALLOCATED = 4  # GPUMEM_FOREIGN_STREAM_ALLOCATED
# CuPy's null stream is the legacy default stream, which CuPy's memory is
# used on alone (its own pool assumes as much): its blocks are allocated
# with LEGACY_ONLY_STREAM, whose free records no event.

_memory = getattr(cupy.cuda, "memory", None)


class OutOfMemoryError(getattr(_memory, "OutOfMemoryError", MemoryError)):
    """CuPy's OutOfMemoryError, raised with the library's message (what
    gpumem_last_error() said) when the pool cannot give the memory."""

    def __init__(self, message):
        MemoryError.__init__(self, message)


class AllocationError(_lib.GpumemError):
    """Any other failure of an allocation through the C allocator: its
    text is the library's message; .status and .name are None (the message
    names the failure)."""

    def __init__(self, message):
        RuntimeError.__init__(self, message)
        self.status = None
        self.name = None


def _malloc_ptr(size, device):
    """PythonFunctionAllocator's malloc: a pointer to size bytes (> 0) of
    device's pool, for CuPy's current stream."""
    p = _void_p()
    st = _c_alloc(_RT, device, size, _current_stream().ptr or _LEGACY_ONLY, _byref(p))
    if st:
        _lib.check(st)
    return p.value


def _free_ptr(ptr, device):
    """PythonFunctionAllocator's free: ordered after the work queued on the
    stream the block was allocated for.  CuPy calls it from a deallocator,
    where an exception is only printed."""
    st = _c_free(ptr, _ALLOCATED)
    if st:
        _lib.check(st)


class _Block:
    """Owns one device allocation; frees it, on the stream it was made for,
    when CuPy drops its last reference (CuPy without PythonFunctionAllocator)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            p, self.ptr = self.ptr, 0
            st = _c_free(p, _ALLOCATED)
            if st:
                _lib.check(st)  # shown as an ignored exception: __del__ cannot raise


class _PinnedBlock:
    """One page-locked allocation, as CuPy's PinnedMemoryPointer wants it
    (.ptr, .size); freed with its last reference."""

    __slots__ = ("ptr", "size", "__weakref__")

    def __init__(self, ptr, size):
        self.ptr = ptr
        self.size = size

    def __int__(self):
        return self.ptr

    def __del__(self):
        if self.ptr:
            p, self.ptr = self.ptr, 0
            _host_free(p)


def _malloc_unowned(size):
    """malloc over UnownedMemory, for a CuPy without PythonFunctionAllocator."""
    device = _get_device()
    p = _void_p()
    st = _c_alloc(_RT, device, size, _current_stream().ptr or _LEGACY_ONLY, _byref(p))
    if st:
        _lib.check(st)
    ptr = p.value or 0
    mem = cupy.cuda.UnownedMemory(ptr, size, _Block(ptr), device)
    return cupy.cuda.MemoryPointer(mem, 0)


# ---- CuPy's C-function allocator --------------------------------------------------------
# CFunctionAllocator calls gpumem_cupy_malloc and gpumem_cupy_free directly,
# with no Python on the hot path.  It passes no stream: the library asks
# CuPy's own C function for the current stream, which CuPy's Cython module
# exports in __pyx_capi__ with its C signature as the capsule's name.  When
# that function is not there as expected, the Python-function allocator is
# used instead.


class _Param(ctypes.Structure):
    """struct gpumem_cupy_param (gpumem/experimental/foreign.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("current_stream", _void_p), ("error_occurred", _void_p),
                ("set_error", _void_p), ("out_of_memory", _void_p), ("error", _void_p)]


_STREAM_SIGNATURE = b"intptr_t (void)"


def _stream_function():
    """The address of CuPy's C function giving the current stream
    (get_current_stream_ptr of cupy_backends.cuda.stream, else of
    cupy.cuda.stream), or None."""
    import importlib
    import sys
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = _void_p, [ctypes.py_object, ctypes.c_char_p]
    for name in ("cupy_backends.cuda.stream", "cupy.cuda.stream"):
        mod = sys.modules.get(name)
        if mod is None:
            try:
                mod = importlib.import_module(name)
            except ImportError:
                continue
        capsule = (getattr(mod, "__pyx_capi__", None) or {}).get("get_current_stream_ptr")
        if capsule is None:
            continue
        try:
            if get_name(capsule) != _STREAM_SIGNATURE:
                continue
            return get_pointer(capsule, _STREAM_SIGNATURE)
        except (TypeError, ValueError):  # not a capsule
            continue
    return None


def _c_allocator():
    """CuPy's CFunctionAllocator over gpumem_cupy_malloc and
    gpumem_cupy_free, or None where CuPy lacks it or its stream function."""
    factory = getattr(_memory, "CFunctionAllocator", None)
    stream = _stream_function() if factory is not None else None
    if stream is None:
        return None
    addr = lambda f: ctypes.cast(f, _void_p).value
    param = _Param(ctypes.sizeof(_Param), stream, addr(ctypes.pythonapi.PyErr_Occurred),
                   addr(ctypes.pythonapi.PyErr_SetString), id(OutOfMemoryError), id(AllocationError))
    # the param, and the two types it names, live as long as the allocator
    owner = (param, OutOfMemoryError, AllocationError)
    return factory(ctypes.addressof(param), addr(_lib.lib.gpumem_cupy_malloc), addr(_lib.lib.gpumem_cupy_free),
                   owner)


_function_allocator = getattr(cupy.cuda, "PythonFunctionAllocator", None)
_python_allocator = _function_allocator(_malloc_ptr, _free_ptr) if _function_allocator is not None else None
_allocator = _c_allocator()


def _c_malloc(size, _malloc=_allocator.malloc if _allocator is not None else None):
    """malloc over the C allocator.  CuPy 14 does not check for the
    exception gpumem_cupy_malloc sets, and Python then raises SystemError
    with it as the cause: raised here as itself, so that a caller catches
    CuPy's OutOfMemoryError as from CuPy's own pool."""
    try:
        return _malloc(size)
    except SystemError as e:
        if isinstance(e.__cause__, (OutOfMemoryError, AllocationError)):
            raise e.__cause__ from None
        raise


if _allocator is not None:
    PATH = "c"
    malloc = _c_malloc
elif _python_allocator is not None:
    # CuPy's own Cython class makes the memory object and the pointer, and
    # calls _free_ptr from its deallocator: the Python on the hot path is
    # _malloc_ptr and _free_ptr, one library call each.
    PATH = "python"
    malloc = _python_allocator.malloc
else:
    PATH = "unowned"
    malloc = _malloc_unowned
# malloc(size), CuPy's allocator function: a cupy.cuda.MemoryPointer of size
# bytes of the current device's pool, for CuPy's current stream.  PATH says
# which way it goes: "c" (CFunctionAllocator: no Python per allocation),
# "python" (PythonFunctionAllocator) or "unowned" (UnownedMemory).


def malloc_pinned(size):
    """CuPy's pinned allocator function: a PinnedMemoryPointer of size bytes."""
    device = cupy.cuda.runtime.getDevice()
    ptr = _host_alloc(size, device, runtime=RUNTIME)
    return cupy.cuda.PinnedMemoryPointer(_PinnedBlock(ptr, size), 0)


def install(pinned=True):
    """Makes CuPy allocate through libgpumem (device memory, and page-locked
    memory unless pinned=False)."""
    cupy.cuda.set_allocator(malloc)
    if pinned:
        cupy.cuda.set_pinned_memory_allocator(malloc_pinned)


def uninstall():
    """Gives CuPy back its default pools."""
    cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
    cupy.cuda.set_pinned_memory_allocator(cupy.get_default_pinned_memory_pool().malloc)
