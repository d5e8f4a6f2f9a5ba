"""Check the app's process CPU % (ResourceSampler) against a reading taken from outside (Linux).

    python -m benchmarks.suite.cpu_reading [--interval 0.5] [--pattern 1x3,2x3,0x2] [--json FILE]

A child Python process runs a known load (the pattern: busy threads x seconds; each busy thread
hashes a 1 MiB buffer, which releases the GIL, so n threads can really use n cores) while its own
ResourceSampler reads it and it prints each reading. Meanwhile this process reads the child's
utime + stime from /proc/<pid>/stat (clock ticks, SC_CLK_TCK per second) every 10 ms
(benchmarks/harness/procfs.py). For each of the child's readings, the outside figure is taken over
exactly the same interval (both processes use CLOCK_MONOTONIC, CPU time interpolated linearly
between polls). The child is this module run again with --child. Prints both side by side,
the load the pattern asked for, and the largest difference in percentage points.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.metrics.resources import ResourceSampler
from benchmarks.harness.children import module_command, write_json
from benchmarks.harness.procfs import TICK, cpu_between, poll_cpu

POLL_S = 0.01


@dataclass(frozen=True)
class Phase:
    threads: int
    seconds: float


def parse_pattern(text: str) -> list[Phase]:
    phases = []
    for part in text.split(","):
        threads, seconds = part.lower().split("x")
        phases.append(Phase(int(threads), float(seconds)))
    return phases


# ---- child: the load and the app's own reading -------------------------------------------------


def burn(stop: threading.Event) -> None:
    data = bytes(1 << 20)
    while not stop.is_set():
        hashlib.sha256(data).digest()


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def run_phases(phases: list[Phase], done: threading.Event) -> None:
    for i, phase in enumerate(phases):
        stop = threading.Event()
        workers = [threading.Thread(target=burn, args=(stop,)) for _ in range(phase.threads)]
        emit(kind="phase", index=i, threads=phase.threads, t=time.monotonic())
        for w in workers:
            w.start()
        time.sleep(phase.seconds)
        stop.set()
        for w in workers:
            w.join()
    emit(kind="phase", index=len(phases), threads=0, t=time.monotonic())  # the end marker
    done.set()


def child(phases: list[Phase], interval_s: float) -> int:
    with ResourceSampler(interval_s=interval_s, gpu=False) as sampler:
        done = threading.Event()
        threading.Thread(target=run_phases, args=(phases, done), daemon=True).start()
        last, finished_at = None, None
        while finished_at is None or time.monotonic() < finished_at + interval_s * 1.5:
            r = sampler.latest()
            if r.span_s is not None and r.sampled_at != last:
                last = r.sampled_at
                emit(kind="reading", **r.to_dict())
            if finished_at is None and done.is_set():
                finished_at = time.monotonic()
            time.sleep(POLL_S)
    return 0


# ---- parent: the outside reading ----------------------------------------------------------------


def outside_pct(samples: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    cpu = cpu_between(samples, t0, t1)
    return None if cpu is None else 100.0 * cpu / (t1 - t0)


def phase_at(phase_marks: list[dict[str, Any]], t0: float, t1: float) -> tuple[int | None, bool]:
    """The phase an interval lies in, and whether it straddles a phase change."""
    starts = [m["t"] for m in phase_marks]
    i0 = int(np.searchsorted(starts, t0, side="right")) - 1
    i1 = int(np.searchsorted(starts, t1, side="right")) - 1
    index = i0 if 0 <= i0 < len(phase_marks) - 1 else None
    return index, i0 != i1


def parent(args: argparse.Namespace) -> int:
    if not Path("/proc/self/stat").is_file():
        print("cpu_reading: needs Linux /proc", file=sys.stderr)
        return 2
    hz, ncpu = TICK, os.cpu_count() or 1
    phases = parse_pattern(args.pattern)
    cmd = module_command(__spec__.name, "--child", "--interval", str(args.interval), "--pattern", args.pattern)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    stdout = proc.stdout
    assert stdout is not None  # stdout=PIPE
    reader = threading.Thread(target=lambda: lines.extend(stdout), daemon=True)
    reader.start()
    samples = poll_cpu(proc, POLL_S)
    reader.join(timeout=5)
    if proc.returncode != 0:
        print(f"cpu_reading: child exited with {proc.returncode}", file=sys.stderr)
        return 1
    records = [json.loads(line) for line in lines]
    marks = [r for r in records if r["kind"] == "phase"]
    readings = [r for r in records if r["kind"] == "reading"]
    print_header(hz, ncpu, args, phases, len(samples))
    diffs = print_intervals(readings, marks, phases, samples)
    print_phases(readings, marks, phases, samples)
    print(
        f"\nmax |sampler - /proc/stat| over {len(diffs)} intervals: {max(diffs):.2f} pp of one core "
        f"({max(diffs) / ncpu:.2f} pp of the machine); mean {np.mean(diffs):.2f} pp"
    )
    write_json(args.json, {"readings": readings, "phases": marks, "max_diff_pp": max(diffs)})
    return 0


def print_header(hz: int, ncpu: int, args: argparse.Namespace, phases: list[Phase], polls: int) -> None:
    pattern = ", ".join(f"{p.threads} busy thread{'s' * (p.threads != 1)} {p.seconds:g} s" for p in phases)
    print(f"load: {pattern}; sampler interval {args.interval} s; {ncpu} logical CPUs; SC_CLK_TCK {hz}")
    print(f"outside reading: {polls} polls of /proc/<child>/stat, every {POLL_S * 1e3:.0f} ms\n")
    print("percentages are of one core (100 = one core busy); machine % = that / logical CPUs")
    print(f"{'t (s)':>6} {'span':>6}  {'phase':<9}{'asked':>7}{'sampler':>9}{'/proc':>9}{'diff':>7}  {'machine':>7}")


def print_intervals(
    readings: list[dict[str, Any]],
    marks: list[dict[str, Any]],
    phases: list[Phase],
    samples: list[tuple[float, float]],
) -> list[float]:
    t_zero, diffs = marks[0]["t"], []
    for r in readings:
        t1 = r["sampled_at"]
        t0 = t1 - r["span_s"]
        outside = outside_pct(samples, t0, t1)
        if outside is None:
            continue
        index, straddles = phase_at(marks, t0, t1)
        asked = f"{phases[index].threads * 100:.0f}" if index is not None and not straddles else "-"
        label = "change" if straddles else ("after" if index is None else f"{index}: {phases[index].threads}T")
        diff = r["process_cpu_pct_cores"] - outside
        diffs.append(abs(diff))
        print(
            f"{t1 - t_zero:6.2f} {r['span_s']:6.3f}  {label:<9}{asked:>7}{r['process_cpu_pct_cores']:9.1f}"
            f"{outside:9.1f}{diff:+7.2f}  {r['process_cpu_pct_machine']:7.1f}"
        )
    return diffs


def print_phases(
    readings: list[dict[str, Any]], marks: list[dict[str, Any]], phases: list[Phase], samples: list[tuple[float, float]]
) -> None:
    """Per phase: /proc/stat over the whole phase, and the mean of the sampler readings inside it."""
    print(f"\n{'phase':<22}{'asked':>7}{'sampler mean':>14}{'/proc whole phase':>19}")
    for i, phase in enumerate(phases):
        start, end = marks[i]["t"], marks[i + 1]["t"]
        inside = [
            r["process_cpu_pct_cores"]
            for r in readings
            if r["sampled_at"] - r["span_s"] >= start and r["sampled_at"] <= end
        ]
        whole = outside_pct(samples, start, end)
        mean = f"{np.mean(inside):.1f} ({len(inside)})" if inside else "-"
        whole_text = f"{whole:.1f}" if whole is not None else "-"
        label = f"{i}: {phase.threads} threads {phase.seconds:g} s"
        print(f"{label:<22}{phase.threads * 100:>7}{mean:>14}{whole_text:>19}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--interval", type=float, default=0.5, help="ResourceSampler interval (s)")
    ap.add_argument("--pattern", default="1x3,2x3,0x2", help="busy threads x seconds, comma-separated")
    ap.add_argument("--json", type=Path, help="write the readings here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(parse_pattern(args.pattern), args.interval)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
