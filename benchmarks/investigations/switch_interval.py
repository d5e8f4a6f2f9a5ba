"""Does CPython's GIL switch interval cost the inference thread throughput? Side by side, one process.

After invoke() returns (LiteRT runs the model with the GIL released), the inference thread
needs the GIL back to take the output and start the next run. If another thread is running
Python at that moment, CPython makes the waiting thread wait up to the switch interval
(`sys.getswitchinterval()`, 5 ms by default) before it forces a hand-over: up to a whole
inference of an int8 model here. This alternates the app's Pipeline under each interval given
(unpaced source, throttle 0, 1 CPU thread), with the raw CpuSession loop in between as the
reference, `--rounds` times, and reports per interval the median over rounds of: inference fps,
fps / raw, inference-stage p50 and p95. A "spinner" round adds a thread running pure Python
(the worst case: a GUI thread drawing plots) to both the pipeline and the raw loop.

    python -m benchmarks.investigations.switch_interval [--model efficientnet_lite0_int8] [--source demo]
        [--intervals 5 0.5] [--rounds 6] [--inferences 300] [--spinner]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys

from app.model.spec import load_model_spec
from benchmarks.harness.loops import session_rate
from benchmarks.harness.pipeline import pipeline_round
from benchmarks.harness.rounds import rotated
from benchmarks.harness.spinner import Spinner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--intervals", type=float, nargs="+", default=[5.0, 0.5], help="milliseconds")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--inferences", type=int, default=300)
    parser.add_argument("--spinner", action="store_true", help="a pure-Python thread runs beside everything")
    args = parser.parse_args(argv)
    spec = load_model_spec(args.model)
    default = sys.getswitchinterval()
    rows: dict[float, list[tuple[float, float, float, float]]] = {ms: [] for ms in args.intervals}
    print(f"{args.model}, source {args.source} unpaced, 1 thread, {args.rounds} rounds, spinner {args.spinner}")
    for r in range(args.rounds):
        for ms in rotated(args.intervals, r):
            sys.setswitchinterval(ms / 1000)
            try:
                with Spinner() if args.spinner else contextlib.nullcontext():
                    raw = session_rate(spec, args.inferences)
                    fps, p50, p95 = pipeline_round(args.model, args.source, args.inferences)
            finally:
                sys.setswitchinterval(default)
            rows[ms].append((raw, fps, p50, p95))
            print(
                f"round {r + 1} interval {ms:g} ms: raw {raw:.1f}/s, pipeline {fps:.1f}/s ({fps / raw:.3f}), "
                f"inference p50 {p50:.2f} p95 {p95:.2f} ms",
                flush=True,
            )
    print("\n| switch interval | raw loop /s | pipeline inferences /s | pipeline / raw | inference p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    med = statistics.median
    for ms, rs in rows.items():
        print(
            f"| {ms:g} ms | {med(r[0] for r in rs):.1f} | {med(r[1] for r in rs):.1f} | "
            f"{med(r[1] / r[0] for r in rs):.3f} | {med(r[2] for r in rs):.2f} | {med(r[3] for r in rs):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
