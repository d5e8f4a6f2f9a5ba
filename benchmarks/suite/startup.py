"""Start-up: from the command to the first result, for `bench` and `classify`, measured from outside.

Runs, interleaved `--runs` times:

- `delegate-scope bench --frames 20 --warmup 0 --csv ... --json ...` (demo clip, default model):
  this process notes the wall clock just before starting the command; the first inference row
  of the recording carries the wall clock of the first result. Their difference is the outside
  figure; bench's own `first_result_s` (process creation to first result) is shown beside it.
- `delegate-scope classify tests/data/photos/grace_hopper.jpg`: command start to exit (its only
  result is printed just before it exits).

Then once each with `python -X importtime` to list every module the command imports, and says
whether TensorFlow is among them. Medians over the runs (this machine is shared and noisy).

    python -m benchmarks.suite.startup [--runs 7] [--model efficientnet_lite0] [--json FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchmarks.harness.children import write_json
from benchmarks.harness.paths import GRACE_HOPPER as PHOTO
from benchmarks.harness.paths import ROOT
from benchmarks.harness.rounds import alternate


def command() -> list[str]:
    """The installed `delegate-scope` script beside this interpreter, else `python -m app`."""
    script = Path(sys.executable).with_name("delegate-scope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app"]


def bench_once(model: str) -> tuple[float, float, float]:
    """(outside command-to-first-result s, bench's own first_result_s, command wall s)."""
    with tempfile.TemporaryDirectory() as tmp:
        rec, summary = Path(tmp) / "s.csv", Path(tmp) / "summary.json"
        args = [*command(), "bench", "--model", model, "--frames", "20", "--warmup", "0"]
        args += ["--csv", str(rec), "--json", str(summary)]
        started = time.time()
        subprocess.run(args, cwd=ROOT, check=True, capture_output=True)
        wall = time.time() - started
        with rec.open(newline="", encoding="utf-8") as f:
            first = next(row for row in csv.DictReader(f) if row["event"] == "")
        outside = datetime.fromisoformat(first["timestamp"]).timestamp() - started
        return outside, json.loads(summary.read_text())["first_result_s"], wall


def classify_once(model: str) -> float:
    started = time.perf_counter()
    subprocess.run([*command(), "classify", "--model", model, str(PHOTO)], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def imports_tensorflow(args: list[str]) -> tuple[bool, int]:
    """(TensorFlow imported?, modules imported) for one run of the command under -X importtime."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [a.replace("{tmp}", tmp) for a in args]
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "app", *args],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
    modules = [line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")]
    modules = [m for m in modules if m != "imported package"]
    return any(m.split(".")[0].strip() in ("tensorflow", "tf_keras", "keras") for m in modules), len(modules)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", default="efficientnet_lite0")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(f"{os.cpu_count()} cores; command {' '.join(Path(c).name for c in command())}; {args.runs} runs interleaved")
    runs = alternate(
        {"bench": lambda: bench_once(args.model), "classify": lambda: classify_once(args.model)},
        args.runs,
        rotate=False,
    )
    bench, classify = runs["bench"], runs["classify"]
    outside, inside, wall = (sorted(column) for column in zip(*bench, strict=True))
    print(f"load average before: {load[0]:.2f}, after: {os.getloadavg()[0]:.2f}")
    print("| figure | median s | min s | max s |")
    print("| --- | --- | --- | --- |")
    rows = [
        ("bench: command start to first result (outside: wall clock, recording's first row)", outside),
        ("bench: `first_result_s` (process creation to first result, its own clock)", inside),
        ("bench --frames 20 --warmup 0: command start to exit", wall),
        ("classify grace_hopper.jpg: command start to exit", sorted(classify)),
    ]
    for label, values in rows:
        print(f"| {label} | {statistics.median(values):.3f} | {values[0]:.3f} | {values[-1]:.3f} |")
    imports = {}
    for label, cmd in (
        ("bench", ["bench", "--model", args.model, "--frames", "5", "--warmup", "0", "--json", "{tmp}/s.json"]),
        ("classify", ["classify", "--model", args.model, str(PHOTO)]),
    ):
        tf, count = imports_tensorflow(cmd)
        imports[label] = {"modules": count, "tensorflow": tf}
        print(f"{label}: {count} modules imported, TensorFlow {'IMPORTED' if tf else 'not imported'}")
    if shutil.which("hyperfine") is None:
        print("(hyperfine not installed; the timing loop above is this script's own)")
    write_json(args.json, {"runs_s": {label: values for label, values in rows}, "imports": imports})
    return 0


if __name__ == "__main__":
    sys.exit(main())
