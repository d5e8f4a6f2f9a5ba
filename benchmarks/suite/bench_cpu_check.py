"""Check bench's process CPU % against an outside reading.

Starts `delegate-scope bench` as a child and samples the child's /proc/PID/stat (utime + stime)
every 20 ms from this process. It compares the process CPU % bench prints ("process N% of the
machine", `metrics.process_cpu_pct_machine` in its JSON) with the outside reading over the span
bench measured (`measured_cpu` in the JSON gives its wall-clock start and end). It also shows
the outside reading over the last 0.5 s before the end (the range over every 0.5 s window ending
in the last 0.55 s): until 2026-12-03 bench printed the ResourceSampler's newest 0.5 s reading
instead of the whole span's, and this column is what that figure could be compared with.

Percent of the whole machine (100 = every core busy). Linux only.

    python benchmarks/bench_cpu_check.py [--seconds 20] [--threads 1] [--source demo]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15 of stat)


def at(samples: list[tuple[float, float]], t: float) -> float:
    """CPU seconds at time t, interpolated between the nearest (time, cpu) samples."""
    for (t0, c0), (t1, c1) in itertools.pairwise(samples):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c0
    raise ValueError("time outside the sampled span")


def pct(samples: list[tuple[float, float]], t0: float, t1: float) -> float:
    return (at(samples, t1) - at(samples, t0)) / (t1 - t0) * 100 / os.cpu_count()


def run(seconds: float, threads: int, source: str, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.json"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app",
                "bench",
                "--seconds",
                str(seconds),
                "--threads",
                str(threads),
                "--source",
                source,
                "--json",
                str(out),
                *extra,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        samples: list[tuple[float, float]] = []  # (wall clock, CPU seconds of the child)
        while proc.poll() is None:
            cpu = proc_cpu_s(proc.pid)
            if cpu is not None:
                samples.append((time.time(), cpu))
            time.sleep(0.02)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", default="demo")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; bench --seconds {args.seconds} --threads {args.threads} --source {args.source}")
    print(
        "| run | measured span s | bench process CPU % (printed) | outside, same span | difference (points) | "
        "outside, last 0.5 s windows |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for label, extra in (("paced", []), ("--no-pace", ["--no-pace"]), ("throttle 100 ms", ["--throttle-ms", "100"])):
        r = run(args.seconds, args.threads, args.source, extra)
        print(
            f"| {label} | {r['span']:.2f} | {r['printed']:.1f} | {r['outside_span']:.1f} | "
            f"{r['printed'] - r['outside_span']:+.1f} | {r['outside_last_lo']:.1f} to {r['outside_last_hi']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
