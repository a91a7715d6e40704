"""An IPC handle of a gpumem array, opened in a second process, reads and
writes the first process's array; the exporting process itself is refused."""
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpumem_ctypes import IPC_HANDLE_SIZE, Checks, GpumemError, IpcHandle, Lib  # noqa: E402

N = 1000


def child():
    raw = bytes.fromhex(sys.stdin.read().strip())
    lib = Lib()
    h = IpcHandle()
    ctypes.memmove(ctypes.byref(h), raw, IPC_HANDLE_SIZE)
    c = Checks()
    a = lib.out("gpumem_ipc_open", None, ctypes.byref(h))
    got = lib.read(a, N, "<f4", (N // 10, 10))
    c.ok(got == [float(i) for i in range(N)], "child: reads the parent's values")
    lib.write(a, [float(-i) for i in range(N)], "<f4", (N // 10, 10))
    lib.release(a)
    c.exit()


def parent():
    lib = Lib()
    ctx = lib.context(0)
    c = Checks()
    d = lib.to_device(ctx, [float(i) for i in range(N)], "<f4", (N // 10, 10))
    h = IpcHandle()
    lib.call("gpumem_ipc_get_handle", d, ctypes.byref(h))
    raw = bytes(h.bytes)
    c.ok(raw[:8] == b"GPUMEMIP", "the handle starts with its magic")
    try:
        lib.out("gpumem_ipc_open", None, ctypes.byref(h))
        c.ok(False, "opening in the exporting process is refused")
    except GpumemError as e:
        c.ok("status 14" in str(e), "opening in the exporting process: GPUMEM_ERROR_INVALID_STATE")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "child"], input=raw.hex(),
                       capture_output=True, text=True, timeout=120)
    sys.stdout.write(p.stdout + p.stderr)
    c.ok(p.returncode == 0, "the second process opened, read and wrote the array")
    c.ok(lib.read(d, N, "<f4", (N // 10, 10)) == [float(-i) for i in range(N)],
         "the parent sees the second process's writes")
    lib.release(d)
    c.exit()


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else parent()
