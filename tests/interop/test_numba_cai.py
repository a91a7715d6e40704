"""numba's cuda.as_cuda_array, given the __cuda_array_interface__ that
gpumem_array_interface builds, runs a numba kernel on gpumem's memory, and
gpumem sees the result."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpumem_ctypes import Checks, Lib, need, skip  # noqa: E402

np = need("numpy")
if not hasattr(np, "row_stack"):
    # numba-cuda's array support still registers an overload of
    # numpy.row_stack, an alias of vstack that NumPy 2.4 removed: without it
    # no kernel compiles.  Restore the alias (a shim for the test only).
    np.row_stack = np.vstack
numba_cuda = need("numba.cuda")
cuda = numba_cuda
if not cuda.is_available():
    skip("numba sees no CUDA device")

lib = Lib()
ctx = lib.context(0)
c = Checks()


class Holder:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


@cuda.jit
def scale(a, k):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j] = a[i, j] * k + 1


values = [float(i) for i in range(48)]
d = lib.to_device(ctx, values, "<f8", (6, 8))
cai = lib.interface(d)
c.ok(cai["typestr"] == "<f8" and cai["shape"] == (6, 8) and cai["strides"] is None,
     "gpumem_array_interface: typestr, shape, strides absent for C order")
arr = cuda.as_cuda_array(Holder(cai))
c.ok(arr.shape == (6, 8) and arr.device_ctypes_pointer.value == cai["data"][0],
     "numba's array is over gpumem's memory")
scale[(1, 1), (8, 8)](arr, 2.0)
cuda.synchronize()
c.ok(lib.read(d, 48, "<f8", (6, 8)) == [v * 2 + 1 for v in values], "gpumem sees the numba kernel's result")
c.ok(cuda.is_cuda_array(Holder(cai)), "numba's is_cuda_array accepts the description")
ok, info = lib.pointer_info(cai["data"][0])
c.ok(ok and info.kind == 1, "gpumem_is_cuda_array agrees")
lib.release(d)
c.exit()
