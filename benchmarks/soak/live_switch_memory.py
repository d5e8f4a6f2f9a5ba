"""RSS across live switches, headless: which switches hold on to memory, and whether it stays.

A LiveController (the window's engine, recording on) on a 1280x720 synthetic source; every
`--every` seconds the next change of a cycle (threads, model, delegate with fallbacks, A/B
on and off, source), printing RSS, threads and fds after each. `--only` keeps some of the
cycle's steps; `--no-trim` turns off the heap trim after switches (app/system/heap.py), `--pin`
pins glibc's mmap threshold instead (the first fix tried; it costs throughput).

    python -m benchmarks.soak.live_switch_memory --switches 30
    python -m benchmarks.soak.live_switch_memory --switches 24 --only abon aboff
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from app.live.controller import LiveController
from app.pipeline import InferenceConfig
from app.system import heap
from benchmarks.harness.procfs import process_counts

FAST = "synthetic:1280x720@100"


def no_trim() -> None:
    """Every loaded module of the app that calls heap.release_free_memory calls a no-op instead (each
    imported the function by name: app.live.controller, app.pipeline.worker, ...)."""
    trim = heap.release_free_memory
    for name, module in list(sys.modules.items()):
        if name.startswith("app.") and getattr(module, "release_free_memory", None) is trim:
            module.release_free_memory = lambda: False  # type: ignore[attr-defined]  # the soak's own switch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=30)
    parser.add_argument("--every", type=float, default=2.0, help="seconds between switches")
    parser.add_argument("--only", nargs="*", help="names of the cycle's steps to keep")
    parser.add_argument("--no-trim", action="store_true", help="no heap trim after a switch")
    parser.add_argument("--pin", action="store_true", help="pin glibc's mmap threshold at 128 KiB")
    args = parser.parse_args(argv)
    if args.no_trim:
        no_trim()
    pinned = bool(args.pin and ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024))  # M_MMAP_THRESHOLD
    s = LiveController(FAST, InferenceConfig(model="efficientnet_lite0", options={"threads": 1}))
    s.start()
    with tempfile.TemporaryDirectory() as tmp:
        s.start_recording(Path(tmp) / "r.csv")
        cycle = [
            ("threads2", lambda: s.reconfigure(options={"threads": 2})),
            ("int8", lambda: s.reconfigure(model="efficientnet_lite0_int8")),
            ("coreml", lambda: s.reconfigure(delegate="coreml")),
            ("gpu", lambda: s.reconfigure(delegate="gpu")),
            ("cpu", lambda: s.reconfigure(delegate="cpu")),
            ("abon", lambda: s.set_compare(replace(s.config(), model="efficientnet_lite0", delegate="cpu"))),
            ("aboff", lambda: s.set_compare(None)),
            ("demo", lambda: s.switch_source("demo")),
            ("synth", lambda: s.switch_source(FAST)),
            ("fp32", lambda: s.reconfigure(model="efficientnet_lite0", options={"threads": 1})),
        ]
        if args.only:
            cycle = [step for step in cycle if step[0] in args.only]
        print(f"heap trim after switches: {not args.no_trim}; mmap threshold pinned: {pinned}")
        rss = []
        for i in range(args.switches):
            name, step = cycle[i % len(cycle)]
            step()
            time.sleep(args.every)
            now = process_counts()
            rss.append(now.rss_mib)
            print(f"{i + 1:3d} {name:9s} RSS {now.rss_mib:6.1f} MiB  threads {now.os_threads}  fds {now.fds}")
        status = s.stop_recording()
    s.stop()
    print(f"RSS after switch 1: {rss[0]:.1f} MiB, after the last: {rss[-1]:.1f}, max {max(rss):.1f}; "
          f"recording {status.rows if status else 0} rows, {status.lost_rows if status else 0} lost")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
