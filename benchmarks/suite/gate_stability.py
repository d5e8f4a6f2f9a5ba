"""Does the same configuration, run twice, pass bench's default budget?

Each try records a baseline (`bench --json`), then runs the same command again with `--baseline`
and no `--budget` (the defaults: inference.p50<=+10%, rate>=-10%, docs/gates.md) and reads its exit
code: 0 passes (a figure over its budget but inside the baseline's spread says "within noise"),
7 fails. Prints one line per try (each figure's baseline, run and verdict) and the count; `--json`
writes every try's gate section. Also prints the machine's load average, since the figures swing with it.

    python -m benchmarks.suite.gate_stability [--tries 10] [--frames 200] [--threads N] [--source S] [--no-pace]
        [--then-threads M] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness.children import app_command, write_json
from benchmarks.harness.paths import ROOT


def one_try(tmp: Path, index: int, bench_args: list[str], run_args: tuple[str, ...] = ()) -> dict[str, Any]:
    base, run = tmp / f"base-{index}.json", tmp / f"run-{index}.json"
    first = subprocess.run(
        app_command("bench", *bench_args, "--json", str(base)), cwd=ROOT, capture_output=True, text=True
    )
    if first.returncode != 0:
        raise SystemExit(f"the baseline run failed ({first.returncode}): {first.stderr.strip()}")
    second = subprocess.run(
        app_command("bench", *bench_args, *run_args, "--baseline", str(base), "--json", str(run)),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if second.returncode not in (0, 7):
        raise SystemExit(f"the gated run failed ({second.returncode}): {second.stderr.strip()}")
    summary = json.loads(run.read_text())
    rounds = {
        name: json.loads(path.read_text())["rounds"]["figures"] for name, path in (("baseline", base), ("run", run))
    }
    return {
        "try": index + 1,
        "exit_code": second.returncode,
        "load_1min": os.getloadavg()[0],
        "gates": summary["gates"],
        # Each round's figure on both sides, so that another noise rule can be tried on the same runs.
        "rounds": {
            side: {k: figures[k]["values"] for k in ("inference.p50", "rate", "waited_per_inference") if k in figures}
            for side, figures in rounds.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--threads", type=int, help="bench --threads (default: bench's)")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--no-pace", action="store_true", help="bench --no-pace (a file or synthetic source, unpaced)")
    parser.add_argument(
        "--then-threads", type=int, help="the gated run at this many threads (a regression the gate must catch)"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    bench_args = ["--frames", str(args.frames), "--source", args.source]
    if args.threads:
        bench_args += ["--threads", str(args.threads)]
    if args.no_pace:
        bench_args.append("--no-pace")
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.tries):
            r = one_try(Path(folder), i, bench_args, ("--threads", str(args.then_threads)) if args.then_threads else ())
            results.append(r)
            cells = []
            for row in r["gates"]["rows"]:
                if row["verdict"]:
                    cells.append(
                        f"{row['figure']} {row['baseline']['value']:.2f} -> {row['run']['value']:.2f} "
                        f"({row['delta_pct']:+.1f}%) {row['verdict']}"
                    )
            print(
                f"try {r['try']:>2}: exit {r['exit_code']}  load {r['load_1min']:.2f}  " + "; ".join(cells), flush=True
            )
    passed = sum(r["exit_code"] == 0 for r in results)
    soft = {
        verdict: sum(any(row["verdict"] == verdict for row in r["gates"]["rows"]) for r in results)
        for verdict in ("within noise", "within contention")
    }
    then = f"; gated run at --threads {args.then_threads}" if args.then_threads else ""
    print(
        f"passed {passed} of {len(results)} tries ({soft['within noise']} with a figure within noise, "
        f"{soft['within contention']} within contention); bench {' '.join(bench_args)}{then}"
    )
    write_json(args.json, {"bench_args": bench_args, "passed": passed, "tries": results})


if __name__ == "__main__":
    main()
