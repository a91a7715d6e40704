#!/bin/sh
# The Python runtimes on a real GPU, with and without libgpumem's pool
# (issue 28; doc/python.md).  Run from a built tree on the GPU machine:
#
#     sh bench/python-gpu.sh [OUTDIR]
#
# It needs numba-cuda, CuPy and PyTorch importable by python3 ($PYTHON), no
# network and no pip.  Every part runs in its own subprocess with a time
# limit; a part that fails or times out is reported and the others go on.
# The summary at the end (also OUTDIR/summary.txt) says what passed.
#
#  (a) numba-cuda's own tests as a real client of the plugin:
#        python3 -m numba.runtests numba.cuda.tests.cudadrv numba.cuda.tests.cudapy.test_ipc
#      without and with NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba, then all of
#      numba.cuda.tests both ways (PART_A_FULL=0 skips that long run);
#  (b) a PyTorch training loop (fixed seed, random data) with PyTorch's
#      allocator and with gpumem.torch.install(): the losses must agree;
#  (c) a CuPy workload with CuPy's pool and with gpumem.cupy.install();
#  (d) timings: numba device_array then del, CuPy and PyTorch allocation
#      and free, each through gpumem and through the runtime's own, side by
#      side (interleaved rounds in one process for numba and CuPy; medians);
#  (e) numba, CuPy and PyTorch in one process: a block numba frees is
#      reused by CuPy, then by PyTorch; all three in the report and a trace.
#
# numba-cuda 0.30.4 there needs two shims, made in a temporary directory
# put first on PYTHONPATH: a stand-in `filecheck` package (numba-cuda's
# testing.py imports it; only FileCheck assertions use it) and
# `numpy.row_stack = numpy.vstack` in a sitecustomize (numba-cuda
# registers an overload of it; NumPy 2.5 no longer has it).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/gpumem-python-gpu.XXXXXX")}
mkdir -p "$out"
T_SHORT=${T_SHORT:-900}   # seconds for each part but the full numba suite
T_FULL=${T_FULL:-3600}    # seconds for each run of all of numba.cuda.tests

so=$(ls "$here"/lib/.libs/libgpumem.so.1 2>/dev/null || true)
if [ -z "$so" ]; then
    echo "python-gpu.sh: no lib/.libs/libgpumem.so.1 under $here: build first (./configure && make)" >&2
    exit 2
fi
shims="$out/shims"
mkdir -p "$shims/filecheck"
cat >"$shims/filecheck/__init__.py" <<'EOF'
"""Stand-in for the filecheck package, which is absent on this machine:
numba-cuda's testing.py imports Matcher, Options, Parser, pattern_for_opts
and FInput from its submodules; only FileCheck assertions use them."""
EOF
for m in matcher options parser finput; do
    cat >"$shims/filecheck/$m.py" <<'EOF'
class _StandIn:
    def __init__(self, *a, **k):
        raise RuntimeError("filecheck is a stand-in here: FileCheck assertions cannot run")


Matcher = Options = Parser = FInput = _StandIn


def pattern_for_opts(*a, **k):
    raise RuntimeError("filecheck is a stand-in here: FileCheck assertions cannot run")
EOF
done
cat >"$shims/sitecustomize.py" <<'EOF'
# numba-cuda 0.30.4 overloads numpy.row_stack, which NumPy 2.5 removed.
try:
    import numpy
    if not hasattr(numpy, "row_stack"):
        numpy.row_stack = numpy.vstack
except Exception:
    pass
EOF
export GPUMEM_LIBRARY="$so" GPUMEM_BACKEND=${GPUMEM_BACKEND:-cuda}
export PYTHONPATH="$shims:$here/python${PYTHONPATH:+:$PYTHONPATH}"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# run NAME SECONDS COMMAND...: one part in its own process group, its output in OUTDIR/NAME.log.
run() {
    name=$1; secs=$2; shift 2
    echo "=== $name: $*"
    start=$(date +%s)
    timeout --kill-after=30 "$secs" "$@" >"$out/$name.log" 2>&1
    rc=$?
    end=$(date +%s)
    case $rc in
    0) note "PASS  $name ($((end - start)) s)" ;;
    124|137) note "FAIL  $name: timed out after $secs s (log: $out/$name.log)" ;;
    *) note "FAIL  $name: exit $rc (log: $out/$name.log)"; tail -n 15 "$out/$name.log" | sed 's/^/      /' ;;
    esac
    return $rc
}

# numba's runtests: the counts line of a log ("Ran N tests", and the result line).
numba_counts() {
    ran=$(grep -E '^Ran [0-9]+ test' "$1" | tail -n 1)
    res=$(grep -E '^(OK|FAILED)' "$1" | tail -n 1)
    echo "$ran; $res"
}
# The names of the tests that failed or errored, and those skipped with their reasons.
numba_failed() { grep -E '^(FAIL|ERROR): ' "$1" | sed 's/^/      /' | sort; }

echo "results in $out"
note "python-gpu.sh on $(hostname) at $(date -u +%Y-%m-%dT%H:%MZ); libgpumem $(GPUMEM_BACKEND=cuda "$here"/tools/gpumem --version 2>/dev/null || echo '?')"
$PYTHON - <<'EOF' 2>&1 | tee -a "$summary"
import importlib
for m in ("numba_cuda", "numba", "cupy", "torch", "numpy"):
    try:
        mod = importlib.import_module(m)
        print("  %-10s %s" % (m, getattr(mod, "__version__", "?")))
    except Exception as e:
        print("  %-10s not importable: %s" % (m, e))
EOF

# ---- (a) numba-cuda's tests -------------------------------------------------------------
A_TESTS="numba.cuda.tests.cudadrv numba.cuda.tests.cudapy.test_ipc"
run a-numba-own "$T_SHORT" env -u NUMBA_CUDA_MEMORY_MANAGER $PYTHON -m numba.runtests -v $A_TESTS
run a-numba-gpumem "$T_SHORT" env NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba $PYTHON -m numba.runtests -v $A_TESTS
note "      without the plugin: $(numba_counts "$out/a-numba-own.log")"
note "      with gpumem.numba:  $(numba_counts "$out/a-numba-gpumem.log")"
numba_failed "$out/a-numba-own.log" >"$out/a-failed-own.txt"
numba_failed "$out/a-numba-gpumem.log" >"$out/a-failed-gpumem.txt"
note "      failures and errors only with the plugin:"
comm -13 "$out/a-failed-own.txt" "$out/a-failed-gpumem.txt" | tee -a "$summary"
note "      skipped only with the plugin (numba skips these under an external memory manager):"
grep -E "skipped '" "$out/a-numba-gpumem.log" | sed 's/ \.\.\. / /' | sort >"$out/a-skip-gpumem.txt"
grep -E "skipped '" "$out/a-numba-own.log" | sed 's/ \.\.\. / /' | sort >"$out/a-skip-own.txt"
comm -13 "$out/a-skip-own.txt" "$out/a-skip-gpumem.txt" | sed 's/^/      /' | tee -a "$summary"
if [ "${PART_A_FULL:-1}" != 0 ]; then
    run a-numba-all-own "$T_FULL" env -u NUMBA_CUDA_MEMORY_MANAGER $PYTHON -m numba.runtests -v -m 8 numba.cuda.tests
    run a-numba-all-gpumem "$T_FULL" env NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba $PYTHON -m numba.runtests -v -m 8 numba.cuda.tests
    note "      all of numba.cuda.tests, without: $(numba_counts "$out/a-numba-all-own.log")"
    note "      all of numba.cuda.tests, with:    $(numba_counts "$out/a-numba-all-gpumem.log")"
    numba_failed "$out/a-numba-all-own.log" >"$out/a-all-failed-own.txt"
    numba_failed "$out/a-numba-all-gpumem.log" >"$out/a-all-failed-gpumem.txt"
    note "      failures and errors only with the plugin (all of numba.cuda.tests):"
    comm -13 "$out/a-all-failed-own.txt" "$out/a-all-failed-gpumem.txt" | tee -a "$summary"
fi

# ---- (b) PyTorch training, (c) CuPy workload: each run in its own process ------------------
cat >"$out/torch_train.py" <<'EOF'
import json, sys
mode = sys.argv[1]
if mode == "gpumem":
    import gpumem.torch
    gpumem.torch.install()
import torch
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.use_deterministic_algorithms(True, warn_only=True)
dev = torch.device("cuda")
g = torch.Generator(device="cpu").manual_seed(1)
X = torch.randn(4096, 64, generator=g).to(dev)
W = torch.randn(64, 1, generator=g)
Y = (X.cpu() @ W + 0.1 * torch.randn(4096, 1, generator=g)).to(dev)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for step in range(300):
    i = torch.randint(0, 4096, (256,), generator=g).to(dev)
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(X[i]), Y[i])
    loss.backward()
    opt.step()
    losses.append(loss.item())
extra = {}
if mode == "gpumem":
    import gpumem
    extra = gpumem.memory_report()["runtimes"].get("torch", {})
json.dump({"losses": losses, "torch_stats": extra}, open(sys.argv[2], "w"))
print("first %.6f last %.6f" % (losses[0], losses[-1]))
EOF
run b-torch-own "$T_SHORT" $PYTHON "$out/torch_train.py" own "$out/torch-own.json"
run b-torch-gpumem "$T_SHORT" $PYTHON "$out/torch_train.py" gpumem "$out/torch-gpumem.json"
$PYTHON - "$out/torch-own.json" "$out/torch-gpumem.json" <<'EOF' 2>&1 | tee -a "$summary"
import json, sys
try:
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
except Exception as e:
    print("FAIL  b-torch-compare: %s" % e); sys.exit(0)
la, lb = a["losses"], b["losses"]
d = max(abs(x - y) for x, y in zip(la, lb))
ok = len(la) == len(lb) and d <= 1e-6 * max(1.0, max(abs(x) for x in la))
print("%s  b-torch-compare: %d steps, loss %.6f -> %.6f; largest difference %.3g; torch through gpumem: %s"
      % ("PASS" if ok else "FAIL", len(la), la[0], la[-1], d, b.get("torch_stats")))
EOF

cat >"$out/cupy_work.py" <<'EOF'
import hashlib, json, sys
mode = sys.argv[1]
import cupy
if mode == "gpumem":
    import gpumem.cupy
    gpumem.cupy.install()
# Two streams, each with its own generator and accumulator, so the workload
# itself has no race between them: the only thing the streams share is the
# allocator, whose blocks freed on one stream are reused on the other.
s1 = cupy.cuda.Stream(non_blocking=True)
streams = (cupy.cuda.Stream.null, s1)
rs, acc = [], []
for s in streams:
    with s:
        rs.append(cupy.random.RandomState(seed=3 + len(rs)))
        acc.append(cupy.zeros((512, 512), dtype=cupy.float64))
for i in range(200):
    k = i % 2
    with streams[k]:
        a = rs[k].standard_normal((512, 512))
        b = cupy.tanh(a @ a.T / 512.0)
        acc[k] += b.sum(axis=0, keepdims=True) * 1e-3
        tmp = [cupy.empty(int(1000 + 37 * j * (i % 7)), dtype=cupy.uint8) for j in range(20)]
        del tmp, a, b
s1.synchronize()
cupy.cuda.Stream.null.synchronize()
host = cupy.asnumpy(acc[0] + acc[1])
pinned = cupy.cuda.alloc_pinned_memory(1 << 20)
extra = {}
if mode == "gpumem":
    import gpumem
    extra = gpumem.memory_report()["runtimes"].get("cupy", {})
json.dump({"sum": float(host.sum()), "sha": hashlib.sha256(host.tobytes()).hexdigest(), "stats": extra},
          open(sys.argv[2], "w"))
print(float(host.sum()))
EOF
run c-cupy-own "$T_SHORT" $PYTHON "$out/cupy_work.py" own "$out/cupy-own.json"
run c-cupy-gpumem "$T_SHORT" $PYTHON "$out/cupy_work.py" gpumem "$out/cupy-gpumem.json"
$PYTHON - "$out/cupy-own.json" "$out/cupy-gpumem.json" <<'EOF' 2>&1 | tee -a "$summary"
import json, sys
try:
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
except Exception as e:
    print("FAIL  c-cupy-compare: %s" % e); sys.exit(0)
ok = a["sha"] == b["sha"]
print("%s  c-cupy-compare: sums %r and %r, bit-identical: %s; cupy through gpumem: %s"
      % ("PASS" if ok else "FAIL", a["sum"], b["sum"], ok, b.get("stats")))
EOF

# ---- (e) one pool for all three runtimes in one process ------------------------------------
cat >"$out/shared_pool.py" <<'EOF'
import os, sys, tempfile
import gpumem, gpumem.torch, gpumem.cupy
gpumem.torch.install()            # before PyTorch's first CUDA allocation
import torch, cupy, numpy as np
from numba import cuda
assert os.environ.get("NUMBA_CUDA_MEMORY_MANAGER") == "gpumem.numba"
gpumem.cupy.install()
n = 1 << 20
trace = os.path.join(tempfile.mkdtemp(), "shared.gmtrace")
gpumem.release_held()
with gpumem.trace(trace):
    a = cuda.device_array(n, dtype=np.uint8)
    pa = a.device_ctypes_pointer.value
    del a                                    # numba frees it on the legacy default stream
    x = cupy.empty(n, dtype=cupy.uint8)      # CuPy's current stream is the legacy default stream
    px = x.data.ptr
    del x
    t = torch.empty(n, dtype=torch.uint8, device="cuda")
    pt = t.data_ptr()
    keep = (cuda.device_array(n, dtype=np.uint8), cupy.zeros(n, dtype=cupy.uint8),
            torch.zeros(n, dtype=torch.uint8, device="cuda"))
    rep = gpumem.memory_report()
data = open(trace, "rb").read()
print("numba block %#x, CuPy got %#x, PyTorch got %#x" % (pa, px, pt))
print("runtimes:", {k: (v["device_count"], v["device_bytes"]) for k, v in rep["runtimes"].items()})
ok = px == pa and pt == pa
ok &= all(rep["runtimes"].get(r, {}).get("device_count", 0) >= 1 for r in ("numba", "cupy", "torch"))
ok &= all(r.encode() in data for r in ("numba", "cupy", "torch"))
print("one pool: a block freed by numba was reused by CuPy, then by PyTorch; all three in the report and the trace:", ok)
sys.exit(0 if ok else 1)
EOF
run e-shared-pool "$T_SHORT" env NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba $PYTHON "$out/shared_pool.py"
grep -E '^(numba block|runtimes|one pool)' "$out/e-shared-pool.log" | sed 's/^/      /' | tee -a "$summary"

# ---- (d) timings ---------------------------------------------------------------------------
# Side by side: numba and CuPy time both allocators in one process, in
# interleaved rounds (own, gpumem, own, gpumem, ...), and report the median
# round of each, so the machine's drift falls on both alike.  PyTorch can
# switch allocators only before its first CUDA allocation: its two processes
# run alternately, ROUNDS rounds each, and the medians are compared.
cat >"$out/timing.py" <<'EOF'
import gc, os, statistics, sys, time
what = sys.argv[1]
N = int(os.environ.get("PAIRS", "20000"))         # allocate-and-free pairs of 256 B per round
ROUNDS = int(os.environ.get("ROUNDS", "9"))


def round_us(make):
    t0 = time.perf_counter()
    for _ in range(N):
        a = make()
        del a
    return (time.perf_counter() - t0) / N * 1e6


def interleaved(modes):
    """modes: [(name, setup, make)]: setup() switches to the mode; the rounds
    alternate between the modes; prints each mode's median round."""
    for name, setup, make in modes:   # warm up: contexts, pools, caches
        setup()
        round_us(make)
    times = {name: [] for name, _, _ in modes}
    gc.disable()
    for r in range(ROUNDS):
        for name, setup, make in (modes if r % 2 == 0 else modes[::-1]):
            setup()
            times[name].append(round_us(make))
    gc.enable()
    for name, _, _ in modes:
        t = sorted(times[name])
        print("%s %s %.3f us (median of %d rounds of %d; min %.3f, max %.3f)"
              % (what, name, statistics.median(t), ROUNDS, N, t[0], t[-1]))


if what == "numba":
    from numba import cuda
    from numba.cuda.cudadrv import driver
    import numpy as np
    import gpumem.numba
    ctx = cuda.current_context()
    own = ctx.memory_manager
    mine = gpumem.numba.GpumemMemoryManager(context=ctx)
    mine.initialize()

    class Floor(gpumem.numba.GpumemMemoryManager):
        """numba's own cost: memalloc hands out one fixed block, no finalizer."""
        def memalloc(self, size, _keep=[]):
            if not _keep:
                _keep.append(mine.memalloc(1 << 20))
            return driver.MemoryPointer(self._ctx(), _keep[0].device_pointer, size)

    floor = Floor(context=ctx)

    def use(mm):
        def setup():
            ctx.memory_manager = mm
        return setup
    make = lambda: cuda.device_array(256, dtype=np.uint8)
    interleaved([("own", use(own), make), ("gpumem", use(mine), make), ("floor", use(floor), make),
                 ("plugin-only", use(mine), lambda: mine.memalloc(256))])
    ctx.memory_manager = own
elif what == "cupy":
    import cupy
    import gpumem.cupy
    pool = cupy.get_default_memory_pool().malloc
    make = lambda: cupy.empty(256, dtype=cupy.uint8)
    print("cupy path %s" % gpumem.cupy.PATH)
    modes = [("own", lambda: cupy.cuda.set_allocator(pool), make),
             ("gpumem", lambda: cupy.cuda.set_allocator(gpumem.cupy.malloc), make)]
    if gpumem.cupy.PATH == "c":  # the Python-function allocator beside it
        modes.append(("gpumem-python", lambda: cupy.cuda.set_allocator(gpumem.cupy._python_allocator.malloc), make))
    interleaved(modes)
elif what == "torch":
    mode = sys.argv[2]
    if mode == "gpumem":
        import gpumem.torch
        gpumem.torch.install()
    import torch
    make = lambda: torch.empty(256, dtype=torch.uint8, device="cuda")
    interleaved([(mode, lambda: None, make)])
elif what == "raw":
    import gpumem
    interleaved([("gpumem", lambda: None, lambda: gpumem.free(gpumem.alloc(256)))])
EOF
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
us_of() { grep -E "^$1 $2 [0-9.]+ us" "$3" 2>/dev/null | awk '{ print $3 }'; }
# numba's own manager stays the context's; the plugin's is made beside it
run d-numba "$T_SHORT" env -u NUMBA_CUDA_MEMORY_MANAGER $PYTHON "$out/timing.py" numba
run d-cupy "$T_SHORT" $PYTHON "$out/timing.py" cupy
: >"$out/d-torch.log"
for i in 1 2 3; do
    for m in own gpumem; do
        run "d-torch-$m-$i" "$T_SHORT" $PYTHON "$out/timing.py" torch "$m" && cat "$out/d-torch-$m-$i.log" >>"$out/d-torch.log"
    done
done
run d-raw "$T_SHORT" $PYTHON "$out/timing.py" raw
note ""
note "timings (256 B allocate-and-free pairs, side by side; targets: numba >= 5x faster through gpumem, CuPy and PyTorch no slower):"
for w in numba cupy torch; do
    o=$(us_of $w own "$out/d-$w.log" | median)
    g=$(us_of $w gpumem "$out/d-$w.log" | median)
    if [ -n "$o" ] && [ -n "$g" ]; then
        note "  $(printf '%-6s' $w) own $(printf '%8s' $o) us   gpumem $(printf '%8s' $g) us   own/gpumem $(awk -v o="$o" -v g="$g" 'BEGIN { printf "%.2fx", o / g }')"
    else
        note "  $w: no timing (see $out/d-$w*.log)"
    fi
done
note "  numba device_array with a memalloc that does nothing (numba's own floor): $(us_of numba floor "$out/d-numba.log") us;" \
     "the plugin's memalloc + del alone: $(us_of numba plugin-only "$out/d-numba.log") us"
note "  CuPy through gpumem: $(grep -E '^cupy path' "$out/d-cupy.log") (CFunctionAllocator: c); through its Python-function allocator: $(us_of cupy gpumem-python "$out/d-cupy.log") us"
note "  gpumem.alloc + gpumem.free from Python: $(us_of raw gpumem "$out/d-raw.log") us"
echo
echo "==== summary ($summary)"
cat "$summary"
grep -q '^FAIL' "$summary" && exit 1
exit 0
