"""Pipeline overhead and agreement with raw LiteRT loops, side by side in one run.

For each bundled model, alternated `--rounds` times, each in its own process:

- "tool": LiteRT's `benchmark_litert_model` (CompiledModel API, `run_by_name` on fixed buffers);
  throughput = 1000 / its mean ms (runs per second of its loop), latency = its median.
- "interp": the raw LiteRT Interpreter loop the app's CPU backend uses (`set_tensor`, `invoke`,
  `get_tensor` on one fixed tensor, nothing else); throughput = runs / loop seconds.
- "bench": `delegate-scope bench --no-pace --throttle-ms 0` (the full pipeline: capture thread
  reading the source flat out, inference thread preprocessing, running, postprocessing).

Per round the ratio bench inference fps / raw throughput, and bench's inference-stage p50 against
the raw median; the table shows the median over rounds of each per-round figure, plus the
pipeline's preprocess and postprocess p50 (the work a raw loop does not do).

On a shared machine another process can take a core in the middle of a round; bench needs two
(capture and inference) where the raw loops need one, so such a round says nothing about the
pipeline. Each run records the CPU the rest of the machine used meanwhile (machine_load.py); a
round where that exceeds `--max-other` cores in any of its three runs is marked disturbed, and
rounds continue (up to `--max-rounds`) until `--rounds` undisturbed ones are in. The medians are
over the undisturbed rounds; every round is printed.

    python benchmarks/pipeline_overhead.py [--rounds 5] [--frames 300] [--threads 1] [--source demo]
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

from machine_load import OtherLoad

ROOT = Path(__file__).resolve().parent.parent


INTERP_LOOP = """
import statistics, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter
model, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
it = Interpreter(model_path=model, num_threads=threads)
it.allocate_tensors()
inp, out = it.get_input_details()[0], it.get_output_details()[0]
x = np.random.default_rng(0).integers(-128, 128, inp["shape"]).astype(inp["dtype"])
for _ in range(10):
    it.set_tensor(inp["index"], x); it.invoke(); it.get_tensor(out["index"])
times = []
start = time.perf_counter()
for _ in range(runs):
    t0 = time.perf_counter()
    it.set_tensor(inp["index"], x); it.invoke(); it.get_tensor(out["index"])
    times.append((time.perf_counter() - t0) * 1e3)
print(statistics.median(times), runs / (time.perf_counter() - start))
"""


def interp(model: str, threads: int, runs: int) -> tuple[float, float]:
    """(median ms, runs per second) of the raw Interpreter loop, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", INTERP_LOOP, str(ROOT / "models" / f"{model}.tflite"), str(threads), str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    median, rate = out.stdout.split()
    return float(median), float(rate)


def tool(model: str, threads: int, runs: int) -> tuple[float, float]:
    """(median ms, runs per second = 1000 / mean ms) from LiteRT's benchmark_litert_model."""
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
        latency = json.loads(out.read_text())["latency"]
        return latency["median_ms"], 1000 / latency["avg_ms"]


def pipeline(model: str, threads: int, frames: int, source: str, checkout: Path = ROOT, extra: tuple = ()) -> dict:
    """bench's metrics for an unpaced run; `checkout` is the project directory whose app runs."""
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
                *extra,
            ],
            capture_output=True,
            check=True,
            cwd=checkout,  # `-m app` imports the app of the directory it runs in
        )
        return json.loads(out.read_text())["metrics"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="undisturbed rounds wanted per model")
    parser.add_argument("--max-rounds", type=int, default=12, help="give up after this many per model")
    parser.add_argument("--max-other", type=float, default=0.25, help="other processes' CPU (cores) that disturbs")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", default="demo")
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} cores; threads {args.threads}; source {args.source} unpaced, throttle 0; "
        f"rounds of tool / interp / bench until {args.rounds} undisturbed (others <= {args.max_other} cores); "
        f"{args.frames} runs or measured inferences each"
    )
    rows = []
    for model in ("efficientnet_lite0", "efficientnet_lite0_int8"):
        per_round: list[dict] = []
        while sum(r["clean"] for r in per_round) < args.rounds and len(per_round) < args.max_rounds:
            with OtherLoad() as o_tool:
                t_med, t_rate = tool(model, args.threads, args.frames)
            with OtherLoad() as o_interp:
                i_med, i_rate = interp(model, args.threads, args.frames)
            with OtherLoad() as o_bench:
                m = pipeline(model, args.threads, args.frames, args.source)
            lat = m["latency"]
            others = max(o.cores or 0.0 for o in (o_tool, o_interp, o_bench))
            per_round.append(
                {
                    "clean": others <= args.max_other,
                    "others (cores)": others,
                    "tool_med": t_med,
                    "tool_rate": t_rate,
                    "interp_med": i_med,
                    "interp_rate": i_rate,
                    "fps": m["inference_fps"],
                    "inf_p50": lat["inference"]["p50"],
                    "pre_p50": lat["preprocess"]["p50"],
                    "post_p50": lat["postprocess"]["p50"],
                    "capture_fps": m["capture_fps"],
                    "fps/tool": m["inference_fps"] / t_rate,
                    "fps/interp": m["inference_fps"] / i_rate,
                    "p50 vs tool %": (lat["inference"]["p50"] / t_med - 1) * 100,
                    "p50 vs interp %": (lat["inference"]["p50"] / i_med - 1) * 100,
                }
            )
        rows.append((model, per_round))
    print("\nPer round (others: the most CPU other processes used during any of the round's three runs):\n")
    keys = [k for k in rows[0][1][0] if k != "clean"]
    print("| model | round | disturbed | " + " | ".join(keys) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in keys) + " |")
    for model, per_round in rows:
        for i, r in enumerate(per_round, 1):
            cells = " | ".join(f"{r[k]:.3f}" if "/" in k else f"{r[k]:.2f}" for k in keys)
            print(f"| {model} | {i} | {'' if r['clean'] else 'DISTURBED'} | {cells} |")
    print("\nMedians over the undisturbed rounds (each per-round figure's median):\n")
    print(
        "| model | rounds | tool median ms | interp median ms | bench inference p50 ms | p50 vs tool | p50 vs interp "
        "| tool /s | interp /s | bench inference fps | bench / tool | bench / interp | "
        "bench preprocess p50 ms | postprocess p50 ms | capture fps |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, per_round in rows:
        clean = [r for r in per_round if r["clean"]]
        if not clean:
            print(f"| {model} | 0 of {len(per_round)} | (every round disturbed) |")
            continue
        med = {k: statistics.median(r[k] for r in clean) for k in keys}
        print(
            f"| {model} | {len(clean)} of {len(per_round)} | {med['tool_med']:.2f} | {med['interp_med']:.2f} | "
            f"{med['inf_p50']:.2f} | {med['p50 vs tool %']:+.1f}% | {med['p50 vs interp %']:+.1f}% | "
            f"{med['tool_rate']:.1f} | {med['interp_rate']:.1f} | {med['fps']:.1f} | {med['fps/tool']:.3f} | "
            f"{med['fps/interp']:.3f} | {med['pre_p50']:.2f} | {med['post_p50']:.2f} | {med['capture_fps']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
