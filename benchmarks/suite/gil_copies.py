"""Does `copy_holding_gil` stop every other Python thread for the whole copy, where np.copyto lets one run?

The GPU session copies its buffers with `copy_holding_gil` (app/backends/litert_c.py): a copy that gave
the GIL up let another pipeline thread take it, and the inference thread then waited for it back before
the run (docs/pipeline.md, "The GPU path"). This times it: a thread spins
flat out, noting each gap of over 0.5 ms in which it did not run; for each of `--copies` back-to-back
copies of `--mb` MB (switch interval 0.5 ms), the longest such gap within the copy, as a share of the
copy's own length. Holding the GIL, each copy stalls the spinner for all of it (about 1.0; a thread the
OS stalls only makes a gap longer); giving it up, the spinner runs during a copy whenever it has a core
(well under 1.0 on an idle core, up to 1.0 on a busy machine: the figure follows the load). Prints both,
with each way's copy time.

The test (tests/test_gil_copies.py) checks the same property without a clock: a thread let go just
before the copies runs during np.copyto's and never during copy_holding_gil's.

    python -m benchmarks.suite.gil_copies [--mb 256] [--copies 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from app.backends.litert_c import copy_holding_gil
from benchmarks.harness.children import write_json

GAP_S = 0.0005


def stall_shares(
    copy: Callable[[np.ndarray, np.ndarray], None], src: np.ndarray, dst: np.ndarray, copies: int
) -> tuple[list[float], list[float]]:
    """Per copy: the longest stretch of it in which a spinning Python thread did not run, as a share of
    the copy's length; and each copy's length in ms."""
    gaps: list[tuple[float, float]] = []
    spans: list[tuple[float, float]] = []
    stop = threading.Event()

    def spin() -> None:
        last = time.perf_counter()
        while True:  # the gap is recorded before stop is read: the last copy's stall ends at stop
            now = time.perf_counter()
            if now - last > GAP_S:
                gaps.append((last, now))
            last = now
            if stop.is_set():
                break

    spinner = threading.Thread(target=spin)
    spinner.start()
    time.sleep(0.05)
    for _ in range(copies):
        started = time.perf_counter()
        copy(dst, src)
        spans.append((started, time.perf_counter()))
    stop.set()
    spinner.join()
    shares = [max([0.0, *(min(e, t1) - max(s, t0) for s, e in gaps)]) / (t1 - t0) for t0, t1 in spans]
    return shares, [(t1 - t0) * 1e3 for t0, t1 in spans]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256, help="size of each copy (longer than an OS time slice)")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    src = np.ones(args.mb * 1024 * 1024, np.uint8)
    dst = np.empty_like(src)
    copy_holding_gil(dst, src)  # the pages touched once before anything is timed
    old = sys.getswitchinterval()
    sys.setswitchinterval(GAP_S)
    try:
        ways = {
            "np.copyto": stall_shares(lambda d, s: np.copyto(d, s), src, dst, args.copies),
            "copy_holding_gil": stall_shares(copy_holding_gil, src, dst, args.copies),
        }
    finally:
        sys.setswitchinterval(old)
    print(f"{args.copies} copies of {args.mb} MB each way, a Python thread spinning beside (switch interval 0.5 ms)")
    print("way                 spinner's stall / copy: min   median   max    copy ms median")
    for name, (shares, ms) in ways.items():
        print(
            f"{name:<20}{min(shares):>27.2f}{statistics.median(shares):>9.2f}{max(shares):>6.2f}"
            f"{statistics.median(ms):>18.1f}"
        )
    write_json(args.json, {name: {"stall_share": s, "copy_ms": ms} for name, (s, ms) in ways.items()} | vars(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
