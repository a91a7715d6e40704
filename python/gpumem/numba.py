"""numba's External Memory Management plugin over libgpumem's pools.

    NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba python3 prog.py

or, before numba makes its first context:

    from numba import cuda
    import gpumem.numba
    cuda.set_memory_manager(gpumem.numba.GpumemMemoryManager)

Device memory (memalloc), page-locked and mapped host memory (memhostalloc),
managed memory (memallocmanaged) come from libgpumem's pools of the
context's device, shared with CuPy and PyTorch in the same process
(gpumem.cupy, gpumem.torch) and with the C program; host memory numba pins
(mempin) is page-locked by libgpumem's registry.  Everything shows in
gpumem.memory_report() under the runtime "numba".

numba gives memalloc no stream: device memory is allocated and freed on
the legacy default stream (the per-thread default stream when
NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM is set), whose frees libgpumem orders
after the work queued on every blocking stream with an event, so a block
is not reused while a kernel may still use it.
"""
import contextlib
import ctypes
import functools
import threading
import weakref

from numba.cuda.cudadrv import driver as _drv

from . import _lib
from . import free as _free, host_alloc as _host_alloc, host_free as _host_free
from . import managed_alloc as _managed_alloc, ipc_handle as _ipc_handle, memory_info as _memory_info
from . import release_held as _release_held, PER_THREAD_STREAM

__all__ = ["GpumemMemoryManager"]

RUNTIME = "numba"


def _config_per_thread():
    try:
        from numba.cuda.core import config  # numba-cuda
    except ImportError:
        from numba.core import config  # numba with numba.cuda inside
    return bool(getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", False))


def _ipc_handle_object(raw):
    """numba's type of a driver IPC handle, holding the 64 bytes raw."""
    binding = getattr(_drv, "binding", None)
    if binding is not None and hasattr(binding, "CUipcMemHandle") and getattr(_drv, "USE_NV_BINDING", True):
        h = binding.CUipcMemHandle()
        h.reserved = raw
        return h
    from numba.cuda.cudadrv import drvapi
    return drvapi.cu_ipc_mem_handle.from_buffer_copy(raw)


def _host_ptr(addr):
    """A host address as numba's PinnedMemory and MappedMemory take it:
    ctypes.c_void_p for numba's ctypes binding (numba < 0.57 without
    NUMBA_CUDA_USE_NVIDIA_BINDING), an int for the NVIDIA binding
    (numba-cuda)."""
    return ctypes.c_void_p(addr) if getattr(_drv, "USE_NV_BINDING", True) is False or \
        getattr(_drv, "USE_NV_BINDING", True) == 0 else addr


def _dev_ptr_type():
    """The type numba's MemoryPointer takes a device address in: the
    binding's CUdeviceptr for the NVIDIA binding (numba-cuda, as numba makes
    its own NULL pointers), else ctypes.c_void_p.  Read once, at import."""
    binding = getattr(_drv, "binding", None)
    if getattr(_drv, "USE_NV_BINDING", True) and binding is not None and hasattr(binding, "CUdeviceptr"):
        return binding.CUdeviceptr
    return ctypes.c_void_p


_dev_ptr = _dev_ptr_type()


def _ordinal(device):
    """A device's ordinal: numba's Device has .id; a context that a program
    attached (numba's driver.Context(dev, handle), as numba's
    Test3rdPartyContext makes it) may hold the binding's CUdevice, which is
    the ordinal as an int."""
    d = getattr(device, "id", None)
    return int(device) if d is None else int(d)


def _address(memory):
    """The device address of a numba MemoryPointer (or of one numba made
    over another library's memory): device_pointer_value, else its handle."""
    v = getattr(memory, "device_pointer_value", None)
    if v is None:
        h = getattr(memory, "handle", None)
        v = getattr(h, "value", h)
    return int(v or 0)


class _Registration:
    """A host buffer page-locked for mempin: libgpumem's registration scope."""

    def __init__(self, ctx, pointer, size, mapped):
        L = _lib.lib
        shape = (ctypes.c_int64 * 1)(size)
        self.array = ctypes.c_void_p()
        _lib.check(L.gpumem_host_array_wrap(pointer, 1, shape, None, L.gpumem_dtype_builtin(_lib.GPUMEM_UINT8),
                                            ctypes.byref(self.array)))
        self.reg = ctypes.c_void_p()
        self.mapped = mapped
        arrays = (ctypes.c_void_p * 1)(self.array)
        try:
            if mapped:
                views = (ctypes.c_void_p * 1)()
                _lib.check(L.gpumem_mapped(ctx, arrays, 1, None, ctypes.byref(self.reg), views))
                L.gpumem_array_release(views[0])
            else:
                _lib.check(L.gpumem_pinned(ctx, arrays, 1, ctypes.byref(self.reg)))
        except BaseException:
            L.gpumem_array_release(self.array)
            raise

    def close(self):
        L = _lib.lib
        if self.reg:
            st = (L.gpumem_unmapped if self.mapped else L.gpumem_unpinned)(ctypes.byref(self.reg))
            L.gpumem_array_release(self.array)
            self.reg = None
            _lib.check(st)


def _finalize(mgr_ref, fn, args):
    """Runs fn(*args), or keeps it for the end of the manager's defer_cleanup scope."""
    m = mgr_ref()
    if m is not None and m._defer:
        with m._lock:
            if m._defer:
                m._pending.append((fn, args))
                return
    fn(*args)


def _free_device(mgr, ptr):
    """memalloc's finalizer (numba calls it through weakref.finalize when the
    MemoryPointer goes): one call of the library, on the manager's stream,
    unless a defer_cleanup scope holds the free back.  It keeps the
    manager: a manager outlives the memory it gave."""
    if mgr._defer:
        with mgr._lock:
            if mgr._defer:
                mgr._pending.append((_free_device, (mgr, ptr)))
                return
    st = _c_free(ptr, mgr._stream_value)
    if st:
        _lib.check(st)


_c_alloc = _lib.lib.gpumem_foreign_alloc
_c_free = _lib.lib.gpumem_foreign_free
_RT = RUNTIME.encode()
_byref = ctypes.byref
_void_p = ctypes.c_void_p
_partial = functools.partial


class GpumemMemoryManager(_drv.BaseCUDAMemoryManager):
    """A complete numba EMM plugin (interface version 1) over libgpumem.

    Frees go back to the pool at once, ordered after the stream's queued
    work; inside defer_cleanup() they wait until the outermost scope ends,
    as numba's own deallocations do."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._defer = 0
        self._pending = []          # frees held back by defer_cleanup: (function, args)
        self._allocations = {}      # mapped and managed memory numba refers to weakly (mem.own())
        # The stream of device memory, read from numba's config once.
        self._stream_value = PER_THREAD_STREAM if _config_per_thread() else 0
        self._ref = weakref.ref(self)
        self._device_id = None      # the context's device ordinal, read once
        self._ctx_proxy = None      # weakref.proxy(self.context), made once

    # -- the device and the stream --------------------------------------------------------------

    @property
    def _device(self):
        d = self._device_id
        if d is None:
            d = self._device_id = _ordinal(self.context.device)
        return d

    def _stream(self):
        return self._stream_value

    def _ctx(self):
        c = self._ctx_proxy
        if c is None:
            c = self._ctx_proxy = weakref.proxy(self.context)
        return c

    def _finalizer(self, fn, *args):
        """A finalizer that runs fn(*args) now, or at the end of defer_cleanup."""
        return functools.partial(_finalize, self._ref, fn, args)

    def _forget(self, key, fn, *args):
        """A finalizer that drops the strong reference kept for numba at
        once, and runs fn(*args) now or at the end of defer_cleanup (only
        the free waits, as numba's own finalizers do).  numba's
        OwnedPointer refers to the memory weakly: once numba frees it
        (cuda.mapped() calls free() on exit, its OwnedPointer goes later),
        the memory must be gone, or the OwnedPointer's end frees it a second
        time ("Freeing dead memory")."""
        mgr = weakref.ref(self)
        later = self._finalizer(fn, *args)

        def forget():
            m = mgr()
            if m is not None:
                m._allocations.pop(key, None)
            later()
        return forget

    def _unpin(self, key, reg):
        """mempin's finalizer: unregisters at once, never deferred (numba's
        own does, so that cuda.pinned() and cuda.mapped() may page-lock the
        same buffer again at once, inside defer_cleanup too), and drops the
        strong reference kept for numba at once."""
        mgr = weakref.ref(self)

        def unpin():
            m = mgr()
            if m is not None and key is not None:
                m._allocations.pop(key, None)
            reg.close()
        return unpin

    # -- the interface ------------------------------------------------------------------------

    def initialize(self):
        # Makes the device's foreign context and pool now, so that a failure
        # shows when numba makes its context, not at the first allocation.
        _memory_info(self._device)

    def memalloc(self, size):
        # The hot path (numba's device_array): one library call, and the
        # finalizer a partial of a module function; nothing else is made.
        ctx = self._ctx_proxy
        if ctx is None:
            ctx = self._ctx()
        if size == 0:
            return _drv.MemoryPointer(ctx, _dev_ptr(0), 0)
        d = self._device_id
        if d is None:
            d = self._device
        p = _void_p()
        st = _c_alloc(_RT, d, size, self._stream_value, _byref(p))
        if st:
            _lib.check(st)
        ptr = p.value
        return _drv.MemoryPointer(ctx, _dev_ptr(ptr), size, finalizer=_partial(_free_device, self, ptr))

    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        ctx = self._ctx()
        ptr = _host_alloc(size, self._device, mapped=mapped, portable=portable, wc=wc, runtime=RUNTIME)
        if mapped:
            mem = _drv.MappedMemory(ctx, _host_ptr(ptr), size,
                                    finalizer=self._forget(("host", ptr), _host_free, ptr))
            self._allocations[("host", ptr)] = mem
            return mem.own()
        return _drv.PinnedMemory(ctx, _host_ptr(ptr), size, finalizer=self._finalizer(_host_free, ptr))

    def mempin(self, owner, pointer, size, mapped=False):
        ctx = self._ctx()
        pointer = int(getattr(pointer, "value", pointer) or 0)
        reg = _Registration(_context_of(self._device), pointer, size, mapped)
        if mapped:
            key = ("pin", id(reg))
            mem = _drv.MappedMemory(ctx, _host_ptr(pointer), size, owner=owner,
                                    finalizer=self._unpin(key, reg))
            self._allocations[key] = mem
            return mem.own()
        return _drv.PinnedMemory(ctx, _host_ptr(pointer), size, owner=owner, finalizer=self._unpin(None, reg))

    def memallocmanaged(self, size, attach_global=True):
        ctx = self._ctx()
        ptr = _managed_alloc(size, self._device, attach_global=attach_global, runtime=RUNTIME)
        mem = _drv.ManagedMemory(ctx, _dev_ptr(ptr), size,
                                 finalizer=self._forget(("managed", ptr), _free, ptr, 0))
        self._allocations[("managed", ptr)] = mem
        return mem.own()

    def get_ipc_handle(self, memory):
        # memory may be memalloc's, a view into it, or memory numba wraps
        # over another library's (a foreign array, whose owner is that
        # library's object): the library finds the driver allocation that
        # holds the address and the offset in it, as numba's own manager
        # does with cuMemGetAddressRange.
        raw, offset = _ipc_handle(_address(memory))
        source_info = self.context.device.get_device_identity()
        return _drv.IpcHandle(memory, _ipc_handle_object(raw), memory.size, source_info, offset=offset)

    def get_memory_info(self):
        free, total = _memory_info(self._device)
        return _drv.MemoryInfo(free=free, total=total)

    def reset(self):
        # numba resets a context: what numba held goes, and so do the
        # blocks the pools hold for reuse.
        self._allocations.clear()
        self._flush()
        _release_held(self._device)

    @contextlib.contextmanager
    def defer_cleanup(self):
        with self._lock:
            self._defer += 1
        try:
            yield
        finally:
            with self._lock:
                self._defer -= 1
                last = self._defer == 0
            if last:
                self._flush()

    def _flush(self):
        with self._lock:
            pending, self._pending = self._pending, []
        for fn, args in pending:
            fn(*args)

    @property
    def interface_version(self):
        return 1


@functools.lru_cache(maxsize=None)
def _context_cached(device):
    c = ctypes.c_void_p()
    _lib.check(_lib.lib.gpumem_foreign_context(device, ctypes.byref(c)))
    return c.value


def _context_of(device):
    return ctypes.c_void_p(_context_cached(device))


#: What NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba loads.
_numba_memory_manager = GpumemMemoryManager
