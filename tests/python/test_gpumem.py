"""gpumem's own calls against the built library on the simulator:
allocation and free, streams, page-locked, mapped and managed memory,
IPC handles, the memory report and tracing."""
import ctypes
import os
import tempfile
import unittest

import gpumem
from gpumem import GpumemError


class Allocation(unittest.TestCase):
    def test_alloc_free(self):
        """alloc gives a live device allocation of its size; free ends it"""
        before = gpumem.stats("pytest")
        p = gpumem.alloc(1000, runtime="pytest")
        self.assertNotEqual(p, 0)
        self.assertEqual(gpumem.lookup(p), {"device": 0, "base": p, "size": 1000, "kind": "device"})
        s = gpumem.stats("pytest")
        self.assertEqual(s["device_bytes"] - before["device_bytes"], 1000)
        self.assertEqual(s["device_count"] - before["device_count"], 1)
        gpumem.free(p)
        self.assertEqual(gpumem.stats("pytest")["device_count"], before["device_count"])
        with self.assertRaises(GpumemError):
            gpumem.lookup(p)

    def test_double_free(self):
        """a second free raises INVALID_VALUE and changes nothing"""
        p = gpumem.alloc(256, runtime="pytest")
        gpumem.free(p)
        frees = gpumem.stats("pytest")["frees"]
        with self.assertRaises(GpumemError) as cm:
            gpumem.free(p)
        self.assertEqual(cm.exception.name, "GPUMEM_ERROR_INVALID_VALUE")
        self.assertIn("freed already", str(cm.exception))
        self.assertEqual(gpumem.stats("pytest")["frees"], frees)

    def test_foreign_pointer(self):
        """a pointer gpumem did not allocate is refused"""
        buf = ctypes.create_string_buffer(64)
        with self.assertRaises(GpumemError):
            gpumem.free(ctypes.addressof(buf))
        with self.assertRaises(GpumemError):
            gpumem.host_free(ctypes.addressof(buf))

    def test_zero_and_bad_input(self):
        """size 0 gives 0; bad devices, runtime names and streams raise"""
        self.assertEqual(gpumem.alloc(0), 0)
        gpumem.free(0)
        with self.assertRaises(GpumemError) as cm:
            gpumem.alloc(16, device=64)
        self.assertEqual(cm.exception.name, "GPUMEM_ERROR_INVALID_DEVICE")
        with self.assertRaises(GpumemError):
            gpumem.alloc(16, runtime="Bad Name")
        with self.assertRaises(GpumemError) as cm:
            gpumem.alloc(16, stream=5)
        self.assertIn("not a stream", str(cm.exception))

    def test_shared_reuse(self):
        """a block one runtime frees is the next of another"""
        gpumem.release_held()
        p = gpumem.alloc(50000, runtime="numba")
        gpumem.free(p)
        q = gpumem.alloc(50000, runtime="cupy")
        self.assertEqual(q, p)
        gpumem.free(q)


class Streams(unittest.TestCase):
    def test_stream_objects(self):
        """stream values: ints, and objects with .handle, .ptr or .cuda_stream"""
        with gpumem.Stream() as s:
            self.assertNotEqual(s.handle, 0)

            class CupyLike:
                ptr = s.handle
            p = gpumem.alloc(4096, stream=CupyLike(), runtime="pytest")
            gpumem.free(p, stream=s)
            q = gpumem.alloc(4096, stream=s.handle, runtime="pytest")
            self.assertEqual(q, p, "freed on a stream, reused at once on the same stream")
            gpumem.free(q, s.handle)
            s.synchronize()
            self.assertTrue(s.query())

    def test_cross_stream(self):
        """a block freed on S is reused on T once S's work is done"""
        with gpumem.Stream(non_blocking=True) as s, gpumem.Stream(non_blocking=True) as t:
            p = gpumem.alloc(12345, stream=s, runtime="pytest")
            gpumem.free(p, stream=s)
            s.synchronize()
            q = gpumem.alloc(12345, stream=t, runtime="pytest")
            self.assertEqual(q, p)
            gpumem.free(q, stream=t)

    def test_bad_stream_frees_nothing(self):
        p = gpumem.alloc(64, runtime="pytest")
        with self.assertRaises(GpumemError):
            gpumem.free(p, stream=7)
        self.assertEqual(gpumem.lookup(p)["size"], 64)
        gpumem.free(p)


class HostMemory(unittest.TestCase):
    def test_pinned(self):
        p = gpumem.host_alloc(10000, runtime="pytest")
        ctypes.memset(p, 0x5A, 10000)
        self.assertEqual(ctypes.string_at(p + 9999, 1), b"\x5a")
        self.assertEqual(gpumem.lookup(p)["kind"], "pinned")
        with self.assertRaises(GpumemError):
            gpumem.device_pointer(p)
        with self.assertRaises(GpumemError):
            gpumem.free(p)  # host memory has its own free
        gpumem.host_free(p)
        with self.assertRaises(GpumemError):
            gpumem.host_free(p)

    def test_mapped(self):
        p = gpumem.host_alloc(4096, mapped=True, runtime="pytest")
        self.assertEqual(gpumem.lookup(p)["kind"], "mapped")
        self.assertNotEqual(gpumem.device_pointer(p), 0)
        gpumem.host_free(p)

    def test_managed(self):
        p = gpumem.managed_alloc(2048, runtime="pytest")
        self.assertEqual(gpumem.lookup(p)["kind"], "managed")
        self.assertEqual(gpumem.stats("pytest")["managed_bytes"], 2048)
        gpumem.free(p)
        self.assertEqual(gpumem.stats("pytest")["managed_bytes"], 0)


class Ipc(unittest.TestCase):
    def test_handle(self):
        p = gpumem.alloc(5000, runtime="pytest")
        h, off = gpumem.ipc_handle(p)
        self.assertEqual(len(h), 64)
        self.assertNotEqual(h, bytes(64))
        self.assertGreaterEqual(off, 0)
        self.assertEqual(gpumem.ipc_handle(p), (h, off), "the same handle twice")
        self.assertEqual(gpumem.ipc_handle(p + 100), (h, off + 100), "an address inside it: its own offset")
        gpumem.free(p)
        gpumem.release_held(0)
        with self.assertRaises(GpumemError):  # freed and given back to the driver
            gpumem.ipc_handle(p)

    def test_no_handle_of_host_memory(self):
        p = gpumem.host_alloc(64, runtime="pytest")
        with self.assertRaises(GpumemError):
            gpumem.ipc_handle(p)
        gpumem.host_free(p)


class Report(unittest.TestCase):
    def test_memory_report(self):
        """the report counts the live foreign memory, and lists each runtime"""
        r0 = gpumem.memory_report()
        p = gpumem.alloc(1 << 20, runtime="reporttest")
        r1 = gpumem.memory_report(device_info=True)
        self.assertEqual(r1["device"]["bytes"] - r0["device"]["bytes"], 1 << 20)
        self.assertEqual(r1["runtimes"]["reporttest"]["device_bytes"], 1 << 20)
        self.assertGreater(r1["device_total_bytes"], 0)
        gpumem.free(p)
        r2 = gpumem.memory_report()
        self.assertEqual(r2["runtimes"]["reporttest"]["device_bytes"], 0)
        self.assertIn("reporttest", gpumem.runtimes())

    def test_memory_info(self):
        free, total = gpumem.memory_info()
        self.assertGreater(total, 0)
        self.assertLessEqual(free, total)

    def test_release_held(self):
        p = gpumem.alloc(70000, runtime="pytest")
        gpumem.free(p)
        self.assertGreater(gpumem.memory_report()["pool_held_blocks"], 0)
        gpumem.release_held(0)
        self.assertEqual(gpumem.memory_report()["pool_held_blocks"], 0)

    def test_trace(self):
        """a trace from Python records foreign allocations in their runtime's region"""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run.gmtrace")
            with gpumem.trace(path):
                with gpumem.trace_region("step"):
                    gpumem.trace_mark("start")
                    p = gpumem.alloc(777, runtime="tracetest")
                    gpumem.free(p)
            data = open(path, "rb").read()
            self.assertIn(b"tracetest", data)
            self.assertIn(b"step", data)
        with self.assertRaises(GpumemError):
            gpumem.trace_stop()  # none records


class Misc(unittest.TestCase):
    def test_version_backend(self):
        self.assertRegex(gpumem.version(), r"^\d+\.\d+\.\d+$")
        self.assertEqual(gpumem.backend(), os.environ.get("GPUMEM_BACKEND", gpumem.backend()))
        self.assertGreaterEqual(gpumem.device_count(), 1)

    def test_defer_cleanup(self):
        with gpumem.defer_cleanup():
            p = gpumem.alloc(128, runtime="pytest")
            gpumem.free(p)


if __name__ == "__main__":
    unittest.main()
