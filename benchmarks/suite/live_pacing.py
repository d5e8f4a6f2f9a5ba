"""Live pacing over a long run: the demo clip paced at 30 fps, the fp32 model flat out (throttle 0).
Per minute: capture fps, inference fps, inference and end-to-end latency, RSS; plus the dropped
count. Targets: capture fps >= 29, latency flat, RSS growth <= 10 MB.

    python -m benchmarks.suite.live_pacing [--seconds 600] [--threads 1] [--json FILE]  # runs bench, analyses
    python -m benchmarks.suite.live_pacing --csv session.csv --summary s.json         # analyses an existing run
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.recording.writer import read_recording
from benchmarks.harness.children import app_command, write_json
from benchmarks.harness.paths import ROOT


def analyse(csv_path: Path, summary_path: Path) -> dict[str, Any]:
    session = read_recording(csv_path)
    rows = [r for r in session.rows if r["event"] == ""]
    summary = json.loads(summary_path.read_text())
    start = float(rows[0]["t_s"])
    minutes: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        minutes.setdefault(int((float(r["t_s"]) - start) // 60), []).append(r)
    print(
        "| minute | inferences | capture fps (median of rows) | inference fps | inference p50 ms | "
        "end-to-end p50 ms | RSS MB (last) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    per_minute = []
    for minute, rs in sorted(minutes.items()):

        def med(key: str, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.median(float(r[key]) for r in rs if r[key])

        keys = ("capture_fps", "inference_fps", "inference_ms", "end_to_end_ms")
        per_minute.append({"minute": minute, "inferences": len(rs), **{k: med(k) for k in keys}})
        print(
            f"| {minute} | {len(rs)} | {med('capture_fps'):.2f} | {med('inference_fps'):.2f} | "
            f"{med('inference_ms'):.2f} | {med('end_to_end_ms'):.2f} | {float(rs[-1]['rss_mb']):.1f} |"
        )
    m = summary["metrics"]
    rss = [float(r["rss_mb"]) for r in rows if r["rss_mb"]]
    after_first_minute = [float(r["rss_mb"]) for r in minutes.get(1, []) if r["rss_mb"]]
    print(
        f"\nwhole run: {m['inferences_total']} inferences, {m['frames_total']} frames captured, "
        f"{m['dropped_total']} dropped (overwritten before inference), capture {m['capture_fps']:.2f} fps, "
        f"inference {m['inference_fps']:.2f} fps; rows {len(session.rows)}, lost {session.metadata.get('lost_rows')}"
    )
    if after_first_minute:
        print(
            f"RSS: {rss[0]:.1f} MB at the first row, {after_first_minute[0]:.1f} MB after 1 min, "
            f"{rss[-1]:.1f} MB at the end (growth after the first minute {rss[-1] - after_first_minute[0]:+.1f} MB)"
        )
    return {"minutes": per_minute, "metrics": m, "rss_mb": [rss[0], rss[-1]] if rss else []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--summary", type=Path)
    parser.add_argument("--json", type=Path, help="write the per-minute figures here")
    args = parser.parse_args(argv)
    if args.csv:
        write_json(args.json, analyse(args.csv, args.summary or args.csv.with_name(args.csv.stem + "_summary.json")))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        csv_path, summary = Path(tmp) / "live.csv", Path(tmp) / "summary.json"
        run = ["--seconds", str(args.seconds), "--threads", str(args.threads)]
        subprocess.run(app_command("bench", *run, "--csv", str(csv_path), "--json", str(summary)), check=True, cwd=ROOT)
        write_json(args.json, analyse(csv_path, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
