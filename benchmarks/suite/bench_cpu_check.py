"""Check bench's process CPU % against an outside reading.

Starts `delegate-scope bench` as a child and samples the child's /proc/PID/stat (utime + stime)
every 20 ms from this process. It compares the process CPU % bench prints ("process N% of the
machine", `metrics.process_cpu_pct_machine` in its JSON) with the outside reading over the span
bench measured (`measured_cpu` in the JSON gives its wall-clock start and end). It also shows
the outside reading over the last 0.5 s before the end (the range over every 0.5 s window ending
in the last 0.55 s): until 2026-12-03 bench printed the ResourceSampler's newest 0.5 s reading
instead of the whole span's, and this column is what that figure could be compared with.

Percent of the whole machine (100 = every core busy). Linux only.

    python -m benchmarks.suite.bench_cpu_check [--seconds 20] [--threads 1] [--source demo] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness.children import app_command, write_json
from benchmarks.harness.paths import ROOT
from benchmarks.harness.procfs import cpu_between, poll_cpu


def pct(samples: list[tuple[float, float]], t0: float, t1: float) -> float:
    cpu = cpu_between(samples, t0, t1)
    if cpu is None:
        raise ValueError("time outside the sampled span")
    return cpu / (t1 - t0) * 100 / (os.cpu_count() or 1)


def run(seconds: float, threads: int, source: str, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.json"
        args = ["--seconds", str(seconds), "--threads", str(threads), "--source", source, "--json", str(out)]
        proc = subprocess.Popen(
            app_command("bench", *args, *extra), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        samples = poll_cpu(proc, 0.02, clock=time.time)  # (wall clock, CPU seconds of the child)
        summary = json.loads(out.read_text())
    measured = summary["measured_cpu"]
    start, end = measured["from_wall"], measured["to_wall"]
    last = [pct(samples, e - 0.5, e) for e in (end - 0.55 + i * 0.01 for i in range(56))]
    return {
        "span": measured["seconds"],
        "printed": summary["metrics"]["process_cpu_pct_machine"],
        "outside_span": pct(samples, start, end),
        "outside_last_lo": min(last),
        "outside_last_hi": max(last),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", default="demo")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    results = {}
    print(f"{os.cpu_count()} cores; bench --seconds {args.seconds} --threads {args.threads} --source {args.source}")
    print(
        "| run | measured span s | bench process CPU % (printed) | outside, same span | difference (points) | "
        "outside, last 0.5 s windows |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for label, extra in (("paced", []), ("--no-pace", ["--no-pace"]), ("throttle 100 ms", ["--throttle-ms", "100"])):
        r = results[label] = run(args.seconds, args.threads, args.source, extra)
        print(
            f"| {label} | {r['span']:.2f} | {r['printed']:.1f} | {r['outside_span']:.1f} | "
            f"{r['printed'] - r['outside_span']:+.1f} | {r['outside_last_lo']:.1f} to {r['outside_last_hi']:.1f} |"
        )
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
