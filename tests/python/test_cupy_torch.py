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


def _fake_cupy(stream_ptr, function_allocator):
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

    def setUp(self):
        self.stream = gpumem.Stream()
        self.saved = sys.modules.get("cupy"), sys.modules.pop("gpumem.cupy", None)
        sys.modules["cupy"] = self.cupy = _fake_cupy(self.stream.handle, self.FUNCTION_ALLOCATOR)
        import gpumem.cupy as gc_
        self.gc = gc_

    def tearDown(self):
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
        if self.FUNCTION_ALLOCATOR:
            self.assertEqual(self.gc._streams[p], self.stream.handle)
        else:
            self.assertEqual(mp.mem.owner.stream, self.stream.handle)
        self.assertEqual(gpumem.stats("cupy")["device_count"], 1)
        del mp
        gc.collect()
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)
        if self.FUNCTION_ALLOCATOR:
            self.assertNotIn(p, self.gc._streams, "the free forgot the block's stream")
        q = self.gc.malloc(3000)
        self.assertEqual(q.ptr, p, "freed on the stream, reused at once on it")
        del q
        self.assertEqual(self.gc.malloc(0).ptr, 0)

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
        mp = self.gc.malloc(7000)
        p = mp.ptr
        self.assertEqual(self.gc._streams[p], gpumem.LEGACY_ONLY_STREAM)
        del mp
        gc.collect()
        q = self.gc.malloc(7000)
        self.assertEqual(q.ptr, p)
        del q

    def test_function_allocator(self):
        """install hands CuPy a PythonFunctionAllocator's malloc over the library"""
        self.assertIsInstance(self.gc._allocator, self.cupy.cuda.PythonFunctionAllocator)
        self.assertEqual(self.gc.malloc.__self__, self.gc._allocator)


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
