"""Pipeline overhead and agreement with raw LiteRT loops, side by side in one run; optionally against
another checkout's pipeline in the same rounds.

The headline, bench's inference rate as a share of the tool's, is what `delegate-scope bench --no-pace
--versus-litert` prints from an installed package, and both read the tool the same way
(app/tasks/versus_litert.py: its command, its result, its rate). This script adds the raw Interpreter
loop, gated rounds on a shared machine, several models and `--before`.

For each model, in rounds (the order rotated from round to round), each run in its own process:

- "tool": LiteRT's `benchmark_litert_model` (CompiledModel API, `run_by_name` on fixed buffers);
  throughput = 1000 / its mean ms (runs per second of its loop, `ToolRun.rate`), latency = its median.
- "interp": the raw LiteRT Interpreter loop the app's CPU backend uses (`set_tensor`, `invoke`,
  `get_tensor` on one fixed tensor, nothing else); throughput = runs / loop seconds.
- "bench": `delegate-scope bench --no-pace --throttle-ms 0` of this checkout (the full pipeline:
  capture thread reading the source flat out, inference thread, results thread).
- "before" (with `--before CHECKOUT`): the same bench command run in that checkout (a git worktree,
  e.g. `git worktree add ../before COMMIT`), with `--extra-before` arguments added. For a change
  meant to leave the pipeline's speed alone, or to speed it up.

Per round the ratios bench inference fps / raw throughput (and bench / before), and bench's
inference-stage p50 against the raw median; the tables show the median over rounds of each
per-round figure, plus the pipeline's preprocess and postprocess p50 (work a raw loop does not do).

On a shared machine another process can take a core in the middle of a round; bench needs two
(capture and inference) where the raw loops need one, so such a round says nothing about the
pipeline. Each run records the CPU the rest of the machine used meanwhile (harness.load); a round
where that exceeds `--max-other` cores in any of its runs is marked disturbed, and rounds continue
(up to `--max-rounds`) until `--rounds` undisturbed ones are in. The medians are over the
undisturbed rounds (over every round, marked DISTURBED, when none was); every round is printed.

    python -m benchmarks.suite.pipeline_overhead [--rounds 5] [--frames 300] [--threads 1] [--source demo]
        [--model M ...] [--before CHECKOUT [--extra-before ARG ...]] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from app.tasks.versus_litert import ToolRun, run_tool
from benchmarks.harness.children import unpaced_bench, write_json
from benchmarks.harness.loops import interpreter_in_child
from benchmarks.harness.paths import BUNDLED, ROOT, model_path
from benchmarks.harness.rounds import Round, add_gated_arguments, gated_rows, print_per_round, print_setup, used_rounds


def pipeline(
    model: str, threads: int, frames: int, source: str, checkout: Path = ROOT, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """bench's metrics for an unpaced run; `checkout` is the project directory whose app runs."""
    metrics: dict[str, Any] = unpaced_bench(model, threads, frames, source, checkout, extra)["metrics"]
    return metrics


def figures(r: Round[Any]) -> dict[str, float]:
    """One round's figures, as the tables show them."""
    tool, interp, m = r.results["tool"], r.results["interp"], r.results["bench"]
    lat = m["latency"]
    row = {
        "others (cores)": r.others,
        "tool_med": tool.median_ms,
        "tool_rate": tool.rate,
        "interp_med": interp.median_ms,
        "interp_rate": interp.rate,
        "fps": m["inference_fps"],
        "inf_p50": lat["inference"]["p50"],
        "pre_p50": lat["preprocess"]["p50"],
        "post_p50": lat["postprocess"]["p50"],
        "capture_fps": m["capture_fps"],
        "fps/tool": m["inference_fps"] / tool.rate,
        "fps/interp": m["inference_fps"] / interp.rate,
        "p50 vs tool %": (lat["inference"]["p50"] / tool.median_ms - 1) * 100,
        "p50 vs interp %": (lat["inference"]["p50"] / interp.median_ms - 1) * 100,
    }
    if "before" in r.results:
        b = r.results["before"]
        row |= {
            "before_fps": b["inference_fps"],
            "before_inf_p50": b["latency"]["inference"]["p50"],
            "fps/before": m["inference_fps"] / b["inference_fps"],
            "before/tool": b["inference_fps"] / tool.rate,
            "before/interp": b["inference_fps"] / interp.rate,
        }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    add_gated_arguments(parser, frames=300)
    parser.add_argument("--model", nargs="+", default=list(BUNDLED), help="bundled model names")
    parser.add_argument("--before", type=Path, help="another checkout whose bench runs in the same rounds")
    parser.add_argument("--extra-before", nargs="*", default=[], help="extra bench arguments for 'before'")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args(argv)
    before = f"; before = {args.before.resolve()}" if args.before else ""
    print_setup(args, f"tool / interp / bench{' / before' if args.before else ''}", before)

    def legs(model: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": lambda: ToolRun.of(run_tool(model_path(model), "cpu", args.threads, args.frames, 10)),
            "interp": lambda: interpreter_in_child(model_path(model), args.threads, args.frames),
            "bench": lambda: pipeline(model, args.threads, args.frames, args.source),
        }
        if args.before:
            out["before"] = lambda: pipeline(
                model, args.threads, args.frames, args.source, args.before.resolve(), tuple(args.extra_before)
            )
        return out

    def headline(f: dict[str, float]) -> str:
        return f"bench/tool {f['fps/tool']:.3f}" + (
            f", bench/before {f['fps/before']:.3f}" if "fps/before" in f else ""
        )

    rows = gated_rows(args.model, legs, args, figures, headline)
    print_tables(rows)
    write_json(args.json, {"args": vars(args), "models": dict(rows)})
    return 0


def print_tables(rows: list[tuple[str, list[dict[str, Any]]]]) -> None:
    print("\nPer round (others: the most CPU other processes used during any of the round's runs):\n")
    print_per_round(rows)
    keys = [k for k in rows[0][1][0] if k != "clean"]
    print("\nMedians over the undisturbed rounds (each per-round figure's median; over all, marked, if none was):\n")
    print(
        "| model | rounds | tool median ms | interp median ms | bench inference p50 ms | p50 vs tool | p50 vs interp "
        "| tool /s | interp /s | bench inference fps | bench / tool | bench / interp | "
        "bench preprocess p50 ms | postprocess p50 ms | capture fps |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, per_round in rows:
        clean, label = used_rounds(per_round)
        med = {k: statistics.median(r[k] for r in clean) for k in keys}
        print(
            f"| {model} | {label} | {med['tool_med']:.2f} | {med['interp_med']:.2f} | "
            f"{med['inf_p50']:.2f} | {med['p50 vs tool %']:+.1f}% | {med['p50 vs interp %']:+.1f}% | "
            f"{med['tool_rate']:.1f} | {med['interp_rate']:.1f} | {med['fps']:.1f} | {med['fps/tool']:.3f} | "
            f"{med['fps/interp']:.3f} | {med['pre_p50']:.2f} | {med['post_p50']:.2f} | {med['capture_fps']:.0f} |"
        )
    if "fps/before" not in rows[0][1][0]:
        return
    print("\nThis checkout's bench (after) against the other checkout's (before), undisturbed rounds:\n")
    print(
        "| model | rounds | after / before, median (range) | after faster in | after inference p50 ms "
        "| before inference p50 ms | after / tool | before / tool | after / interp | before / interp |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, per_round in rows:
        clean, label = used_rounds(per_round)
        ratios = sorted(r["fps/before"] for r in clean)
        med = {k: statistics.median(r[k] for r in clean) for k in clean[0] if k != "clean"}
        wins = sum(r["fps"] > r["before_fps"] for r in clean)
        print(
            f"| {model} | {label} | {med['fps/before']:.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})"
            f" | {wins} of {len(clean)} | {med['inf_p50']:.2f} | {med['before_inf_p50']:.2f} | {med['fps/tool']:.3f} "
            f"| {med['before/tool']:.3f} | {med['fps/interp']:.3f} | {med['before/interp']:.3f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
