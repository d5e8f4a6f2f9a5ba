"""Plot soak: drive the window's live plots through >= 1,000,000 pyqtgraph setData calls.

This is the load that exposed the PySide6 6.12.0 abort ("Fatal Python error: none_dealloc"
after ~400k QObject.property() calls, which pyqtgraph makes on every setData). Each
LivePlots.add_point is one setData per series (10 series), plus a switch marker every 500
points so marker add/remove is soaked too. Reports the time, RSS at the start/middle/end
and the Python object count, so a leak shows as growth.

    QT_QPA_PLATFORM=offscreen python -m benchmarks.soak.plot_soak [--set-data-calls 1000000]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

from PySide6 import __version__ as pyside_version
from PySide6.QtWidgets import QApplication

from app.ui.views.plots import KEYS, LivePlots
from benchmarks.harness.procfs import rss_mib


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--set-data-calls", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # read when the application starts
    app = QApplication([])
    plots = LivePlots()
    plots.resize(1000, 260)
    plots.show()
    rounds = -(-args.set_data_calls // len(KEYS))
    marks = []
    values = {k: 0.0 for k in KEYS}
    started = time.perf_counter()
    for i in range(rounds):
        t = i * 0.2  # 5 Hz, as the window refreshes
        for j, key in enumerate(KEYS):
            values[key] = 20 + 10 * ((i + j) % 7)
        plots.add_point(values, t=t)
        if i % 500 == 0:
            plots.add_marker(f"switch {i}", at=t)
        if i % 200 == 0:
            app.processEvents()  # let Qt paint now and then, as the event loop would
        if i in (rounds // 10, rounds // 2, rounds - 1):
            gc.collect()
            marks.append((i + 1, rss_mib(), len(gc.get_objects())))
    seconds = time.perf_counter() - started
    calls = rounds * len(KEYS)
    print(f"PySide6 {pyside_version}: {calls:,} setData calls ({rounds:,} plot updates) in {seconds:.0f} s")
    print(f"  {seconds / rounds * 1000:.3f} ms per plot update (10 curves), no abort")
    for n, rss, objects in marks:
        print(f"  after {n:>7,} updates: RSS {rss:7.1f} MiB, {objects:,} Python objects")
    print(f"  markers alive at the end: {plots.marker_count()} (older ones removed as they scroll off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
