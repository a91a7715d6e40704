"""gpumem.numba against numba's real EMM interface, on the simulator.

numba cannot run CUDA here (no driver; its own CUDA simulator does not use
EMM plugins), so the manager is made as numba makes it, with a context
argument, here a stand-in that has what the manager reads (the device's
ordinal and identity).  numba's own classes are used for what the manager
returns, except MappedMemory, whose constructor asks the CUDA driver for
the device address: a subclass asks libgpumem instead.
Skipped, with the reason, where numba cannot be imported.
"""
import gc
import pickle
import unittest

import gpumem

try:
    from numba.cuda.cudadrv import driver as drv
    import gpumem.numba as gnumba
    NUMBA = None
except Exception as e:  # ImportError, or numba failing to import
    NUMBA = "numba cannot be imported: %s" % e


class FakeDevice:
    id = 0
    CAN_MAP_HOST_MEMORY = True

    def get_device_identity(self):
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}


class FakeContext:
    def __init__(self):
        self.device = FakeDevice()


class FakeCUdevice:
    """As cuda.bindings.driver.CUdevice: the ordinal by int(), no .id (numba's
    driver.Context(dev, handle) of an attached context holds one)."""

    def __int__(self):
        return 0


class CUdeviceContext:
    def __init__(self):
        self.device = FakeCUdevice()


class _Unraisable:
    """Collects what Python would print as 'Exception ignored' (a finalizer's
    exception: numba's OwnedPointer freeing dead memory), and stderr."""

    def __enter__(self):
        import io
        import sys
        self.seen = []
        self._hook, sys.unraisablehook = sys.unraisablehook, self.seen.append
        self._err, sys.stderr = sys.stderr, io.StringIO()
        return self

    def __exit__(self, *exc):
        import sys
        gc.collect()
        sys.unraisablehook = self._hook
        self.stderr, sys.stderr = sys.stderr.getvalue(), self._err
        self.messages = [repr(u.exc_value) for u in self.seen]


def _mapped_standin():
    class MappedMemory(drv.MappedMemory):
        def __init__(self, context, pointer, size, owner=None, finalizer=None):
            import ctypes
            addr = int(getattr(pointer, "value", pointer))
            self.owned = owner
            self.host_pointer = pointer
            self._bufptr_ = addr
            dev = gpumem.device_pointer(addr) if owner is None else addr
            drv.AutoFreePointer.__init__(self, context, ctypes.c_void_p(dev), size, finalizer=finalizer)
            self.handle = self.host_pointer
            self._buflen_ = self.size
    return MappedMemory


@unittest.skipIf(NUMBA is not None, NUMBA or "")
class NumbaManager(unittest.TestCase):
    def assert_memory_info(self, info):
        """info is device 0's: the same total; free memory may move between
        two reads on a real GPU that other processes share, so only bounded."""
        free, total = gpumem.memory_info(0)
        self.assertIsInstance(info, drv.MemoryInfo)
        self.assertEqual(info.total, total)
        self.assertTrue(0 < info.free <= info.total, info)

    def setUp(self):
        self.ctx = FakeContext()
        self.mm = gnumba.GpumemMemoryManager(context=self.ctx)
        self.mm.initialize()

    def test_interface(self):
        """a complete BaseCUDAMemoryManager of interface version 1, not HostOnly"""
        self.assertIsInstance(self.mm, drv.BaseCUDAMemoryManager)
        self.assertNotIsInstance(self.mm, drv.HostOnlyCUDAMemoryManager)
        self.assertEqual(self.mm.interface_version, 1)
        self.assertFalse(getattr(gnumba.GpumemMemoryManager, "__abstractmethods__", set()))

    def test_set_memory_manager(self):
        """numba accepts it, by class and by NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba"""
        saved = drv._memory_manager
        try:
            drv.set_memory_manager(gnumba.GpumemMemoryManager)
            self.assertIs(drv._memory_manager, gnumba.GpumemMemoryManager)
            try:
                from numba.cuda.core import config
            except ImportError:
                from numba.core import config
            old = config.CUDA_MEMORY_MANAGER
            config.CUDA_MEMORY_MANAGER = "gpumem.numba"
            drv._memory_manager = None
            try:
                drv._ensure_memory_manager()
                self.assertIs(drv._memory_manager, gnumba.GpumemMemoryManager)
            finally:
                config.CUDA_MEMORY_MANAGER = old
        finally:
            drv._memory_manager = saved

    def test_memalloc(self):
        """memalloc: a MemoryPointer over a pool block, freed with its last reference"""
        mem = self.mm.memalloc(4096)
        self.assertIsInstance(mem, drv.MemoryPointer)
        self.assertEqual(mem.size, 4096)
        p = mem.device_pointer_value
        self.assertEqual(gpumem.lookup(p)["size"], 4096)
        self.assertEqual(gpumem.stats("numba")["device_count"] >= 1, True)
        del mem
        gc.collect()
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)
        empty = self.mm.memalloc(0)
        self.assertEqual(empty.size, 0)

    def test_defer_cleanup(self):
        """inside defer_cleanup frees wait for the outermost scope's end"""
        with self.mm.defer_cleanup():
            mem = self.mm.memalloc(1024)
            p = mem.device_pointer_value
            with self.mm.defer_cleanup():
                del mem
                gc.collect()
            self.assertEqual(gpumem.lookup(p)["size"], 1024, "still live in the outer scope")
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)

    def test_memhostalloc_pinned(self):
        mem = self.mm.memhostalloc(10000)
        self.assertIsInstance(mem, drv.PinnedMemory)
        p = int(getattr(mem.host_pointer, "value", mem.host_pointer))
        self.assertEqual(gpumem.lookup(p)["kind"], "pinned")
        self.assertEqual(mem.size, 10000)
        del mem
        gc.collect()
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)

    def test_memhostalloc_mapped(self):
        real = drv.MappedMemory
        drv.MappedMemory = _mapped_standin()
        try:
            owned = self.mm.memhostalloc(8192, mapped=True, portable=True)
            p = int(getattr(owned.host_pointer, "value", owned.host_pointer))
            self.assertEqual(gpumem.lookup(p)["kind"], "mapped")
            self.assertEqual(owned.device_pointer_value, gpumem.device_pointer(p))
            del owned
            gc.collect()
            with self.assertRaises(gpumem.GpumemError):
                gpumem.lookup(p)
        finally:
            drv.MappedMemory = real

    def test_mempin(self):
        """mempin page-locks a caller's buffer until its PinnedMemory goes"""
        import ctypes
        buf = ctypes.create_string_buffer(1 << 16)
        addr = ctypes.addressof(buf)
        r0 = gpumem.memory_report()["registered"]["count"]
        mem = self.mm.mempin(buf, addr, len(buf))
        self.assertIsInstance(mem, drv.PinnedMemory)
        self.assertEqual(gpumem.memory_report()["registered"]["count"], r0 + 1)
        del mem
        gc.collect()
        self.assertEqual(gpumem.memory_report()["registered"]["count"], r0)

    def test_memallocmanaged(self):
        owned = self.mm.memallocmanaged(2048, attach_global=True)
        p = owned.device_pointer_value
        self.assertEqual(gpumem.lookup(p)["kind"], "managed")
        del owned
        gc.collect()
        with self.assertRaises(gpumem.GpumemError):
            gpumem.lookup(p)

    def test_ipc_handle(self):
        """get_ipc_handle: numba's IpcHandle with the driver's handle and the offset, also of a view"""
        mem = self.mm.memalloc(1 << 20)
        raw, off = gpumem.ipc_handle(mem.device_pointer_value)
        h = self.mm.get_ipc_handle(mem)
        self.assertIsInstance(h, drv.IpcHandle)
        self.assertEqual(h.offset, off)
        self.assertEqual(h.size, 1 << 20)
        self.assertEqual(h.source_info, self.ctx.device.get_device_identity())
        hb = bytes(h.handle.reserved) if hasattr(h.handle, "reserved") else bytes(bytearray(h.handle))
        self.assertEqual(hb, raw)
        view = mem.view(4096)
        hv = self.mm.get_ipc_handle(view)
        self.assertEqual(hv.offset, off + 4096)
        h2 = pickle.loads(pickle.dumps(h))
        self.assertEqual(h2.offset, off)
        del view, hv, h, h2, mem
        gc.collect()

    def test_attached_context_cudevice(self):
        """a context whose device is the binding's CUdevice (no .id): the ordinal is int(device)"""
        mm = gnumba.GpumemMemoryManager(context=CUdeviceContext())
        mm.initialize()
        mem = mm.memalloc(4096)
        self.assertEqual(gpumem.lookup(mem.device_pointer_value)["device"], 0)
        self.assert_memory_info(mm.get_memory_info())
        del mem
        gc.collect()

    def test_ipc_handle_foreign_memory(self):
        """get_ipc_handle of memory numba wraps over another library's (owner: that library's object)"""
        block = gpumem.alloc(1 << 16, runtime="python")
        try:
            raw, off = gpumem.ipc_handle(block)
            owner = object()  # a foreign array: no device_pointer_value
            mem = drv.MemoryPointer(self.ctx, gnumba._dev_ptr(block + 256), 1024, owner=owner)
            h = self.mm.get_ipc_handle(mem)
            self.assertEqual(h.offset, off + 256)
            self.assertEqual(h.size, 1024)
            hb = bytes(h.handle.reserved) if hasattr(h.handle, "reserved") else bytes(bytearray(h.handle))
            self.assertEqual(hb, raw)
            del h, mem
            gc.collect()
        finally:
            gpumem.free(block)

    def _mapped_twice(self, arr_buf, addr, size):
        """what numba's cuda.mapped() does: mempin(mapped=True), then free() on exit"""
        pm = self.mm.mempin(arr_buf, addr, size, mapped=True)
        try:
            return pm.device_pointer_value
        finally:
            pm.free()

    def test_mapped_contextmanager(self):
        """cuda.mapped() twice, inside defer_cleanup, and left by an exception: unregistered at once, no
        'Exception ignored' (numba's test_del_mapped_contextmanager)"""
        import ctypes
        real = drv.MappedMemory
        drv.MappedMemory = _mapped_standin()
        buf = ctypes.create_string_buffer(4096)
        addr = ctypes.addressof(buf)
        r0 = gpumem.memory_report()["registered"]["count"]
        try:
            with _Unraisable() as u:
                for _ in range(2):
                    self._mapped_twice(buf, addr, len(buf))
                    gc.collect()
                    self.assertEqual(gpumem.memory_report()["registered"]["count"], r0)
                with self.mm.defer_cleanup():
                    for _ in range(2):
                        self._mapped_twice(buf, addr, len(buf))
                        gc.collect()
                        self.assertEqual(gpumem.memory_report()["registered"]["count"], r0,
                                         "unregistered at once inside defer_cleanup")

                class MappedException(Exception):
                    pass
                try:
                    pm = self.mm.mempin(buf, addr, len(buf), mapped=True)
                    try:
                        raise MappedException
                    finally:
                        pm.free()
                except MappedException:
                    pass
                del pm
            self.assertEqual(u.messages, [])
            self.assertNotIn("Exception ignored", u.stderr)
            self.assertNotIn("Freeing dead memory", u.stderr)
            self.assertEqual(gpumem.memory_report()["registered"]["count"], r0)
        finally:
            drv.MappedMemory = real

    def test_mapped_and_managed_freed_in_defer_cleanup(self):
        """memhostalloc(mapped=True) and memallocmanaged freed by numba inside defer_cleanup: the memory goes
        at once for numba (no 'Exception ignored'), the free waits for the scope's end"""
        real = drv.MappedMemory
        drv.MappedMemory = _mapped_standin()
        try:
            with _Unraisable() as u:
                with self.mm.defer_cleanup():
                    host = self.mm.memhostalloc(8192, mapped=True)
                    hp = int(getattr(host.host_pointer, "value", host.host_pointer))
                    managed = self.mm.memallocmanaged(4096)
                    mp = managed.device_pointer_value
                    host.free()
                    managed.free()
                    del host, managed
                    gc.collect()
                    self.assertEqual(gpumem.lookup(hp)["kind"], "mapped", "the free waits for the scope")
                    self.assertEqual(gpumem.lookup(mp)["kind"], "managed")
                for p in (hp, mp):
                    with self.assertRaises(gpumem.GpumemError):
                        gpumem.lookup(p)
            self.assertEqual(u.messages, [])
            self.assertNotIn("Exception ignored", u.stderr)
        finally:
            drv.MappedMemory = real

    def test_memory_info_and_reset(self):
        self.assert_memory_info(self.mm.get_memory_info())
        mem = self.mm.memalloc(90000)
        del mem
        gc.collect()
        self.assertGreater(gpumem.memory_report()["pool_held_blocks"], 0)
        self.mm.reset()
        self.assertEqual(gpumem.memory_report()["pool_held_blocks"], 0)


if __name__ == "__main__":
    unittest.main()
