"""What the window's Ops view costs the live session: the session's inference time with the background
profiler (app.profile.background.LiveProfiler: 5 runs every 3 s at nice +10) off and on, in alternating windows.

The live side is the app's CPU session (LiteRT Interpreter + XNNPACK) run back to back on this thread,
as the inference thread does on an unthrottled source. Each window is `--window` seconds; windows
alternate off/on `--rounds` times so the machine's load hits both alike. An "on" window starts once the
profiler's first profile is in (its one-off compile and warm-up are not what it costs while it runs).
Reports the median of the windows' mean inference time and rate, and their ratio.

    python -m benchmarks.suite.profile_live_cost [--model efficientnet_lite0] [--threads 1] [--window 6] [--rounds 4]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from app.backends import open_session
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
from app.profile.background import INTERVAL_S, RUNS, LiveProfiler, Target
from app.profile.cpu import sample_input
from benchmarks.harness.children import write_json
from benchmarks.harness.rounds import alternate


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="efficientnet_lite0")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--window", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--json", type=Path, help="write every window's figures here")
    args = ap.parse_args(argv)
    spec = load_model_spec(args.model)
    options = BackendOptions(threads=args.threads)
    session = open_session(spec, "cpu", options)
    tensor = sample_input(spec)
    profiler = LiveProfiler(lambda: {"a": Target(args.model, "cpu", options)})

    def window(on: bool) -> tuple[float, float]:
        """(mean inference ms, inferences per second) over one window, the profiler on or off."""
        if on:
            profiler.start()
            seen = profiler.latest().get("a")
            while profiler.latest().get("a") is seen:  # steady state: its compile and warm-up are not measured
                time.sleep(0.05)
        times = []
        end = time.perf_counter() + args.window
        while time.perf_counter() < end:
            started = time.perf_counter()
            session.run(tensor)
            times.append((time.perf_counter() - started) * 1000)
        if on:
            profiler.stop()
        return statistics.mean(times), len(times) / args.window

    windows = alternate({"off": lambda: window(False), "on": lambda: window(True)}, args.rounds, rotate=False)
    results = {False: windows["off"], True: windows["on"]}
    session.close()
    off_ms = statistics.median(r[0] for r in results[False])
    on_ms = statistics.median(r[0] for r in results[True])
    off_rate = statistics.median(r[1] for r in results[False])
    on_rate = statistics.median(r[1] for r in results[True])
    print(f"{spec.display_name}, {args.threads} thread(s); profiler {RUNS} runs every {INTERVAL_S:.0f} s at nice +10")
    means = {on: [round(r[0], 2) for r in results[on]] for on in (False, True)}
    print(f"  windows off: {means[False]} ms; on: {means[True]} ms")
    print(
        f"  live inference, medians of {args.rounds} x {args.window:.0f} s: off {off_ms:.2f} ms ({off_rate:.1f}/s), "
        f"on {on_ms:.2f} ms ({on_rate:.1f}/s); on/off time {on_ms / off_ms:.3f}, rate {on_rate / off_rate:.3f}"
    )
    write_json(args.json, windows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
