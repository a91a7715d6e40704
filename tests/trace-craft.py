#!/usr/bin/env python3
"""trace-craft.py - crafted traces (doc/trace-format.md, version 1) for
tests/test-trace-hostile.sh:

  symbols OUT MODULE...  one call site per module file, each named by one
                         allocation never freed (sizes 1 KiB, 2 KiB, ...)
  pools OUT N            N allocations, each in a pool of its own, freed
  regions OUT N          N pushes that are never popped, then N pops that
                         close none of them (another depth)
  streams OUT N          N device allocations, each on a stream of its own
  huge OUT BYTES         one device allocation of BYTES, freed
  total OUT N BYTES      N device allocations of BYTES each, never freed
"""
import struct
import sys

ALLOC, FREE, PUSH, POP = 1, 2, 8, 9


class Trace:
    def __init__(self, flags=0):
        self.blocks = []
        self.nstr = 0
        self.nstk = 0
        self.nrec = 0
        self.flags = flags
        self.block(1, struct.pack("<II", 4242, 0) + b"/crafted")
        self.block(2, struct.pack("<II", 0, 4242) + b"main")

    def block(self, btype, payload):
        self.blocks.append(struct.pack("<II", btype, len(payload)) + payload)

    def string(self, text):
        self.nstr += 1
        self.block(3, struct.pack("<I", self.nstr) + text.encode())
        return self.nstr

    def stack(self, module):
        self.nstk += 1
        self.block(4, struct.pack("<II", self.nstk, 1) + struct.pack("<QQII", 0x401000, 0x1000, module, 0))
        return self.nstk

    def events(self, records):
        for k in range(0, len(records), 100000):
            part = records[k:k + 100000]
            self.block(5, struct.pack("<II", 0, len(part)) + b"".join(part))
            self.nrec += len(part)

    def write(self, path, end_ns):
        head = b"GPUMEMTR" + struct.pack("<IIIIQQQQQ", 1, 64, 64, self.flags, 0, 0, 0, 0, 0)
        self.block(7, struct.pack("<QQQQ", self.nrec, 0, end_ns, end_ns))
        with open(path, "wb") as f:
            f.write(head)
            for b in self.blocks:
                f.write(b)


def rec(etype, t, kind=0, device=0, stream=0, pool=0, nbytes=0, value=0, ref=0, aux=0):
    return struct.pack("<BBBBiQQQQQQII", etype, kind, 0, 0, device, t, 1, stream, pool, nbytes, value, ref, aux)


def main(argv):
    cmd, out = argv[1], argv[2]
    if cmd == "symbols":
        tr = Trace(flags=1)
        mods = [tr.string(m) for m in argv[3:]]
        stacks = [tr.stack(m) for m in mods]
        tr.events([rec(ALLOC, 1000 * (i + 1), nbytes=1024 * (i + 1), value=0x10000 * (i + 1), ref=s)
                   for i, s in enumerate(stacks)])
        tr.write(out, 1000 * (len(stacks) + 2))
    elif cmd == "pools":
        n = int(argv[3])
        tr = Trace()
        r = [rec(ALLOC, 10 * i + 1, pool=0x100000 + i, nbytes=256, value=0x7000000 + 256 * i) for i in range(n)]
        r += [rec(FREE, 10 * (n + i) + 1, pool=0x100000 + i, nbytes=256, value=0x7000000 + 256 * i)
              for i in range(n)]
        tr.events(r)
        tr.write(out, 10 * 2 * n + 10)
    elif cmd == "regions":
        n = int(argv[3])
        tr = Trace()
        name = tr.string("region")
        r = [rec(PUSH, 10 * i + 1, kind=255, device=-1, ref=name, aux=1) for i in range(n)]
        r += [rec(POP, 10 * (n + i) + 1, kind=255, device=-1, aux=2) for i in range(n)]
        tr.events(r)
        tr.write(out, 10 * 2 * n + 10)
    elif cmd == "streams":
        n = int(argv[3])
        tr = Trace()
        r = [rec(ALLOC, 10 * i + 1, stream=0x5000 + i, nbytes=256, value=0x7000000 + 256 * i) for i in range(n)]
        r += [rec(FREE, 10 * (n + i) + 1, stream=0x5000 + i, nbytes=256, value=0x7000000 + 256 * i)
              for i in range(n)]
        tr.events(r)
        tr.write(out, 10 * 2 * n + 10)
    elif cmd == "huge":
        b = int(argv[3])
        tr = Trace()
        tr.events([rec(ALLOC, 100, nbytes=b, value=0x7000000), rec(FREE, 200, nbytes=b, value=0x7000000)])
        tr.write(out, 1000)
    elif cmd == "total":
        n, b = int(argv[3]), int(argv[4])
        tr = Trace()
        tr.events([rec(ALLOC, 100 * (i + 1), nbytes=b, value=0x7000000 + 0x100000 * i) for i in range(n)])
        tr.write(out, 100 * (n + 2))
    else:
        sys.exit("trace-craft.py: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
