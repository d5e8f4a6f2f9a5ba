"""Structure-aware fuzzing of the readers of user files (tests/harness/reader_fuzz.py), thousands of cases
each, every reader in its own child process (benchmarks/fuzz/readers_child.py) so a hang shows as a
timeout rather than a stuck run.

    python -m benchmarks.fuzz.readers [--cases 2000] [--seed 1] [--timeout 1800] [--readers mlpackage ...]

Prints a markdown table (reader, cases, ok, refused, exception, slowest case, wall time) for
docs/reliability.md, and the first failures of any reader that broke the contract.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness.children import app_command, module_command
from benchmarks.harness.paths import ROOT
from tests.harness.reader_fuzz import READERS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800, help="per reader, seconds")
    parser.add_argument("--readers", nargs="+", choices=READERS, default=list(READERS))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "seed.csv"
        subprocess.run(app_command("bench", "--source", "synthetic", "--frames", "60", "--warmup", "2",
                                   "--csv", str(base)), cwd=ROOT, check=True, capture_output=True)  # fmt: skip
        print("| reader | cases | ok | ok, with a warning | refused | exception | hang | slowest case | wall |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        broken: list[tuple[str, list[str]]] = []
        stages: dict[str, dict[str, int]] = {}
        for reader in args.readers:
            started = time.perf_counter()
            try:
                child = module_command(
                    "benchmarks.fuzz.readers_child", reader, str(args.seed), str(args.cases), str(base)
                )
                proc = subprocess.run(child, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
                result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
                hang = 0
            except subprocess.TimeoutExpired:
                result, hang = {"outcomes": {}, "failures": ["timed out"], "slowest_s": float("nan")}, 1
            wall = time.perf_counter() - started
            o = result["outcomes"]
            print(f"| {reader} | {args.cases} | {o.get('ok', 0)} | {o.get('warned', 0)} | {o.get('refused', 0)} | "
                  f"{o.get('exception', 0)} | "
                  f"{hang} | {result['slowest_s']:.2f} s | {wall:.0f} s |", flush=True)  # fmt: skip
            if result.get("stages"):
                stages[reader] = result["stages"]
            if result["failures"]:
                broken.append((reader, result["failures"]))
        for reader, counts in stages.items():
            print(f"\n{reader}, refused by: " + "; ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        for reader, failures in broken:
            print(f"\n{reader}:\n  " + "\n  ".join(failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
