"""Check bench's process CPU % against an outside reading.

Starts `delegate-scope bench` as a child, samples the child's /proc/PID/stat (utime + stime)
every 50 ms from this process, and compares the CPU % over the span bench says it measured
(`measured_cpu` in its JSON: wall-clock start and end) with bench's own figure. Linux only.

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


def at(samples: list[tuple[float, float]], wall: float) -> float:
    """CPU seconds at a wall time, interpolated between the nearest samples."""
    for (t0, c0), (t1, c1) in itertools.pairwise(samples):
        if t0 <= wall <= t1:
            return c0 + (c1 - c0) * (wall - t0) / (t1 - t0) if t1 > t0 else c0
    raise ValueError("wall time outside the sampled span")


def run(seconds: float, threads: int, source: str, extra: list[str]) -> tuple[float, float]:
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
        samples: list[tuple[float, float]] = []
        while proc.poll() is None:
            cpu = proc_cpu_s(proc.pid)
            if cpu is not None:
                samples.append((time.time(), cpu))
            time.sleep(0.05)
        measured = json.loads(out.read_text())["measured_cpu"]
    inside = measured["process_cpu_pct_machine"]
    span = measured["to_wall"] - measured["from_wall"]
    outside = (at(samples, measured["to_wall"]) - at(samples, measured["from_wall"])) / span * 100 / os.cpu_count()
    return inside, outside


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", default="demo")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; bench --seconds {args.seconds} --threads {args.threads} --source {args.source}")
    print("| run | bench process CPU % (machine) | /proc/PID/stat from outside | difference (points) |")
    print("| --- | --- | --- | --- |")
    for label, extra in (("paced", []), ("--no-pace", ["--no-pace"]), ("throttle 100 ms", ["--throttle-ms", "100"])):
        inside, outside = run(args.seconds, args.threads, args.source, extra)
        print(f"| {label} | {inside:.1f} | {outside:.1f} | {inside - outside:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
