"""CuPy and libgpumem share device memory through DLPack: cupy.from_dlpack
sees a gpumem array's exact contents, and an array CuPy makes imports into
gpumem and reads back right."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpumem_ctypes import Checks, Exported, Lib, import_capsule, need, skip  # noqa: E402

cupy = need("cupy")
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        skip("cupy sees no CUDA device")
except Exception as e:
    skip("cupy cannot use CUDA: %s" % e)

lib = Lib()
ctx = lib.context(0)
c = Checks()

values = list(range(-5, 15))
d = lib.to_device(ctx, values, "<i4", (5, 4))
y = cupy.from_dlpack(Exported(lib, d, 0))
c.ok(y.shape == (5, 4) and y.dtype == cupy.int32, "cupy sees shape (5, 4), int32")
c.ok(y.ravel().get().tolist() == values, "cupy reads the exact contents")
y *= 3
cupy.cuda.runtime.deviceSynchronize()
c.ok(lib.read(d, 20, "<i4", (5, 4)) == [v * 3 for v in values], "cupy's in-place write is gpumem's memory")
del y
lib.release(d)

z = cupy.arange(30, dtype=cupy.float32).reshape(5, 6)[:, ::2]  # strided view
cupy.cuda.runtime.deviceSynchronize()
a = import_capsule(lib, ctx, z.__dlpack__())
c.ok(lib.read(a, 15, "<f4", (5, 3)) == z.ravel().get().tolist(), "gpumem reads cupy's strided view right")
lib.release(a)
ok, info = lib.pointer_info(z.data.ptr)
c.ok(ok and info.kind == 1, "gpumem_is_cuda_array: cupy's memory is device memory")
c.exit()
