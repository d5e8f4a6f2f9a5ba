"""Is the window's A/B speed ratio steady, read a second apart, where the ratio of the two sides' 5 s p50s swings?

The A/B panel says "B is N× faster than A" from the medians of both sides' inference times over the
last 300 frames both inferred (app/pipeline/compare.py `Comparator.speed`), not from the ratio of each
side's 5 s metrics-window p50 (which swung 1.5x-1.9x within seconds). This runs the window's live session
headless (LiveController, the paced demo clip, one thread a side), A the float EfficientNet-Lite0 and B
its int8 unless told otherwise, waits for `--warm` compared frames, then reads both ratios once a second
for `--seconds` and prints them, with each one's largest step between two readings. A real change of
load moves both (a trend); noise moves the p50s' ratio only.

The test (tests/ui/test_window_compare.py) checks the same property on readings of that shape, on a
fake clock.

    python -m benchmarks.suite.compare_speed_ratio [--seconds 12] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from app.backends.options import BackendOptions
from app.live.controller import LiveController
from app.pipeline import InferenceConfig
from benchmarks.harness.children import write_json


def largest_step(values: list[float]) -> float:
    return max((max(a, b) / min(a, b) for a, b in itertools.pairwise(values)), default=1.0)


def wait(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--a", default="efficientnet_lite0", help="A's model")
    parser.add_argument("--b", default="efficientnet_lite0_int8", help="B's model (CPU, one thread, as A)")
    parser.add_argument("--seconds", type=int, default=12, help="readings, one a second")
    parser.add_argument("--warm", type=int, default=150, help="compared frames before the first reading")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    config = InferenceConfig(model=args.a, options=BackendOptions(threads=1))
    live = LiveController("demo", config)
    live.start()
    rows: list[dict[str, float | int | None]] = []
    try:
        if not wait(lambda: live.snapshot().inferences_total >= 3, 60):
            raise SystemExit(f"A never inferred: {live.status()}")
        live.set_compare(replace(config, model=args.b))
        if not wait(lambda: (c := live.comparison()) is not None and c.summary.frames >= args.warm, 180):
            raise SystemExit(f"fewer than {args.warm} compared frames in 180 s: {live.status()}")
        for second in range(args.seconds):
            comparison = live.comparison()
            speed = comparison.speed if comparison is not None else None
            a, b = (live.snapshot(side).latency.get("inference") for side in ("a", "b"))
            p50 = a.p50 / b.p50 if a is not None and b is not None and a.count and b.count and b.p50 > 0 else None
            rows.append({
                "s": second,
                "frames": speed.frames if speed else 0,
                "ratio_of_medians": speed.a_ms / speed.b_ms if speed and speed.b_ms > 0 else None,
                "p50_ratio": p50,
            })  # fmt: skip
            time.sleep(1.0)
    finally:
        live.stop()
    print(f"A {args.a}, B {args.b}: A's time / B's, read once a second")
    print("   s   frames   ratio of medians   ratio of 5 s p50s")
    for row in rows:
        medians, p50 = row["ratio_of_medians"], row["p50_ratio"]
        print(
            f"{row['s']:>4}{row['frames']:>9}{'' if medians is None else f'{medians:.3f}':>19}"
            f"{'' if p50 is None else f'{p50:.3f}':>20}"
        )
    medians_steps = largest_step([float(r["ratio_of_medians"]) for r in rows if r["ratio_of_medians"] is not None])
    p50_steps = largest_step([float(r["p50_ratio"]) for r in rows if r["p50_ratio"] is not None])
    print(f"largest step between readings: ratio of medians {medians_steps:.3f}, 5 s p50s {p50_steps:.3f}")
    write_json(args.json, {"readings": rows, "largest_step": {"medians": medians_steps, "p50": p50_steps}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
