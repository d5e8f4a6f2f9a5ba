"""bench on models that are not classifiers against a raw LiteRT loop on the same model and threads,
side by side in one run: does task decoding (detections, class maps) cost the measurement?

For each model, in rounds (the order rotated from round to round), each run in its own process:

- "interp": the raw LiteRT Interpreter loop (benchmarks/suite/any_model_overhead_child.py): every
  input set, `invoke`, every output read, on one input made once from the demo clip's first frame;
  throughput = runs / loop seconds.
- "bench": `delegate-scope bench --no-pace --throttle-ms 0` on the demo clip (the full pipeline:
  capture thread reading flat out, inference thread with `run_all`, results thread decoding the
  task: detections above 0.5 mapped to the frame, or the class map's argmax and class shares).

Per round the ratio bench inference fps / raw throughput; the table gives the median over rounds of
each per-round figure. Rounds where other processes used more than `--max-other` cores are marked
disturbed, as in pipeline_overhead.py; on a machine shared with other work pass a large
`--max-other` and say so with the figures (each round's load is printed).

    python -m benchmarks.suite.any_model_overhead [--rounds 5] [--frames 200] [--threads 1]
        [--model coco_ssd_mobilenet_v1_1.0_quant_2018_06_29 deeplabv3 efficientnet_lite0] [--json FILE]

A bundled classifier named in --model runs the same legs: a control for what the machine's load
does to the pipeline (bench needs a core for capture and one for inference, the raw loop one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness.children import unpaced_bench, write_json
from benchmarks.harness.loops import LoopResult, interpreter_in_child
from benchmarks.harness.paths import MODELS, VISION
from benchmarks.harness.rounds import Round, add_gated_arguments, gated_rows, print_per_round, print_setup, used_rounds

TASK_MODELS = ("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29", "deeplabv3")


def resolve(name: str) -> Path:
    """A fixture's file name without .tflite, or a bundled model's name (a classifier as a control:
    the pipeline's documented overhead, under the same load)."""
    fixture = VISION / f"{name}.tflite"
    return fixture if fixture.is_file() else MODELS / f"{name}.tflite"


def raw_loop(model: Path, threads: int, runs: int) -> LoopResult:
    return interpreter_in_child(model, threads, runs, child="benchmarks.suite.any_model_overhead_child")


def figures(r: Round[Any]) -> dict[str, float]:
    interp, summary = r.results["interp"], r.results["bench"]
    m = summary["metrics"]
    lat = m["latency"]
    return {
        "others (cores)": r.others,
        "interp_med": interp.median_ms,
        "interp_rate": interp.rate,
        "fps": m["inference_fps"],
        "inf_p50": lat["inference"]["p50"],
        "post_p50": lat["postprocess"]["p50"],
        "post_p95": lat["postprocess"]["p95"],
        "results_per_frame": (summary.get("task") or {}).get("mean_result_count") or 0.0,
        "fps/interp": m["inference_fps"] / interp.rate,
        "p50 vs interp %": (lat["inference"]["p50"] / interp.median_ms - 1) * 100,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    add_gated_arguments(parser, frames=200)
    parser.add_argument("--model", nargs="+", default=list(TASK_MODELS),
                        help=f"file names (no .tflite) in {VISION}, or bundled models' names")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args(argv)
    if not VISION.is_dir():
        sys.exit(f"the third-party fixtures are not at {VISION}")
    print_setup(args, "interp / bench")

    def legs(name: str) -> dict[str, Any]:
        model = resolve(name)
        return {
            "interp": lambda: raw_loop(model, args.threads, args.frames),
            "bench": lambda: unpaced_bench(model, args.threads, args.frames, args.source),
        }

    rows = gated_rows(args.model, legs, args, figures, lambda f: f"bench/interp {f['fps/interp']:.3f}")
    print_tables(rows)
    write_json(args.json, {"args": vars(args), "models": dict(rows)})
    return 0


def print_tables(rows: list[tuple[str, list[dict[str, Any]]]]) -> None:
    print()
    print_per_round(rows)
    keys = [k for k in rows[0][1][0] if k != "clean"]
    print("\nMedians of the per-round figures (undisturbed rounds; all, marked, when none was):\n")
    print("| model | rounds | interp median ms | bench inference p50 ms | interp /s | bench inference fps "
          "| bench / interp (range) | postprocess p50 / p95 ms | results per frame |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, per_round in rows:
        used, label = used_rounds(per_round)
        med = {k: statistics.median(r[k] for r in used) for k in keys}
        ratios = sorted(r["fps/interp"] for r in used)
        print(
            f"| {model} | {label} | {med['interp_med']:.2f} | {med['inf_p50']:.2f} | {med['interp_rate']:.1f} | "
            f"{med['fps']:.1f} | {med['fps/interp']:.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f}) | "
            f"{med['post_p50']:.2f} / {med['post_p95']:.2f} | {med['results_per_frame']:.1f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
