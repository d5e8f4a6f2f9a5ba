"""Recording cost and stability.

1. Overhead: bench with and without `--csv`, alternating, same source/model/threads/duration;
   the median ratio of inference throughput (target: recording costs <= 1%).
2. Long run: one recording of `--long-seconds` at full inference speed (`--no-pace` demo
   clip); RSS per 5-minute block from the recording itself, lost rows, rows written.

    python benchmarks/recording.py [--seconds 30] [--repeats 4] [--long-seconds 3600]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.recording.writer import read_recording  # noqa: E402


def bench(args: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "summary.json")
        proc = subprocess.run(
            [sys.executable, "-m", "app", "bench", *args, "--json", str(out)], cwd=ROOT, capture_output=True, text=True
        )
        if proc.returncode:
            sys.exit(proc.stderr)
        return json.loads(out.read_text())


def overhead(seconds: float, repeats: int, common: list[str]) -> None:
    ratios, plain, recorded = [], [], []
    for i in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            run = [*common, "--seconds", str(seconds)]
            a = bench(run)["metrics"]["inference_fps"]
            b = bench([*run, "--csv", str(Path(tmp, "r.csv"))])["metrics"]["inference_fps"]
        plain.append(a)
        recorded.append(b)
        ratios.append(b / a)
        print(f"pair {i + 1}: {a:.1f}/s without, {b:.1f}/s recording ({b / a:.4f})", flush=True)
    print(
        f"median: {statistics.median(plain):.1f}/s without, {statistics.median(recorded):.1f}/s recording, "
        f"ratio {statistics.median(ratios):.4f} (target >= 0.99)"
    )


def long_run(seconds: float, common: list[str], keep: Path | None) -> None:
    tmp = tempfile.mkdtemp()
    csv_path = keep or Path(tmp, "long.csv")
    summary = bench([*common, "--seconds", str(seconds), "--csv", str(csv_path)])
    session = read_recording(csv_path)
    rows = [r for r in session.rows if not r["event"]]
    t0 = float(rows[0]["t_s"])
    blocks: dict[int, list[dict]] = {}
    for r in rows:
        blocks.setdefault(int((float(r["t_s"]) - t0) // 300), []).append(r)
    print(f"long run: {len(rows)} inference rows in {seconds:.0f} s, csv {csv_path.stat().st_size / 2**20:.1f} MiB")
    print(f"rows {summary['csv']['rows']}, lost {summary['csv']['lost_rows']}, error {summary['csv']['error']}")
    print("| minutes | inferences | inference fps | inference p50 ms | RSS MiB (last row) |")
    print("| --- | --- | --- | --- | --- |")
    for block, rs in sorted(blocks.items()):
        span = float(rs[-1]["t_s"]) - float(rs[0]["t_s"])
        p50 = statistics.median(float(r["inference_ms"]) for r in rs)
        rss = next((r["rss_mb"] for r in reversed(rs) if r["rss_mb"]), "")
        print(f"| {block * 5}-{block * 5 + 5} | {len(rs)} | {len(rs) / span:.1f} | {p50:.2f} | {rss} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--long-seconds", type=float, default=3600.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the long run's CSV here")
    args = parser.parse_args()
    common = ["--source", "demo", "--no-pace", "--threads", str(args.threads), "--warmup", "10"]
    if not args.skip_overhead:
        overhead(args.seconds, args.repeats, common)
    if args.long_seconds > 0:
        long_run(args.long_seconds, common, args.keep)


if __name__ == "__main__":
    main()
