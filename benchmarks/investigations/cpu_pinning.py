"""Does pinning the inference thread to a CPU of its own help? One process, alternating.

The Pipeline runs unpaced (throttle 0, 1 thread) on one source; every `--segment` inferences
the pinning (app/system/cpu_affinity.py) is switched on or off, so pinned and unpinned stretches
alternate under the same machine load. Per stretch: inferences per second (start to start),
and from /proc the inference thread's time spent runnable but not running and its involuntary
context switches, per inference. The figure quoted is the median over pinned stretches of
(pinned rate / mean of the two unpinned neighbours), with its quartiles. Linux only.

    python -m benchmarks.investigations.cpu_pinning [--model efficientnet_lite0_int8] [--source demo]
        [--segment 300] [--segments 41]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan
from app.system import cpu_affinity
from benchmarks.harness.pipeline import ResultCounter
from benchmarks.harness.procfs import thread_runnable_wait_us, thread_switches

_SKIP = 5  # inferences after each change left out (a migration, a wake-up)


def scheduler_counts(tid: int) -> tuple[float, int]:
    """(microseconds spent runnable waiting for a CPU, involuntary context switches) so far."""
    return thread_runnable_wait_us(tid), thread_switches(tid)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--segment", type=int, default=300, help="inferences per stretch")
    parser.add_argument("--segments", type=int, default=41, help="stretches, odd: pinned first and last")
    args = parser.parse_args(argv)
    if args.segments < 7 or args.segments % 2 == 0:
        parser.error("--segments must be odd and at least 7 (quartiles need two inner pinned stretches)")
    split = cpu_affinity.split_for(1)
    if split is None:
        raise SystemExit("nothing to compare: pinning needs Linux and at least 2 CPUs")
    results = ResultCounter()
    wait_for = results.wait_for
    config = InferenceConfig(model=args.model, options={"threads": 1})
    pipeline = Pipeline(FeedPlan(args.source, pace=False), config, on_result=results)
    owner = object()
    stretches: list[tuple[bool, float, float, float]] = []  # pinned, rate, waited us, switches per inference
    pipeline.start()
    try:
        wait_for(50)
        tid = next(t.native_id for t in pipeline.threads() if t.name == "delegate-scope-inference")
        for k in range(args.segments):
            pinned = k % 2 == 0
            if pinned:
                cpu_affinity.apply(owner, split, tid)
            else:
                cpu_affinity.release(owner)
            first = results.count() + _SKIP
            wait_for(first)
            waited0, switches0 = scheduler_counts(tid)
            wait_for(first + args.segment)
            waited1, switches1 = scheduler_counts(tid)
            ts = results.between(first, first + args.segment)
            n = len(ts)
            stretches.append((pinned, (n - 1) / (ts[-1] - ts[0]), (waited1 - waited0) / n, (switches1 - switches0) / n))
    finally:
        cpu_affinity.release(owner)
        pipeline.stop()
    ratios = [
        stretches[i][1] / ((stretches[i - 1][1] + stretches[i + 1][1]) / 2)
        for i in range(1, len(stretches) - 1)
        if stretches[i][0]
    ]
    med = statistics.median
    print(f"{args.model}, source {args.source} unpaced, 1 thread, {split.describe()}")
    print(f"{len(stretches)} stretches of {args.segment} inferences, alternating pinned / unpinned\n")
    print("| | inferences/s (median) | runnable wait per inference | involuntary switches per inference |")
    print("| --- | --- | --- | --- |")
    for label, flag in (("pinned", True), ("unpinned", False)):
        rows = [s for s in stretches if s[0] is flag]
        print(
            f"| {label} | {med(r[1] for r in rows):.1f} | {med(r[2] for r in rows):.1f} us "
            f"| {med(r[3] for r in rows):.3f} |"
        )
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    print(f"\npinned / unpinned neighbours: median {q2:.3f} (quartiles {q1:.3f}, {q3:.3f}; {len(ratios)} stretches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
