"""PyTorch's pluggable allocator over libgpumem's pools.

    import gpumem.torch
    gpumem.torch.install()      # before PyTorch allocates any CUDA memory

PyTorch then allocates every CUDA tensor through gpumem_torch_alloc and
gpumem_torch_free of libgpumem.so.1 (torch.cuda.memory.CUDAPluggableAllocator),
on the stream it names, from libgpumem's pool of the device: shared with
numba and CuPy in the same process, and shown by gpumem.memory_report()
under the runtime "torch".  PyTorch allows the switch only before its
caching allocator has been used; install() raises otherwise.
"""
import torch

from . import _lib

__all__ = ["install", "allocator"]

_allocator = None


def allocator():
    """The torch.cuda.memory.CUDAPluggableAllocator over libgpumem (made once)."""
    global _allocator
    if _allocator is None:
        _allocator = torch.cuda.memory.CUDAPluggableAllocator(_lib.path, "gpumem_torch_alloc", "gpumem_torch_free")
    return _allocator


def install():
    """Makes PyTorch's CUDA allocations libgpumem's (call it first thing)."""
    torch.cuda.memory.change_current_allocator(allocator())
