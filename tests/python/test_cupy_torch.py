"""gpumem.cupy and gpumem.torch on the simulator, with stand-ins for
CuPy and PyTorch (neither runs without a GPU): the stand-ins record what
the modules hand to CuPy's and PyTorch's allocator hooks, and the tests
check the memory behind it; PyTorch's two C functions are called as
PyTorch calls them, through their C signatures."""
import ctypes
import gc
import sys
import types
import unittest

import gpumem
from gpumem import _lib


_STREAM_FN = ctypes.CFUNCTYPE(ctypes.c_ssize_t)
_MALLOC_FN = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_FREE_FN = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
_SIGNATURE = b"intptr_t (void)"


def _capsule(fn, name):
    """A PyCapsule of C function fn named name, as Cython's __pyx_capi__ has."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.cast(fn, ctypes.c_void_p), name, None)


def _fake_cupy(stream_ptr, function_allocator, c_allocator=False):
    cupy = types.ModuleType("cupy")
    cuda = types.SimpleNamespace()
    cuda.runtime = types.SimpleNamespace(getDevice=lambda: 0)
    cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=stream_ptr)

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id=-1):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    class PinnedMemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    class PythonFunctionAllocatorMemory:
        """As CuPy's: malloc_func(size, device) for size > 0, and
        free_func(ptr, device) when it goes, its exception only printed."""

        def __init__(self, size, malloc_func, free_func, device_id):
            self._free_func, self.device_id, self.size = free_func, device_id, size
            self.ptr = malloc_func(size, device_id) if size > 0 else 0

        def __del__(self):
            if self.ptr:
                self._free_func(self.ptr, self.device_id)

    class PythonFunctionAllocator:
        def __init__(self, malloc_func, free_func):
            self._malloc_func, self._free_func = malloc_func, free_func

        def malloc(self, size):
            return MemoryPointer(PythonFunctionAllocatorMemory(size, self._malloc_func, self._free_func, 0), 0)

    class OutOfMemoryError(MemoryError):
        def __init__(self, size, total, limit=0):
            super().__init__("out of memory allocating %d bytes" % size)

    class CFunctionAllocatorMemory:
        """As CuPy's: malloc_func(param, size, device) for size > 0, called
        holding the GIL, a Python exception it set raised; free_func(param,
        ptr, device) when it goes."""

        def __init__(self, size, param, malloc_func, free_func, device_id):
            self._param, self._free, self.device_id, self.size = param, _FREE_FN(free_func), device_id, size
            self.ptr = 0
            if size > 0:
                try:
                    self.ptr = _MALLOC_FN(malloc_func)(param, size, device_id) or 0
                except Exception as e:  # as CuPy 14: the exception is not checked, Python says so
                    raise SystemError("%r returned a result with an exception set" % type(self)) from e

        def __del__(self):
            if self.ptr:
                self._free(self._param, self.ptr, self.device_id)

    class CFunctionAllocator:
        def __init__(self, param, malloc_func, free_func, owner):
            self._args, self._owner = (param, malloc_func, free_func), owner

        def malloc(self, size):
            param, m, f = self._args
            return MemoryPointer(CFunctionAllocatorMemory(size, param, m, f, 0), 0)

    cuda.memory = types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError)
    if c_allocator:
        cuda.memory.CFunctionAllocator = CFunctionAllocator
    cuda.UnownedMemory = UnownedMemory
    if function_allocator:
        cuda.PythonFunctionAllocator = PythonFunctionAllocator
    cuda.MemoryPointer = MemoryPointer
    cuda.PinnedMemoryPointer = PinnedMemoryPointer
    cuda.hooks = {}
    cuda.set_allocator = lambda f: cuda.hooks.__setitem__("device", f)
    cuda.set_pinned_memory_allocator = lambda f: cuda.hooks.__setitem__("pinned", f)
    cupy.cuda = cuda
    cupy.get_default_memory_pool = lambda: types.SimpleNamespace(malloc="cupy-pool")
    cupy.get_default_pinned_memory_pool = lambda: types.SimpleNamespace(malloc="cupy-pinned-pool")
    return cupy


class Cupy(unittest.TestCase):
    """gpumem.cupy over a CuPy without PythonFunctionAllocator: UnownedMemory."""
    FUNCTION_ALLOCATOR = False
    C_ALLOCATOR = False
    _STREAM_MODULES = ("cupy_backends.cuda.stream", "cupy.cuda.stream")

    def setUp(self):
        self.stream = gpumem.Stream()
        self.saved = sys.modules.get("cupy"), sys.modules.pop("gpumem.cupy", None)
        self.saved_streams = {m: sys.modules.get(m) for m in self._STREAM_MODULES}
        sys.modules["cupy"] = self.cupy = _fake_cupy(self.stream.handle, self.FUNCTION_ALLOCATOR, self.C_ALLOCATOR)
        # CuPy's C function for its current stream, as its Cython module exports it
        self.current = self.stream.handle
        self.stream_fn = _STREAM_FN(lambda: self.current)
        fake = types.ModuleType("cupy_backends.cuda.stream")
        fake.__pyx_capi__ = {"get_current_stream_ptr": _capsule(self.stream_fn, _SIGNATURE)}
        sys.modules["cupy_backends.cuda.stream"] = fake
        import gpumem.cupy as gc_
        self.gc = gc_

    def tearDown(self):
        for m, mod in self.saved_streams.items():
            if mod is None:
                sys.modules.pop(m, None)
            else:
                sys.modules[m] = mod
        cupy, mod = self.saved
        if cupy is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = cupy
        sys.modules.pop("gpumem.cupy", None)
        if mod is not None:
            sys.modules["gpumem.cupy"] = mod
        self.stream.close()

    def test_install(self):
        self.gc.install()
        self.assertIs(self.cupy.cuda.hooks["device"], self.gc.malloc)
        self.assertIs(self.cupy.cuda.hooks["pinned"], self.gc.malloc_pinned)
        self.gc.uninstall()
        self.assertEqual(self.cupy.cuda.hooks["device"], "cupy-pool")

    def test_device_memory(self):
        """malloc: a block on CuPy's current stream, freed with CuPy's last reference"""
        mp = self.gc.malloc(3000)
        p = mp.ptr
        self.assertEqual(gpumem.lookup(p), {"device": 0, "base": p, "size": 3000, "kind": "device"})
        self.assertEqual(mp.mem.size, 3000)
        self.assertEqual(gpumem.stats("cupy")["device_count"], 1)
        del mp
        gc.collect()
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)
        self.assertEqual(gpumem.stats("cupy")["device_count"], 0)
        q = self.gc.malloc(3000)
        self.assertEqual(q.ptr, p, "freed on the stream, reused at once on it")
        del q
        self.assertEqual(self.gc.malloc(0).ptr, 0)

    def test_path(self):
        self.assertEqual(self.gc.PATH, "c" if self.C_ALLOCATOR else "python" if self.FUNCTION_ALLOCATOR else "unowned")

    def test_pinned_memory(self):
        mp = self.gc.malloc_pinned(5000)
        p = mp.ptr
        self.assertEqual(gpumem.lookup(p)["kind"], "pinned")
        ctypes.memset(p, 1, 5000)
        del mp
        gc.collect()
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)


class CupyFunctionAllocator(Cupy):
    """gpumem.cupy over CuPy's PythonFunctionAllocator (CuPy 8 and later)."""
    FUNCTION_ALLOCATOR = True

    def test_null_stream(self):
        """CuPy's null stream: blocks are freed legacy-only, reused at once on it"""
        self.gc._current_stream = lambda: types.SimpleNamespace(ptr=0)
        self.current = 0
        mp = self.gc.malloc(7000)
        p = mp.ptr
        del mp
        gc.collect()
        q = self.gc.malloc(7000)
        self.assertEqual(q.ptr, p)
        del q

    def test_function_allocator(self):
        """install hands CuPy a PythonFunctionAllocator's malloc over the library"""
        self.assertIsInstance(self.gc._python_allocator, self.cupy.cuda.PythonFunctionAllocator)
        self.assertEqual(self.gc.malloc.__self__, self.gc._python_allocator)


class CupyCFunctionAllocator(CupyFunctionAllocator):
    """gpumem.cupy over CuPy's CFunctionAllocator: gpumem_cupy_malloc and
    gpumem_cupy_free called through CuPy's C signatures, the stream from
    CuPy's exported C function."""
    C_ALLOCATOR = True

    def test_function_allocator(self):
        """install hands CuPy a CFunctionAllocator's malloc over the library's two functions"""
        self.assertIsInstance(self.gc._allocator, self.cupy.cuda.memory.CFunctionAllocator)
        self.assertIs(self.gc.malloc, self.gc._c_malloc)
        param, m, f = self.gc._allocator._args
        self.assertEqual(m, ctypes.cast(_lib.lib.gpumem_cupy_malloc, ctypes.c_void_p).value)
        self.assertEqual(f, ctypes.cast(_lib.lib.gpumem_cupy_free, ctypes.c_void_p).value)

    def test_out_of_memory(self):
        """the pool's failure is CuPy's OutOfMemoryError, with the library's message"""
        with self.assertRaises(self.cupy.cuda.memory.OutOfMemoryError) as cm:
            self.gc.malloc(1 << 62)
        self.assertIsInstance(cm.exception, self.gc.OutOfMemoryError)
        self.assertIn("gpumem_foreign_alloc: out of device memory", str(cm.exception))
        self.assertEqual(gpumem.stats("cupy")["device_count"], 0)

    def test_bad_stream(self):
        """a current stream that is no stream raises the library's message"""
        self.current = 7
        with self.assertRaises(self.gc.AllocationError) as cm:
            self.gc.malloc(64)
        self.assertIn("stream 0x7 is not a stream", str(cm.exception))
        self.assertIsInstance(cm.exception, gpumem.GpumemError)

    def test_wrong_signature(self):
        """a stream function whose C signature is not the expected one is not called: the Python path"""
        sys.modules["cupy_backends.cuda.stream"].__pyx_capi__ = {
            "get_current_stream_ptr": _capsule(self.stream_fn, b"int (void)")}
        sys.modules.pop("gpumem.cupy", None)
        import gpumem.cupy as gc2
        self.assertEqual(gc2.PATH, "python")


class Torch(unittest.TestCase):
    def test_install(self):
        """install hands PyTorch the library's path and the two function names"""
        saved = sys.modules.get("torch"), sys.modules.pop("gpumem.torch", None)
        torch = types.ModuleType("torch")
        calls = []

        class CUDAPluggableAllocator:
            def __init__(self, path, alloc_fn, free_fn):
                calls.append(("pluggable", path, alloc_fn, free_fn))

        torch.cuda = types.SimpleNamespace(memory=types.SimpleNamespace(
            CUDAPluggableAllocator=CUDAPluggableAllocator,
            change_current_allocator=lambda a: calls.append(("change", a))))
        sys.modules["torch"] = torch
        try:
            import gpumem.torch as gt
            gt.install()
            self.assertEqual(calls[0], ("pluggable", _lib.path, "gpumem_torch_alloc", "gpumem_torch_free"))
            self.assertEqual(calls[1][0], "change")
        finally:
            sys.modules.pop("gpumem.torch", None)
            if saved[0] is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved[0]
            if saved[1] is not None:
                sys.modules["gpumem.torch"] = saved[1]

    def test_c_functions(self):
        """gpumem_torch_alloc and gpumem_torch_free through PyTorch's C signatures"""
        lib = ctypes.CDLL(_lib.path)
        alloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)(
            ("gpumem_torch_alloc", lib))
        free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)(
            ("gpumem_torch_free", lib))
        with gpumem.Stream() as s:
            p = alloc(1 << 16, 0, s.handle)
            self.assertTrue(p)
            self.assertEqual(gpumem.lookup(p)["size"], 1 << 16)
            self.assertEqual(gpumem.stats("torch")["device_count"], 1)
            free(p, 1 << 16, 0, s.handle)
            self.assertEqual(gpumem.stats("torch")["device_count"], 0)
            free(p, 1 << 16, 0, s.handle)  # a second free: no crash, nothing freed
            self.assertIn("freed already", _lib.lib.gpumem_last_error().decode())
            self.assertIsNone(alloc(16, 64, None), "device 64: NULL")


if __name__ == "__main__":
    unittest.main()
