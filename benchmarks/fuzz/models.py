"""Fuzz campaign over model loading. Thousands of seeded mutations of the
bundled and fixture models through the app's own load path, each in a worker process
(tests/harness/model_fuzz.py), plus what the pure-Python flatbuffer check costs at load time.

    python -m benchmarks.fuzz.models [--cases 2000] [--seed 1] [--vision]

--vision: the models of every other task instead (../shared/fixtures/vision: a detector, a segmenter, pose and
landmark models, raw-output, audio and sequence models), each run as the app runs it (feeder, task decoder).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from app.model.spec import load_model_spec
from app.tflite.file import read_tflite
from benchmarks.harness.paths import BUNDLED, CORAL, GRACE_HOPPER, ROOT, VISION, model_path
from tests.harness.model_fuzz import MUTATIONS, Case, cases, run_cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vision", action="store_true", help="fuzz the models of the other tasks")
    args = parser.parse_args(argv)
    seeds = [model_path(name) for name in BUNDLED]
    seeds += [*sorted(CORAL.glob("*.tflite")), ROOT / "tests" / "data" / "models" / "dynamic_batch_logits.tflite"]
    if args.vision:
        seeds = sorted(VISION.glob("*.tflite"))
    image = GRACE_HOPPER
    originals = {s.name: r.get("top1") for s, r in zip(seeds, run_cases(cases_for(seeds), image), strict=True)}

    started = time.perf_counter()
    results = run_cases(cases(seeds, args.cases, args.seed), image, timeout_s=60)
    seconds = time.perf_counter() - started
    for r in results:
        if r["outcome"] == "ok" and originals[r["seed"]] is None:
            r["outcome"] = "ok, decoded"  # not a classifier: decoded by its task, non-finite values shown
        elif r["outcome"] == "ok":
            r["outcome"] = "ok, same top-1" if r.get("top1") == originals[r["seed"]] else "ok, other top-1"
    outcomes = collections.Counter(r["outcome"] for r in results)
    print(f"{len(results)} cases over {len(seeds)} models in {seconds:.0f} s (seed {args.seed})")
    print(f"outcomes: {dict(outcomes)}")
    columns = ["model_error", "ok, same top-1", "ok, other top-1", "ok, decoded", "nonfinite", "exception", "crash",
               "hang"]  # fmt: skip
    print("| mutation | " + " | ".join(columns) + " |")
    print("| --- |" + " --- |" * len(columns))
    for mutation in MUTATIONS:
        c = collections.Counter(r["outcome"] for r in results if r["mutation"] == mutation)
        print(f"| {mutation} | " + " | ".join(str(c[k]) for k in columns) + " |")
    for r in results:
        if r["outcome"] in ("nonfinite", "exception", "crash", "hang"):
            print("BAD", r)
    print("\nload-time cost of the pure-Python flatbuffer check (median of 9):")
    for seed in seeds[:2]:
        data = seed.read_bytes()
        parse = statistics.median(_time(lambda data=data: read_tflite(data)) for _ in range(9))
        full = statistics.median(_time(lambda seed=seed: load_model_spec(seed)) for _ in range(9))
        print(f"  {seed.name} ({len(data) / 2**20:.1f} MiB): parse {parse:.1f} ms of load_model_spec {full:.1f} ms")
    return 0


def cases_for(seeds: list[Path]) -> list[Case]:
    """The unmutated seeds, to know each model's own answer ("append" of 0 bytes is a no-op)."""
    return [Case(i, str(s), "none", 0) for i, s in enumerate(seeds)]


def _time(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    sys.exit(main())
