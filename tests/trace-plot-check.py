#!/usr/bin/env python3
"""Opens a `gpumem trace plot` page in headless Chromium and checks that the
picture renders: the expected elements are there and laid out, a screenshot
is not blank, and the page logs no console error and no exception.

    trace-plot-check.py BROWSER PAGE.html EXPECT.json [PICTURE.svg]

Chromium is driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: no port, no network, no Python package).  The
screenshot is decoded here (PNG: zlib and the five row filters).  Prints TAP;
exit status 0 when every check passes.
"""
import base64
import fcntl
import json
import os
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


def main():
    browser_exe, page, expect = sys.argv[1], os.path.abspath(sys.argv[2]), json.loads(sys.argv[3])
    svg_file = sys.argv[4] if len(sys.argv) > 4 else None
    profile = tempfile.mkdtemp(prefix="gpumem-chromium.")
    b = None
    try:
        b = Browser(browser_exe, profile)
        target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            b.call(domain + ".enable", session=session)
        b.call("Emulation.setDeviceMetricsOverride",
               {"width": 1300, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session=session)
        b.call("Page.navigate", {"url": "file://" + page}, session=session)
        b.wait_event("Page.loadEventFired")
        got = json.loads(b.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True},
                                session=session)["result"]["value"])
        check(got["svg"] and got["width"] > 1000 and got["height"] > 400,
              "the page holds the timeline's SVG, laid out (%.0f x %.0f px)" % (got["width"], got["height"]))
        cats = sorted(a[0] for a in got["areas"])
        check(cats == sorted(expect["areas"]) and all(a[1] > 100 and a[2] > 1 for a in got["areas"]),
              "memory in use: one drawn area per kind (%s)" % ", ".join(cats), got["areas"])
        for key, what in (("markers", "markers"), ("regions", "regions"), ("copies", "copies"),
                          ("oom", "out-of-memory events"), ("ladder", "ladder runs"), ("trims", "pool trims")):
            check(got[key] == expect[key], "%d %s drawn" % (expect[key], what), "got %d" % got[key])
        check(got["titles"] > 50, "hover details: %d <title> elements" % got["titles"])
        check(got["axis"] > 5, "a time axis with labels")
        check(got["scripts"] == 0 and got["external"] == [], "no script and no link to anything outside the page",
              got["external"])
        # On a loaded machine the first screenshot may come before the page
        # is wholly painted (11984 of 260000 pixels once, in make -j3 check
        # beside other builds): take it again until it is, for a while.
        deadline = time.monotonic() + TIMEOUT
        while True:
            shot = b.call("Page.captureScreenshot",
                          {"format": "png", "clip": {"x": 0, "y": 0, "width": 1300, "height": 800, "scale": 0.5}},
                          session=session)
            png = base64.b64decode(shot["data"])
            width, height, rows = png_pixels(png)
            pixels = [p for row in rows for p in row]
            inked = sum(1 for p in pixels if min(p) < 235)
            colours = {(p[0] >> 4, p[1] >> 4, p[2] >> 4) for p in pixels}
            if (inked > width * height // 20 and len(colours) >= 8) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        if os.environ.get("GPUMEM_PLOT_SCREENSHOT"):  # to look at it
            with open(os.environ["GPUMEM_PLOT_SCREENSHOT"], "wb") as f:
                f.write(png)
        # #4e79a7 at 85% over #fafafa
        blue = tuple(round(0.85 * c + 0.15 * 0xfa) for c in (0x4e, 0x79, 0xa7))
        device_blue = sum(1 for p in pixels if all(abs(p[k] - blue[k]) < 12 for k in range(3)))
        check(inked > width * height // 20 and len(colours) >= 8,
              "the screenshot is not blank: %d of %d pixels inked, %d colours" % (inked, width * height, len(colours)))
        check(device_blue > 1000, "the device memory area shows in its colour (%d pixels)" % device_blue)
        # the page's console: nothing at error level, no exception
        b.call("Runtime.evaluate", {"expression": "1"}, session=session)  # let queued events arrive
        errors = [m for m in b.events if m.get("method") == "Runtime.exceptionThrown"
                  or (m.get("method") == "Runtime.consoleAPICalled" and m["params"].get("type") in ("error", "assert"))
                  or (m.get("method") == "Log.entryAdded" and m["params"]["entry"].get("level") == "error")]
        check(not errors, "no console error and no exception", json.dumps(errors)[:2000])
    except Exception as e:  # the browser failed: one failing check says how
        check(False, "the browser opened the page and answered", repr(e))
    finally:
        if b is not None:
            b.close()
        shutil.rmtree(profile, ignore_errors=True)
    if svg_file:
        try:
            root = ET.parse(svg_file).getroot()
            ok = root.tag == "{http://www.w3.org/2000/svg}svg" and root.find(
                ".//{http://www.w3.org/2000/svg}path[@class='area']") is not None
            check(ok, "plot -o OUT.svg writes the picture alone, as well-formed SVG")
        except Exception as e:
            check(False, "plot -o OUT.svg writes well-formed SVG", repr(e))
    print("1..%d" % len(results))
    for i, (good, name, detail) in enumerate(results, 1):
        print("%sok %d - %s" % ("" if good else "not ", i, name))
        if not good and detail:
            print("# " + str(detail).replace("\n", "\n# "))
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
