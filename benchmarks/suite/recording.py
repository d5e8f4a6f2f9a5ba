"""Recording cost and stability.

1. Overhead: bench with and without `--csv`, alternating, same source/model/threads/duration;
   the median ratio of inference throughput (target: recording costs <= 1%).
2. Long run: one recording of `--long-seconds` at full inference speed (`--no-pace` demo
   clip); RSS per 5-minute block from the recording itself, lost rows, rows written.

    python -m benchmarks.suite.recording [--seconds 30] [--repeats 4] [--long-seconds 3600] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.recording.writer import read_recording
from benchmarks.harness.children import bench_summary, write_json
from benchmarks.harness.rounds import alternate
from benchmarks.harness.stats import median_ratio


def bench(args: list[str]) -> dict[str, Any]:
    return bench_summary(args)


def recorded_fps(run: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        fps: float = bench([*run, "--csv", str(Path(tmp, "r.csv"))])["metrics"]["inference_fps"]
        return fps


def overhead(seconds: float, repeats: int, common: list[str]) -> dict[str, list[float]]:
    run = [*common, "--seconds", str(seconds)]

    def report(i: int, pair: dict[str, float]) -> None:
        a, b = pair["without"], pair["with"]
        print(f"pair {i + 1}: {a:.1f}/s without, {b:.1f}/s recording ({b / a:.4f})", flush=True)

    pairs = alternate(
        {"without": lambda: bench(run)["metrics"]["inference_fps"], "with": lambda: recorded_fps(run)},
        repeats,
        rotate=False,
        report=report,
    )
    plain, recorded = pairs["without"], pairs["with"]
    print(
        f"median: {statistics.median(plain):.1f}/s without, {statistics.median(recorded):.1f}/s recording, "
        f"ratio {median_ratio(recorded, plain):.4f} (target >= 0.99)"
    )
    return pairs


def long_run(seconds: float, common: list[str], keep: Path | None) -> dict[str, Any]:
    tmp = tempfile.mkdtemp()
    csv_path = keep or Path(tmp, "long.csv")
    summary = bench([*common, "--seconds", str(seconds), "--csv", str(csv_path)])
    session = read_recording(csv_path)
    rows = [r for r in session.rows if not r["event"]]
    t0 = float(rows[0]["t_s"])
    blocks: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        blocks.setdefault(int((float(r["t_s"]) - t0) // 300), []).append(r)
    print(f"long run: {len(rows)} inference rows in {seconds:.0f} s, csv {csv_path.stat().st_size / 2**20:.1f} MiB")
    print(f"rows {summary['csv']['rows']}, lost {summary['csv']['lost_rows']}, error {summary['csv']['error']}")
    print("| minutes | inferences | inference fps | inference p50 ms | RSS MiB (last row) |")
    print("| --- | --- | --- | --- | --- |")
    per_block = []
    for block, rs in sorted(blocks.items()):
        span = float(rs[-1]["t_s"]) - float(rs[0]["t_s"])
        p50 = statistics.median(float(r["inference_ms"]) for r in rs)
        rss = next((r["rss_mb"] for r in reversed(rs) if r["rss_mb"]), "")
        per_block.append({"minutes": block * 5, "inferences": len(rs), "inference_p50_ms": p50, "rss_mb": rss})
        print(f"| {block * 5}-{block * 5 + 5} | {len(rs)} | {len(rs) / span:.1f} | {p50:.2f} | {rss} |")
    return {"rows": len(rows), "csv": summary["csv"], "blocks": per_block}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--long-seconds", type=float, default=3600.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the long run's CSV here")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    common = ["--source", "demo", "--no-pace", "--threads", str(args.threads), "--warmup", "10"]
    results: dict[str, Any] = {}
    if not args.skip_overhead:
        results["overhead_fps"] = overhead(args.seconds, args.repeats, common)
    if args.long_seconds > 0:
        results["long_run"] = long_run(args.long_seconds, common, args.keep)
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
