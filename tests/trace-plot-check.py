#!/usr/bin/env python3
"""Checks `gpumem trace plot` pictures: the SVG's text (hover details, the
time axis, what is drawn over what), and, given a browser, the page opened
in headless Chromium: the expected elements are there and laid out, a
screenshot is not blank, and the page logs no console error and no exception.

    trace-plot-check.py BROWSER PAGE.html EXPECT.json [PAGE.html EXPECT.json ...]
    trace-plot-check.py --write-trace NAME FILE

BROWSER is "" for no browser: its checks are then skipped, and say so.
EXPECT may name "svg", the same trace drawn with -o OUT.svg, whose text is
checked.  --write-trace writes one of the crafted traces below (make_trace).

Chromium is driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: no port, no network, no Python package).  The
screenshot is decoded here (PNG: zlib and the five row filters).  Prints TAP;
exit status 0 when every check passes.
"""
import base64
import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

TIMEOUT = 90.0
results = []


def check(cond, name, detail=""):
    results.append((bool(cond), name, detail))


def skip(name, why):
    results.append((None, name, why))


# ---- crafted traces (doc/trace-format.md) -----------------------------------------------------

def make_trace(name):
    """The bytes of a crafted trace.  Ticks are ns (the clock pairs say so).

    oom-at-peak (format version 1): two device allocations of 32 MiB at 10
    and 60 ms, an allocation of 1 GiB that fails at 60 ms, while the 64 MiB
    are in use (the peak), and the two frees at 80 and 90 ms; the trace ends
    at 100 ms.

    owners (format version 2, with call sites): the program's device
    allocations of 32 MiB (call site 1, at 10 ms) and 16 MiB (call site 2,
    at 20 ms), then the library's own: 8 MiB of pinned staging slots (at 30
    ms) and 4 MiB of device scratch (at 40 ms), all freed from 70 ms; the
    trace ends at 100 ms.

    owners-kept: owners whose staging slots are never freed (the library
    keeps them for later calls).
    """
    ms = 1000000
    MiB = 1 << 20

    def block(kind, payload):
        return struct.pack("<II", kind, len(payload)) + payload

    def record(type_, t, kind=0, flags=0, device=0, pool=0, nbytes=0, value=0, ref=0, aux=0):
        return struct.pack("<BBBBiQQQQQQII", type_, kind, 0, flags, device, t, 0x1000, 0, pool, nbytes, value,
                           ref, aux)

    end = 100 * ms
    if name == "oom-at-peak":
        version, flags = 1, 0
        strings = [b"gpumem_device_array: out of device memory: asked for 1073741824 bytes (crafted)"]
        stacks = []
        events = [record(1, 10 * ms, nbytes=32 * MiB, value=0x10000000),
                  record(1, 60 * ms, nbytes=32 * MiB, value=0x20000000),
                  record(5, 60 * ms, nbytes=1 << 30, ref=1, aux=4),
                  record(2, 80 * ms, nbytes=32 * MiB, value=0x10000000, kind=255),
                  record(2, 90 * ms, nbytes=32 * MiB, value=0x20000000, kind=255)]
    elif name in ("owners", "owners-kept"):
        version, flags = 2, 1
        strings = [b"/nonexistent/crafted-program"]
        # one frame each, in the module of string 1 (which cannot be read: named by file and address)
        stacks = [struct.pack("<II", 1, 1) + struct.pack("<QQII", 0x401000, 0x1000, 1, 0),
                  struct.pack("<II", 2, 1) + struct.pack("<QQII", 0x402000, 0x2000, 1, 0)]
        events = [record(1, 10 * ms, nbytes=32 * MiB, value=0x10000000, ref=1),
                  record(1, 20 * ms, nbytes=16 * MiB, value=0x20000000, ref=2),
                  record(1, 30 * ms, kind=2, nbytes=8 * MiB, value=0x7f0000000000, ref=1, aux=2),
                  record(1, 40 * ms, nbytes=4 * MiB, value=0x30000000, ref=2, aux=1),
                  record(2, 70 * ms, nbytes=4 * MiB, value=0x30000000, kind=255),
                  record(2, 75 * ms, kind=255, nbytes=8 * MiB, value=0x7f0000000000),
                  record(2, 80 * ms, nbytes=16 * MiB, value=0x20000000, kind=255),
                  record(2, 90 * ms, nbytes=32 * MiB, value=0x10000000, kind=255)]
        if name == "owners-kept":
            del events[5]
    else:
        raise ValueError("no crafted trace named " + name)
    head = (b"GPUMEMTR" + struct.pack("<IIII", version, 64, 64, flags) +
            struct.pack("<QQQQQ", 1700000000 * 10**9, 0, 0, 0, 0))
    body = (block(1, struct.pack("<II", 4242, 0) + b"/crafted/program") +
            b"".join(block(3, struct.pack("<I", i + 1) + x) for i, x in enumerate(strings)) +
            b"".join(block(4, x) for x in stacks) +
            block(2, struct.pack("<II", 0, 4242) + b"main") +
            block(5, struct.pack("<II", 0, len(events)) + b"".join(events)) +
            block(6, struct.pack("<QQ", end, end)) +
            block(7, struct.pack("<QQQQ", len(events), 0, end, end)))
    return head + body


# ---- the SVG's text -------------------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"
UNIT = r"(?:ns|us|ms|s)"


def parse_moment(text, unit):
    """ns of a moment "0" or "12.50 ms" whose unit must be `unit`, else None."""
    if text == "0":
        return 0.0
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?) (" + UNIT + ")", text)
    if not m or m.group(2) != unit:
        return None
    return float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def check_svg(svg_file, label, expect):
    """Checks what the picture says in words, and what it draws over what."""
    try:
        root = ET.parse(svg_file).getroot()
    except Exception as e:
        check(False, "%s: plot -o OUT.svg writes well-formed SVG" % label, repr(e))
        return
    check(root.tag == SVG + "svg" and root.find(".//%spath[@class='area']" % SVG) is not None,
          "%s: plot -o OUT.svg writes the picture alone, as well-formed SVG" % label)
    groups = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}
    # the time axis: "0" at the start, then every label in the unit its title names
    axis = groups.get("time-axis")
    texts = [t.text or "" for t in axis.iter(SVG + "text")] if axis is not None else []
    m = re.search(r"\((" + UNIT + r")\)$", texts[-1]) if texts else None
    unit = m.group(1) if m else None
    ticks = texts[:-1]
    values = [parse_moment(x, unit) for x in ticks] if unit else []
    check(len(ticks) >= 3 and ticks[0] == "0" and unit is not None and None not in values and
          values == sorted(values),
          "%s: the time axis starts at \"0\" and counts in one unit, named in its title" % label, texts)
    # hover details of the memory chart: "A to B: in use X", A the last B
    hover = root.find(".//%sg[@class='hover']" % SVG)
    titles = [r.find(SVG + "title").text for r in hover.iter(SVG + "rect")] if hover is not None else []
    bad, last = [], 0.0
    for title in titles:
        m = re.match(r"(\S+(?: \S+)?) to (\S+ \S+): in use [0-9.]+ (?:B|KiB|MiB|GiB|TiB)(\n|$)", title)
        a = parse_moment(m.group(1), unit) if m else None
        b = parse_moment(m.group(2), unit) if m else None
        if a is None or b is None or not a < b or abs(a - last) > 1e-6 * max(b, 1):
            bad.append(title)
        last = b if b is not None else last
    check(len(titles) > 100 and not bad, "%s: each column's hover says from when to when (in the axis' unit) "
          "and what was in use" % label, bad[:3])
    # the memory's categories, and what hovering says
    if "areas" in expect:
        names = sorted(a.get("data-category") for a in root.iter(SVG + "path") if a.get("class") == "area")
        want = expect["areas"]
        check(len(names) == len(want) and all(re.fullmatch(w, n) for w, n in zip(sorted(want), names)),
              "%s: memory in use: one area per category (%s)" % (label, ", ".join(names)), want)
    area_titles = [a.find(SVG + "title").text for a in root.iter(SVG + "path") if a.get("class") == "area"]
    for what in expect.get("area_titles", []):
        check(any(re.search(what, x) for x in area_titles), "%s: an area's hover says /%s/" % (label, what),
              area_titles)
    for what in expect.get("hover", []):
        check(any(re.search(what, x) for x in titles), "%s: a column's hover says /%s/" % (label, what))
    # nothing drawn after the memory areas hides a column but the markers' dotted lines
    order = list(root.iter())
    areas = [i for i, e in enumerate(order) if e.get("class") == "area"]
    hiding = [e.get("class") or e.tag for e in order[(areas[0] if areas else 0):]
              if e.tag == SVG + "line" and e.get("stroke") == "#d62728"]
    check(areas and not hiding, "%s: out-of-memory lines are drawn under the memory areas" % label, hiding)


class Browser:
    def __init__(self, exe, profile):
        to_b = os.pipe()
        from_b = os.pipe()
        # far from 3 and 4, so that moving them there clobbers nothing
        self.r = fcntl.fcntl(from_b[0], fcntl.F_DUPFD, 20)
        self.w = fcntl.fcntl(to_b[1], fcntl.F_DUPFD, 20)
        child_r = fcntl.fcntl(to_b[0], fcntl.F_DUPFD, 20)
        child_w = fcntl.fcntl(from_b[1], fcntl.F_DUPFD, 20)
        for fd in (*to_b, *from_b):
            os.close(fd)

        def place():
            os.dup2(child_r, 3)
            os.dup2(child_w, 4)

        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
                "--remote-debugging-pipe", "--user-data-dir=" + profile, "--window-size=1300,1000",
                "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=place, pass_fds=(3, 4))
        os.close(child_r)
        os.close(child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the browser")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 65536)
                if not chunk:
                    raise EOFError("the browser closed its pipe")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None):
        mid = self.send(method, params, session)
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = self.read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method):
        deadline = time.monotonic() + TIMEOUT
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self.read_message(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def png_pixels(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (2, 6) and interlace == 0, ihdr
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


PROBE = r"""
JSON.stringify((() => {
  const svg = document.getElementById('gpumem-timeline');
  const q = s => document.querySelectorAll(s).length;
  const box = e => { const b = e.getBBox(); return [b.width, b.height]; };
  const r = svg ? svg.getBoundingClientRect() : null;
  return {
    svg: !!svg, width: r ? r.width : 0, height: r ? r.height : 0,
    areas: [...document.querySelectorAll('#memory path.area')].map(p => [p.dataset.category, ...box(p)]),
    markers: q('#markers line.marker'), regions: q('#regions rect.region'),
    copies: q('#copies rect.copy'), oom: q('#oom g.oom'), ladder: q('#ladder path.ladder'),
    trims: q('#ladder path.trim'), titles: q('svg title'), axis: q('#time-axis text'),
    scripts: q('script'),
    external: [...document.querySelectorAll('[href], [src]')].map(e => e.getAttribute('href') || e.getAttribute('src')),
  };
})())
"""


# Where the out-of-memory dot is, and what lies at the highest column's top
# under it: the element there, and its hover text.
PEAK_PROBE = r"""
JSON.stringify((() => {
  const svg = document.getElementById('gpumem-timeline');
  const dot = document.querySelector('#oom circle');
  const bg = document.querySelector('#memory rect');
  if (!svg || !dot || !bg) return null;
  const to_page = (x, y) => { const p = svg.createSVGPoint(); p.x = x; p.y = y;
                              return p.matrixTransform(svg.getScreenCTM()); };
  const top = +bg.getAttribute('y'), h = +bg.getAttribute('height');
  /* the chart's top is the peak times 1.08: the peak's column ends 1/1.08 of the way up */
  const at = to_page(+dot.getAttribute('cx'), top + h * (1 - 1 / 1.08) + 4);
  const e = document.elementFromPoint(at.x, at.y);
  const title = e ? [...e.children].find(c => c.tagName === 'title') : null;
  return {x: at.x, y: at.y, tag: e ? e.tagName : '', cls: e ? (e.getAttribute('class') || '') : '',
          parent: e && e.parentNode.getAttribute ? (e.parentNode.getAttribute('class') || '') : '',
          title: title ? title.textContent : ''};
})())
"""


def screenshot(b, session, clip):
    shot = b.call("Page.captureScreenshot", {"format": "png", "clip": clip}, session=session)
    return png_pixels(base64.b64decode(shot["data"]))


def check_page(b, page, expect, label):
    target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page"):
        b.call(domain + ".enable", session=session)
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": 1300, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session=session)
    b.events = []
    b.call("Page.navigate", {"url": "file://" + page}, session=session)
    b.wait_event("Page.loadEventFired")
    got = json.loads(b.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True},
                            session=session)["result"]["value"])
    check(got["svg"] and got["width"] > 1000 and got["height"] > 400,
          "%s: the page holds the timeline's SVG, laid out (%.0f x %.0f px)" % (label, got["width"], got["height"]))
    if "areas" in expect:  # regular expressions, one per category
        cats = sorted(a[0] for a in got["areas"])
        want = sorted(expect["areas"])
        check(len(cats) == len(want) and all(re.fullmatch(w, c) for w, c in zip(want, cats)) and
              all(a[1] > 100 and a[2] > 1 for a in got["areas"]),
              "%s: memory in use: one drawn area per category (%s)" % (label, ", ".join(cats)), got["areas"])
    for key, what in (("markers", "markers"), ("regions", "regions"), ("copies", "copies"),
                      ("oom", "out-of-memory events"), ("ladder", "ladder runs"), ("trims", "pool trims")):
        if key in expect:
            check(got[key] == expect[key], "%s: %d %s drawn" % (label, expect[key], what), "got %d" % got[key])
    check(got["titles"] > 50, "%s: hover details: %d <title> elements" % (label, got["titles"]))
    check(got["axis"] > 5, "%s: a time axis with labels" % label)
    check(got["scripts"] == 0 and got["external"] == [],
          "%s: no script and no link to anything outside the page" % label, got["external"])
    # On a loaded machine the first screenshot may come before the page
    # is wholly painted (11984 of 260000 pixels once, in make -j3 check
    # beside other builds): take it again until it is, for a while.
    # The device area's colour is waited for too where it is expected: a
    # page painted but for that area failed once under load (distcheck at
    # a load average of 10 on 2 cores).
    # #4e79a7 at 85% over #fafafa
    blue = tuple(round(0.85 * c + 0.15 * 0xfa) for c in (0x4e, 0x79, 0xa7))
    want_blue = expect.get("device_blue", True)
    deadline = time.monotonic() + TIMEOUT
    while True:
        width, height, rows = screenshot(b, session, {"x": 0, "y": 0, "width": 1300, "height": 800, "scale": 0.5})
        pixels = [p for row in rows for p in row]
        inked = sum(1 for p in pixels if min(p) < 235)
        colours = {(p[0] >> 4, p[1] >> 4, p[2] >> 4) for p in pixels}
        device_blue = sum(1 for p in pixels if all(abs(p[k] - blue[k]) < 12 for k in range(3)))
        painted = inked > width * height // 20 and len(colours) >= 8 and (device_blue > 1000 or not want_blue)
        if painted or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    check(inked > width * height // 20 and len(colours) >= 6,
          "%s: the screenshot is not blank: %d of %d pixels inked, %d colours" % (label, inked, width * height,
                                                                                 len(colours)))
    if want_blue:
        check(device_blue > 1000, "%s: the device memory area shows in its colour (%d pixels)" % (label, device_blue))
    if expect.get("oom_at_peak"):
        # the allocation failed at the peak: its column shows, and hovers, under the out-of-memory line
        at = json.loads(b.call("Runtime.evaluate", {"expression": PEAK_PROBE, "returnByValue": True},
                               session=session)["result"]["value"] or "null")
        ok = (at is not None and at["tag"] == "rect" and at["parent"] == "hover" and
              re.search(r": in use " + re.escape(expect["oom_at_peak"]) + r"(\n|$)", at["title"]) is not None)
        if ok:
            _, _, rows = screenshot(b, session, {"x": at["x"] - 0.5, "y": at["y"] - 0.5, "width": 1, "height": 1,
                                                 "scale": 1})
            pixel = rows[0][0]
            ok = all(abs(pixel[k] - blue[k]) < 12 for k in range(3))
            at["pixel"] = pixel
        check(ok, "%s: the highest column shows its colour and its hover under the out-of-memory line" % label, at)
    if os.environ.get("GPUMEM_PLOT_SCREENSHOT"):  # to look at it
        shot = b.call("Page.captureScreenshot", {"format": "png"}, session=session)
        with open(os.environ["GPUMEM_PLOT_SCREENSHOT"] + "." + label + ".png", "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    # the page's console: nothing at error level, no exception
    b.call("Runtime.evaluate", {"expression": "1"}, session=session)  # let queued events arrive
    errors = [m for m in b.events if m.get("method") == "Runtime.exceptionThrown"
              or (m.get("method") == "Runtime.consoleAPICalled" and m["params"].get("type") in ("error", "assert"))
              or (m.get("method") == "Log.entryAdded" and m["params"]["entry"].get("level") == "error")]
    check(not errors, "%s: no console error and no exception" % label, json.dumps(errors)[:2000])
    b.call("Target.closeTarget", {"targetId": target})


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--write-trace":
        with open(sys.argv[3], "wb") as f:
            f.write(make_trace(sys.argv[2]))
        return 0
    browser_exe = sys.argv[1]
    pages = [(os.path.abspath(sys.argv[i]), json.loads(sys.argv[i + 1])) for i in range(2, len(sys.argv) - 1, 2)]
    for page, expect in pages:
        label = os.path.basename(page)
        if expect.get("svg"):
            check_svg(expect["svg"], label, expect.get("svg_expect", {}))
    if not browser_exe:
        skip("the pages in a browser", "no Chromium to open the pictures in (install the Debian package chromium)")
    else:
        profile = tempfile.mkdtemp(prefix="gpumem-chromium.")
        b = None
        try:
            b = Browser(browser_exe, profile)
            for page, expect in pages:
                check_page(b, page, expect, os.path.basename(page))
        except Exception as e:  # the browser failed: one failing check says how
            check(False, "the browser opened the pages and answered", repr(e))
        finally:
            if b is not None:
                b.close()
            shutil.rmtree(profile, ignore_errors=True)
    print("1..%d" % len(results))
    for i, (good, name, detail) in enumerate(results, 1):
        if good is None:
            print("ok %d # SKIP %s: %s" % (i, name, detail))
            continue
        print("%sok %d - %s" % ("" if good else "not ", i, name))
        if not good and detail:
            print("# " + str(detail).replace("\n", "\n# "))
    return 0 if all(r[0] is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
