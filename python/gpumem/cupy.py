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

__all__ = ["install", "uninstall", "malloc", "malloc_pinned"]

RUNTIME = "cupy"

# The hot path calls the library directly: CuPy allocates and frees often.
_c_alloc = _lib.lib.gpumem_foreign_alloc
_c_free = _lib.lib.gpumem_foreign_free
_RT = RUNTIME.encode()
_get_device = cupy.cuda.runtime.getDevice
_current_stream = cupy.cuda.get_current_stream
_void_p = ctypes.c_void_p
_byref = ctypes.byref

# The stream each live block was allocated for, by pointer: its free is
# ordered on it, as CuPy's own pool returns a block to its stream's arena.
# CuPy's null stream is the legacy default stream, which CuPy's memory is
# used on alone (its own pool assumes as much): its blocks are freed with
# LEGACY_ONLY_STREAM, which records no event.
_streams = {}


def _malloc_ptr(size, device):
    """PythonFunctionAllocator's malloc: a pointer to size bytes (> 0) of
    device's pool, for CuPy's current stream."""
    stream = _current_stream().ptr or _LEGACY_ONLY
    p = _void_p()
    st = _c_alloc(_RT, device, size, stream, _byref(p))
    if st:
        _lib.check(st)
    ptr = p.value
    _streams[ptr] = stream
    return ptr


def _free_ptr(ptr, device):
    """PythonFunctionAllocator's free: ordered after the work queued on the
    stream the block was allocated for.  CuPy calls it from a deallocator,
    where an exception is only printed."""
    st = _c_free(ptr, _streams.pop(ptr, 0))
    if st:
        _lib.check(st)


class _Block:
    """Owns one device allocation; frees it, on the stream it was made for,
    when CuPy drops its last reference (CuPy without PythonFunctionAllocator)."""

    __slots__ = ("ptr", "stream")

    def __init__(self, ptr, stream):
        self.ptr = ptr
        self.stream = stream

    def __del__(self):
        if self.ptr:
            p, self.ptr = self.ptr, 0
            st = _c_free(p, self.stream)
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


def _malloc_python(size):
    """malloc over UnownedMemory, for a CuPy without PythonFunctionAllocator."""
    device = _get_device()
    stream = _current_stream().ptr or _LEGACY_ONLY
    p = _void_p()
    st = _c_alloc(_RT, device, size, stream, _byref(p))
    if st:
        _lib.check(st)
    ptr = p.value or 0
    mem = cupy.cuda.UnownedMemory(ptr, size, _Block(ptr, stream), device)
    return cupy.cuda.MemoryPointer(mem, 0)


_function_allocator = getattr(cupy.cuda, "PythonFunctionAllocator", None)
if _function_allocator is not None:
    # CuPy's own Cython class makes the memory object and the pointer, and
    # calls _free_ptr from its deallocator: the Python on the hot path is
    # _malloc_ptr and _free_ptr, one library call each.
    _allocator = _function_allocator(_malloc_ptr, _free_ptr)
    malloc = _allocator.malloc
else:
    _allocator = None
    malloc = _malloc_python
# malloc(size), CuPy's allocator function: a cupy.cuda.MemoryPointer of size
# bytes of the current device's pool, for CuPy's current stream.


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
