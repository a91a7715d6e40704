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
from . import host_alloc as _host_alloc, host_free as _host_free

__all__ = ["install", "uninstall", "malloc", "malloc_pinned"]

RUNTIME = "cupy"

# The hot path calls the library directly: CuPy allocates and frees often.
_c_alloc = _lib.lib.gpumem_foreign_alloc
_c_free = _lib.lib.gpumem_foreign_free
_RT = RUNTIME.encode()
_get_device = cupy.cuda.runtime.getDevice
_current_stream = cupy.cuda.get_current_stream


class _Block:
    """Owns one device allocation; frees it, on the stream it was made for,
    when CuPy drops its last reference."""

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


def malloc(size):
    """CuPy's allocator function: a cupy.cuda.MemoryPointer of size bytes."""
    device = _get_device()
    stream = _current_stream().ptr
    p = ctypes.c_void_p()
    st = _c_alloc(_RT, device, size, stream, ctypes.byref(p))
    if st:
        _lib.check(st)
    ptr = p.value or 0
    mem = cupy.cuda.UnownedMemory(ptr, size, _Block(ptr, stream), device)
    return cupy.cuda.MemoryPointer(mem, 0)


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
