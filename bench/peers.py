#!/usr/bin/env python3
"""bench/peers.py - the transfers of `gpumem bench` with numba, CuPy and
PyTorch, whichever are installed, so that a comparison with the Python tools
is one command:

    python3 bench/peers.py [--quick] [--csv]

Same cases, sizes and statistics as gpumem bench (median of N timed runs
after one warm-up, each run synchronized): h2d/d2h pinned and pageable from
4 KiB to 1 GiB (--quick: to 1 MiB), and the strided and transposed cases
with 64 MiB of useful bytes (--quick: 256 KiB): d[:, ::2] -> host,
host -> d[:, ::2], d[::2] -> host, and a C host array into a transposed
(Fortran-ordered) device array.  Each peer does what its users would write;
a case a peer cannot express is left out.  Output: the columns of
`gpumem bench --csv` (group,case,path,bytes,seconds,gb_per_s) with the
peer's name as the path, or a table.

    python3 bench/peers.py --peer [--quick] [--csv]

runs instead the copies between two GPUs of `gpumem bench --peer` with
PyTorch (copy_ between tensors of cuda:0 and cuda:1, which uses peer access
where the GPUs allow it): 256 MiB of float32 useful bytes (--quick: 1 MiB)
each way, contiguous, [::2], [:, ::2] of an R x 2C array into a C-order
R x C one and back, and the transpose of a C x R array into an R x C one.
"""
import sys
import time

QUICK = "--quick" in sys.argv
CSV = "--csv" in sys.argv
REPS = 3 if QUICK else 9


def median(fn):
    fn()
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    n = len(ts)
    return ts[n // 2] if n % 2 else (ts[n // 2 - 1] + ts[n // 2]) / 2


def report(group, case, peer, nbytes, s):
    gbs = nbytes / s / 1e9 if s > 0 else 0.0
    if CSV:
        print(f"{group},{case},{peer},{nbytes},{s:.9f},{gbs:.3f}", flush=True)
    else:
        print(f"{group:<9} {case:<34} {peer:<16} {nbytes:>12} {s * 1e6:>10.1f} us {gbs:>9.2f} GB/s", flush=True)


def sizes():
    top = 1 << 20 if QUICK else 1 << 30
    n = 4096
    while n <= top:
        yield n
        n *= 4


def strided_shape():
    return (64, 1024) if QUICK else (2048, 8192)


def run_numba(np):
    from numba import cuda
    for pinned in (False, True):
        kind = "pinned" if pinned else "pageable"
        top = max(sizes())
        h = cuda.pinned_array(top, dtype=np.uint8) if pinned else np.ones(top, dtype=np.uint8)
        d = cuda.device_array(top, dtype=np.uint8)
        for n in sizes():
            hv, dv = h[:n], d[:n]
            report("transfer", f"h2d {kind}", "numba", n, median(lambda: dv.copy_to_device(hv)))
            report("transfer", f"d2h {kind}", "numba", n, median(lambda: dv.copy_to_host(hv)))
    r, c = strided_shape()
    h = np.ones((r, c), dtype=np.float32)
    d = cuda.device_array((r, 2 * c), dtype=np.float32)
    useful = r * c * 4
    report("strided", "d2h d[:, ::2] pageable", "numba", useful, median(lambda: d[:, ::2].copy_to_host(h)))
    report("strided", "h2d d[:, ::2] pageable", "numba", useful, median(lambda: d[:, ::2].copy_to_device(h)))
    f = cuda.device_array((r, c), dtype=np.float32, order="F")
    report("strided", "h2d transposed pageable", "numba", useful, median(lambda: f.copy_to_device(np.asfortranarray(h))))
    cuda.synchronize()


def run_cupy(np):
    import cupy
    for pinned in (False, True):
        kind = "pinned" if pinned else "pageable"
        top = max(sizes())
        if pinned:
            mem = cupy.cuda.alloc_pinned_memory(top)
            h = np.frombuffer(mem, dtype=np.uint8, count=top)
        else:
            h = np.ones(top, dtype=np.uint8)
        d = cupy.empty(top, dtype=cupy.uint8)
        for n in sizes():
            hv, dv = h[:n], d[:n]
            report("transfer", f"h2d {kind}", "cupy", n, median(lambda: (dv.set(hv), cupy.cuda.Device().synchronize())))
            report("transfer", f"d2h {kind}", "cupy", n, median(lambda: dv.get(out=hv)))
    r, c = strided_shape()
    h = np.ones((r, c), dtype=np.float32)
    d = cupy.empty((r, 2 * c), dtype=cupy.float32)
    useful = r * c * 4
    report("strided", "d2h d[:, ::2] pageable", "cupy", useful, median(lambda: cupy.asnumpy(d[:, ::2])))
    def up():
        d[:, ::2] = cupy.asarray(h)
        cupy.cuda.Device().synchronize()
    report("strided", "h2d d[:, ::2] pageable", "cupy", useful, median(up))
    f = cupy.empty((r, c), dtype=cupy.float32, order="F")
    def tr():
        f[...] = cupy.asarray(h)
        cupy.cuda.Device().synchronize()
    report("strided", "h2d transposed pageable", "cupy", useful, median(tr))


def run_torch(np):
    import torch
    for pinned in (False, True):
        kind = "pinned" if pinned else "pageable"
        top = max(sizes())
        h = torch.ones(top, dtype=torch.uint8, pin_memory=pinned)
        d = torch.empty(top, dtype=torch.uint8, device="cuda")
        for n in sizes():
            hv, dv = h[:n], d[:n]
            report("transfer", f"h2d {kind}", "torch", n, median(lambda: (dv.copy_(hv), torch.cuda.synchronize())))
            report("transfer", f"d2h {kind}", "torch", n, median(lambda: (hv.copy_(dv), torch.cuda.synchronize())))
    r, c = strided_shape()
    h = torch.ones((r, c), dtype=torch.float32)
    d = torch.empty((r, 2 * c), dtype=torch.float32, device="cuda")
    useful = r * c * 4
    report("strided", "d2h d[:, ::2] pageable", "torch", useful,
           median(lambda: (h.copy_(d[:, ::2]), torch.cuda.synchronize())))
    report("strided", "h2d d[:, ::2] pageable", "torch", useful,
           median(lambda: (d[:, ::2].copy_(h), torch.cuda.synchronize())))
    f = torch.empty((c, r), dtype=torch.float32, device="cuda").t()
    report("strided", "h2d transposed pageable", "torch", useful,
           median(lambda: (f.copy_(h), torch.cuda.synchronize())))


def run_torch_peer(np):
    import torch
    if torch.cuda.device_count() < 2:
        print("peers.py: --peer needs two GPUs", file=sys.stderr)
        return
    n = (1 << 18) if QUICK else (64 << 20)
    r = 256 if QUICK else 4096
    c = n // r
    nbytes = n * 4
    a = [torch.empty(n, dtype=torch.float32, device=f"cuda:{d}") for d in (0, 1)]
    w = [torch.empty(2 * n, dtype=torch.float32, device=f"cuda:{d}") for d in (0, 1)]
    for frm in (0, 1):
        to = 1 - frm

        def timed(copy):
            def run():
                copy()
                torch.cuda.synchronize(frm)
                torch.cuda.synchronize(to)
            return median(run)

        cases = (
            ("contiguous", lambda: a[to].copy_(a[frm])),
            ("[::2]", lambda: w[to][::2].copy_(w[frm][::2])),
            ("[:, ::2] -> C", lambda: a[to].view(r, c).copy_(w[frm].view(r, 2 * c)[:, ::2])),
            ("C -> [:, ::2]", lambda: w[to].view(r, 2 * c)[:, ::2].copy_(a[frm].view(r, c))),
            ("transposed -> C", lambda: a[to].view(r, c).copy_(a[frm].view(c, r).t())),
        )
        for name, copy in cases:
            report("peer", f"d2d {frm}->{to} {name}", "torch", nbytes, timed(copy))


def main():
    try:
        import numpy as np
    except ImportError:
        np = None
        if "--peer" not in sys.argv:  # the copies between GPUs need only torch
            print("peers.py: numpy is not installed", file=sys.stderr)
            return 1
    if CSV:
        print("group,case,path,bytes,seconds,gb_per_s")
    ran = 0
    peers = (("numba", run_numba), ("cupy", run_cupy), ("torch", run_torch))
    if "--peer" in sys.argv:
        peers = (("torch", run_torch_peer),)
    for name, fn in peers:
        try:
            fn(np)
            ran += 1
        except ImportError as e:
            print(f"peers.py: {name} is not installed ({e}); skipped", file=sys.stderr)
        except Exception as e:  # a peer without a GPU, or a failing case
            print(f"peers.py: {name} failed: {e}", file=sys.stderr)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
