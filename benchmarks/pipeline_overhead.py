"""Pipeline overhead and agreement with LiteRT's own benchmark tool, side by side in one run.

For each bundled model: LiteRT's `benchmark_litert_model` (median latency, single model, no
pipeline) and `delegate-scope bench --no-pace --throttle-ms 0` (the full pipeline: capture thread
decoding the demo clip flat out, inference thread preprocessing, running, postprocessing),
alternated `--rounds` times. Reports pipeline inference fps / raw throughput (1000 / raw median),
and the pipeline's inference-stage median against the raw median.

    python benchmarks/pipeline_overhead.py [--rounds 3] [--frames 300] [--threads 1] [--source demo]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def raw_median_ms(model: str, threads: int, runs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ai_edge_litert.tools.benchmark_litert_model",
                "--model",
                str(ROOT / "models" / f"{model}.tflite"),
                "--num_threads",
                str(threads),
                "--num_runs",
                str(runs),
                "--warmup_runs",
                "10",
                "--result_json",
                str(out),
            ],
            capture_output=True,
            check=True,
        )
        return json.loads(out.read_text())["latency"]["median_ms"]


def pipeline(model: str, threads: int, frames: int, source: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "app",
                "bench",
                "--model",
                model,
                "--threads",
                str(threads),
                "--source",
                source,
                "--no-pace",
                "--throttle-ms",
                "0",
                "--frames",
                str(frames),
                "--json",
                str(out),
            ],
            capture_output=True,
            check=True,
            cwd=ROOT,
        )
        return json.loads(out.read_text())["metrics"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", default="demo")
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} cores; threads {args.threads}; source {args.source} unpaced; {args.rounds} rounds "
        f"alternating raw / pipeline; {args.frames} inferences per pipeline run"
    )
    print(
        "| model | raw median ms | raw throughput /s | pipeline inference fps | pipeline / raw | "
        "pipeline inference p50 ms | vs raw median | capture fps |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for model in ("efficientnet_lite0", "efficientnet_lite0_int8"):
        raws, fps, p50s, cap = [], [], [], []
        for _ in range(args.rounds):
            raws.append(raw_median_ms(model, args.threads, args.frames))
            m = pipeline(model, args.threads, args.frames, args.source)
            fps.append(m["inference_fps"])
            p50s.append(m["latency"]["inference"]["p50"])
            cap.append(m["capture_fps"])
        raw, f, p50 = statistics.median(raws), statistics.median(fps), statistics.median(p50s)
        print(
            f"| {model} | {raw:.2f} | {1000 / raw:.1f} | {f:.1f} | {f * raw / 1000:.3f} | {p50:.2f} | "
            f"{(p50 - raw) / raw * 100:+.1f}% | {statistics.median(cap):.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
