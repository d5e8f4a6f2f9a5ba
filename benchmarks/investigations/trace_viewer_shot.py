"""Screenshot a `bench --trace` file in catapult's trace viewer (what chrome://tracing shows), headless.

chrome://tracing does not load in headless Chromium, so the trace is first made into catapult's
standalone viewer page with its `tracing/bin/trace2html`; this opens that page in headless
Chromium, waits for the import, zooms to a few frames, selects every slice of one frame (the
analysis panel then lists each stage's time for that frame), shows the frames' flow arrows, and
writes a PNG. It talks to Chromium over the DevTools protocol with a minimal WebSocket client, so
it needs nothing beyond the standard library and a `chromium` binary.

    python3 CATAPULT/tracing/bin/trace2html run.json --output run.html
    python -m benchmarks.investigations.trace_viewer_shot run.html shot.png [--frames 100:102]
        [--select 101] [--size 1400,540] [--chromium chromium]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# Runs in the page trace2html writes: `g_timelineViewEl` is its viewer; world units are ms.
ZOOM_AND_SELECT = """(() => {
  const view = g_timelineViewEl, model = view.model;
  const first = %(first)d, last = %(last)d, pick = %(select)d;
  let lo = Infinity, hi = -Infinity;
  const picked = [];
  for (const thread of model.getAllThreads()) {
    for (const s of thread.sliceGroup.slices) {
      const f = s.args && s.args.frame;
      if (f === undefined) continue;
      if (f >= first && f <= last) { lo = Math.min(lo, s.start); hi = Math.max(hi, s.end); }
      if (f === pick) picked.push(s);
    }
  }
  if (!picked.length) return 'no slice with args.frame ' + pick;
  // The analysis panel takes the height the tracks would leave blank.
  view.$.analysis.style.height = (window.innerHeight - %(tracks_px)d) + 'px';
  const tv = view.trackView, vp = tv.viewport;
  // The floating mouse-mode palette would cover the last frame.
  tv.mouseModeSelector_.style.display = 'none';
  const dt = new tr.ui.TimelineDisplayTransform();
  dt.set(vp.currentDisplayTransform);
  const pad = (hi - lo) * 0.03;
  dt.xSetWorldBounds(lo - pad, hi + pad, tv.modelTrackContainer_.canvas.width);
  vp.setDisplayTransformImmediately(dt);
  for (const e of model.flowEvents) vp.selectedFlowEvents.add(e.category);
  vp.dispatchChangeEvent();
  view.brushingStateController.changeSelectionFromTimeline(new tr.model.EventSet(picked));
  return 'ok';
})()"""


class DevTools:
    """One DevTools target over a WebSocket: text frames out (masked), whole messages in."""

    def __init__(self, ws_url: str) -> None:
        hostport, path = ws_url.split("://", 1)[1].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self._exact(1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools refused the WebSocket: {head.splitlines()[0]!r}")
        self.last_id = 0

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            buf += chunk
        return buf

    def _message(self) -> dict:
        parts = []
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack(">H", self._exact(2))
            elif n == 127:
                (n,) = struct.unpack(">Q", self._exact(8))
            parts.append(self._exact(n))
            if b0 & 0x80:
                return json.loads(b"".join(parts))

    def call(self, method: str, **params: object) -> dict:
        self.last_id += 1
        payload = json.dumps({"id": self.last_id, "method": method, "params": params}).encode()
        n = len(payload)
        if n < 126:
            header = struct.pack(">BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack(">BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack(">BBQ", 0x81, 0x80 | 127, n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        while True:  # events in between are not asked for, so skipped
            msg = self._message()
            if msg.get("id") == self.last_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def evaluate(self, expression: str) -> object:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


def first_page(port: int, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if pages:
                return str(pages[0]["webSocketDebuggerUrl"])
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("Chromium's DevTools endpoint did not come up in 30 s")
        time.sleep(0.3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="the page trace2html wrote")
    parser.add_argument("png", type=Path)
    parser.add_argument("--frames", default="100:102", help="FIRST:LAST, the frames to zoom to")
    parser.add_argument("--select", type=int, default=101, help="the frame whose slices are selected")
    parser.add_argument("--size", default="1400,540", help="WIDTH,HEIGHT in CSS pixels")
    parser.add_argument("--tracks-px", type=int, default=272, help="height left above the analysis panel")
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--port", type=int, default=9333, help="DevTools port")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the viewer's import")
    args = parser.parse_args(argv)
    try:
        first, last = (int(v) for v in args.frames.split(":"))
        width, height = (int(v) for v in args.size.split(","))
    except ValueError:
        parser.error("--frames is FIRST:LAST and --size WIDTH,HEIGHT, whole numbers")
    if not args.html.is_file():
        print(f"error: {args.html}: no such file", file=sys.stderr)
        return 2
    if shutil.which(args.chromium) is None:
        print(f"error: {args.chromium}: not found (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    profile = tempfile.mkdtemp(prefix="trace-viewer-shot-")
    proc = subprocess.Popen(
        [
            args.chromium,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            f"--window-size={width},{height}",
            f"--remote-debugging-port={args.port}",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        dt = DevTools(first_page(args.port, time.monotonic() + 30))
        dt.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        dt.call("Page.navigate", url=args.html.resolve().as_uri())
        deadline = time.monotonic() + args.timeout
        # The viewer sets its model only once the import has finished.
        while not dt.evaluate("typeof g_timelineViewEl !== 'undefined' && !!g_timelineViewEl.model"):
            if time.monotonic() > deadline:
                print(f"error: the viewer had not imported the trace after {args.timeout:g} s", file=sys.stderr)
                return 1
            time.sleep(0.5)
        time.sleep(1.0)  # its first layout of the tracks
        outcome = dt.evaluate(
            ZOOM_AND_SELECT % {"first": first, "last": last, "select": args.select, "tracks_px": args.tracks_px}
        )
        if outcome != "ok":
            print(f"error: {outcome}", file=sys.stderr)
            return 1
        time.sleep(1.0)  # the redraw is on the next animation frames
        args.png.write_bytes(base64.b64decode(dt.call("Page.captureScreenshot", format="png")["data"]))
    except (OSError, RuntimeError) as e:  # TimeoutError and ConnectionError included
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(profile, ignore_errors=True)
    print(f"{args.png}: frames {first}-{last}, frame {args.select} selected, {width}x{height}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
