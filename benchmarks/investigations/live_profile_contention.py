"""The Ops view's profiles on a busy machine: do its op times stay near the model's, or grow with the load?

The window's background profiler (app/profile/background.py) runs at nice +10; LiteRT's profiler events
are wall time. This takes a quiet profile of the model (`profile`'s way: means of `--runs` runs), then
starts `--spinners` busy processes and lets the live profiler take `--profiles` profiles, printing for
each the least-disturbed op sum (what the Ops view now shows), the mean op sum over its runs (what it
showed before), the Invoke span and the share of their wall time the runs had the CPU.

    python -m benchmarks.investigations.live_profile_contention [--model efficientnet_lite0_int8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
from app.profile.background import LiveProfiler, Target
from app.profile.cpu import profile_cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--runs", type=int, default=20, help="runs of the quiet profile")
    parser.add_argument("--spinners", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--profiles", type=int, default=5)
    args = parser.parse_args(argv)
    spec = load_model_spec(args.model)
    quiet = profile_cpu(spec, 1, args.runs)
    print(f"quiet: ops {quiet.ops_ms:.2f} ms (means of {quiet.runs} runs), Invoke {quiet.invoke_ms or 0:.2f} ms, "
          f"CPU share {quiet.cpu_share if quiet.cpu_share is not None else float('nan'):.2f}")  # fmt: skip
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.spinners)]
    profiler = LiveProfiler(lambda: {"a": Target(args.model, "cpu", BackendOptions(threads=1))}, interval_s=0.5)
    started = time.monotonic()
    try:
        profiler.start()
        seen: set[int] = set()
        print(f"{args.spinners} busy processes; the live profiler (nice +10):")
        print("   s   ops least-disturbed   ops mean of runs   Invoke (least)   CPU share")
        while len(seen) < args.profiles and time.monotonic() - started < 600:
            live = profiler.latest().get("a")
            if live is not None and live.profile is not None and live.seq not in seen:
                seen.add(live.seq)
                p = live.profile
                means = sum(sum(run) for run in p.per_run_ms) / max(1, len(p.per_run_ms))
                share = p.cpu_share if p.cpu_share is not None else float("nan")
                print(f"{time.monotonic() - started:4.0f}   {p.ops_ms:17.2f}   {means:16.2f}   "
                      f"{p.invoke_ms or 0:14.2f}   {share:9.2f}")  # fmt: skip
            time.sleep(0.1)
    finally:
        profiler.stop()
        for s in spinners:
            s.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
