"""PyTorch and libgpumem share device memory through DLPack: torch.from_dlpack
sees a gpumem array's exact contents (and its writes come back), and a tensor
PyTorch makes imports into gpumem and reads back right."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpumem_ctypes import Checks, Exported, Lib, import_capsule, need, skip  # noqa: E402

torch = need("torch")
if not torch.cuda.is_available():
    skip("torch sees no CUDA device")

lib = Lib()
ctx = lib.context(0)
c = Checks()

# gpumem -> torch
values = [i * 0.5 - 3 for i in range(24)]
d = lib.to_device(ctx, values, "<f4", (4, 6))
t = torch.from_dlpack(Exported(lib, d, 0))
c.ok(t.is_cuda and t.device.index == 0, "torch sees a CUDA tensor on device 0")
c.ok(tuple(t.shape) == (4, 6) and t.dtype == torch.float32, "shape (4, 6), float32")
c.ok(t.flatten().tolist() == values, "torch reads the exact contents")
t.add_(1)
torch.cuda.synchronize()
c.ok(lib.read(d, 24, "<f4", (4, 6)) == [v + 1 for v in values], "torch's in-place write is gpumem's memory")
del t
lib.release(d)

# torch -> gpumem: a transposed (strided) tensor
x = torch.arange(12, dtype=torch.float64, device="cuda").reshape(3, 4).t()
torch.cuda.synchronize()
cap = x.__dlpack__()
a = import_capsule(lib, ctx, cap)
want = x.cpu().flatten().tolist()
c.ok(lib.read(a, 12, "<f8", (4, 3)) == want, "gpumem reads torch's transposed tensor right")
ok, info = lib.pointer_info(x.data_ptr())
c.ok(ok and info.kind == 1 and info.device == 0, "gpumem_is_cuda_array: torch's memory is device memory")
lib.release(a)  # calls the tensor's deleter
c.ok(x.sum().item() == 66.0, "the tensor lives on after gpumem's release")

ok, info = lib.pointer_info(torch.empty(4).pin_memory().data_ptr())
c.ok(ok and info.kind in (2, 3), "gpumem_is_cuda_array: torch's pinned memory is page-locked host memory")
c.exit()
