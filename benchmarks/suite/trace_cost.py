"""What `bench --trace` costs the pipeline: the rate with the timeline recorded against the rate without.

Pairs of `bench` runs (each in a fresh process), one without and one with `--trace`, on the same source,
model, threads and duration, alternating in each round so the machine's load hits both alike; the
median over rounds of each pair's rate ratio (target: >= 0.98, tracing costs <= 2%). The trace is written
after the run, so its writing is not in the measured span; what is measured is the collection: one tuple
appended per frame read and per inference published. On a machine that other work loads, the rate
swings by more than the target from one run to the next; the process's CPU time per inference over
the measured span (`measured_cpu`) is the steadier reading of the work tracing adds, and is given beside.

`--windows N` measures side by side in one process instead: one pipeline runs throughout and the trace
hooks are attached and detached every `--window` seconds, 2N windows in (off, on) pairs, the order
alternating; the median of the pairs' rate ratios. Slow swings of the machine's load then hit both
sides of a pair alike, and no process start-up or warm-up differs between them.

Off, each of the pipeline's three hooks is one `is not None` test per frame; the script also times that
test alone (timeit) against the frame's time, to say what "off" costs in numbers.

    python -m benchmarks.suite.trace_cost [--seconds 10] [--rounds 5] [--model efficientnet_lite0_int8]
        [--threads 1] [--source demo] [--windows 20 --window 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from app.backends.options import BackendOptions
from app.metrics.trace import CAPTURED, TraceLog
from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan
from benchmarks.harness.children import bench_summary, write_json
from benchmarks.harness.rounds import alternate
from benchmarks.harness.stats import median_ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="efficientnet_lite0_int8")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--delegate", default="cpu", help="the backend the pipeline runs on (gpu: the GPU host's figure)")
    ap.add_argument("--source", default="demo")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--windows", type=int, default=0, help="pairs of windows in one process instead of runs")
    ap.add_argument("--window", type=float, default=2.0, help="seconds per window (with --windows)")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    args = ap.parse_args(argv)
    if args.windows:
        return in_one_process(args)
    common = ["--model", args.model, "--delegate", args.delegate, "--threads", str(args.threads), "--source",
              args.source, "--no-pace",
              "--seconds", str(args.seconds), "--warmup", "20"]  # fmt: skip
    traces: list[dict[str, Any]] = []

    def traced() -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "run.trace.json")
            summary = bench_summary([*common, "--trace", str(path)])
            trace = json.loads(path.read_text())
            traces.append({**summary["trace"], "bytes": path.stat().st_size, "events": len(trace["traceEvents"])})
            return figures(summary)

    def report(i: int, pair: dict[str, tuple[float, float]]) -> None:
        (off, off_cpu), (on, on_cpu) = pair["off"], pair["on"]
        print(f"round {i + 1}: {off:.1f}/s off, {on:.1f}/s tracing ({on / off:.4f}); process CPU per inference "
              f"{off_cpu:.3f} ms off, {on_cpu:.3f} ms tracing", flush=True)  # fmt: skip

    runs = alternate({"off": lambda: figures(bench_summary(common)), "on": traced}, args.rounds, report=report)
    rates = {leg: [r[0] for r in runs[leg]] for leg in runs}
    cpu = {leg: [r[1] for r in runs[leg]] for leg in runs}
    ratio = median_ratio(rates["on"], rates["off"])
    print(f"{args.model} on {args.delegate}, {args.threads} thread(s), {args.source} unpaced, {args.rounds} rounds x "
          f"{args.seconds:g} s")  # fmt: skip
    print(
        f"median: {statistics.median(rates['off']):.1f}/s off, {statistics.median(rates['on']):.1f}/s tracing; "
        f"median of the pairs' ratios {ratio:.4f} (target >= 0.98)"
    )
    print(
        f"process CPU per inference, medians: {statistics.median(cpu['off']):.3f} ms off, "
        f"{statistics.median(cpu['on']):.3f} ms tracing; median of the pairs' ratios "
        f"{median_ratio(cpu['on'], cpu['off']):.4f}"
    )
    last = traces[-1]
    print(f"a trace: {last['frames']} inferred frames, {last['events']} events, {last['bytes'] / 2**20:.1f} MiB")
    hook_ns = min(timeit.repeat("t is not None", setup="t = None", number=1_000_000, repeat=5)) * 1e3
    frame_ms = 1e3 / statistics.median(rates["off"])
    print(f"off: three `is not None` tests per frame, {3 * hook_ns:.0f} ns, {3 * hook_ns / (frame_ms * 1e6):.1e} "
          f"of a {frame_ms:.2f} ms frame")  # fmt: skip
    on_ns = collection_ns()
    print(f"on: the hooks' calls, {on_ns:.0f} ns per frame (timeit), {on_ns / (frame_ms * 1e6):.1e} of a frame")
    write_json(args.json, {"rates": rates, "cpu_ms_per_inference": cpu, "ratio": ratio, "traces": traces,
                           "hook_ns": hook_ns, "collection_ns": on_ns})  # fmt: skip
    return 0


def in_one_process(args: argparse.Namespace) -> int:
    """One pipeline, as bench runs it (unpaced, looping, the inference thread pinned where it can be), the
    trace hooks attached and detached between windows."""
    config = InferenceConfig(model=args.model, delegate=args.delegate, options=BackendOptions(threads=args.threads))
    pipeline = Pipeline(FeedPlan(source=args.source, pace=False, loop=True, pin_cpus=True), config)
    log = TraceLog()
    pipeline.start()
    try:
        while pipeline.metrics.inferences_total < 50:  # the session open and warm
            time.sleep(0.1)
        ran = pipeline.side_report("a")
        print(f"running on {ran.used if ran else 'nothing'} (asked for {args.delegate})", flush=True)

        def window(on: bool) -> float:
            # The hooks a traced pipeline holds from its start (Feed(trace=...)), set between two windows.
            pipeline.capture._trace = log if on else None
            pipeline.worker._results._trace = log.for_side("a") if on else None
            n0, t0 = pipeline.metrics.inferences_total, time.monotonic()
            time.sleep(args.window)
            return (pipeline.metrics.inferences_total - n0) / (time.monotonic() - t0)

        def report(i: int, pair: dict[str, float]) -> None:
            off, on = pair["off"], pair["on"]
            print(f"pair {i + 1}: {off:.1f}/s off, {on:.1f}/s tracing ({on / off:.4f})", flush=True)

        rates = alternate({"off": lambda: window(False), "on": lambda: window(True)}, args.windows, report=report)
    finally:
        pipeline.stop()
    ratio = median_ratio(rates["on"], rates["off"])
    print(f"{args.model} on {args.delegate}, {args.threads} thread(s), {args.source} unpaced, one process, "
          f"{args.windows} pairs of {args.window:g} s windows")  # fmt: skip
    print(
        f"median: {statistics.median(rates['off']):.1f}/s off, {statistics.median(rates['on']):.1f}/s tracing; "
        f"median of the pairs' ratios {ratio:.4f} (target >= 0.98); {len(log.records)} records collected"
    )
    write_json(args.json, {"rates": rates, "ratio": ratio, "records": len(log.records)})
    return 0


def collection_ns(number: int = 100_000) -> float:
    """What tracing adds per frame, timed alone: the capture thread's append and the results thread's call."""
    log = TraceLog()
    side = log.for_side("a")

    def frame() -> None:
        log.append((CAPTURED, 1, 1.0, 2.0, 0.0, 3.0, 1.0, False))
        side.published(1, 1.0, 2.0, 3.0, 1.0, True, False, 4.0, 5.0, 6.0, 0.5, "cpu")

    return min(timeit.repeat(frame, number=number, repeat=5)) / number * 1e9


def figures(summary: dict[str, Any]) -> tuple[float, float]:
    """The run's inference rate, and its process CPU per inference (ms) over the measured span."""
    m, cpu = summary["metrics"], summary["measured_cpu"]
    return float(m["inference_fps"]), cpu["process_cpu_pct_cores"] / 100 * cpu["seconds"] / m["inferences_total"] * 1e3


if __name__ == "__main__":
    sys.exit(main())
