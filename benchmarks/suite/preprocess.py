"""Preprocessing cost of a 1280x720 BGR frame: the app's Preprocessor vs the obvious PIL/numpy
approach, interleaved in one run (this machine is shared: compare the ratio, quote medians); then the
app's two-step shrink against one INTER_AREA call: time and mean difference in grey levels.

    python -m benchmarks.suite.preprocess [--runs 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from app.model.preprocess import Preprocessor, shrink
from app.model.spec import load_model_spec
from app.sources import open_source
from benchmarks.harness.children import write_json
from benchmarks.harness.paths import BUNDLED
from benchmarks.harness.stats import p95


def naive(frame_bgr: np.ndarray, size: int = 224) -> np.ndarray:
    """What a user writes first: PIL resize of the whole frame, numpy normalise, add a batch axis."""
    rgb = Image.fromarray(frame_bgr[:, :, ::-1])
    resized = np.asarray(rgb.resize((size, size), Image.BILINEAR), dtype=np.float32)
    return ((resized - 127.0) / 128.0)[np.newaxis]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", type=Path, help="write the medians and p95s here")
    args = parser.parse_args(argv)
    source = open_source("demo", pace=False)
    frames = [source.read().image for _ in range(30)]  # real 1280x720 frames of the bundled clip
    source.close()
    assert frames[0].shape == (720, 1280, 3)
    results: dict[str, dict[str, list[float]]] = {}
    for model in BUNDLED:
        pre = Preprocessor(load_model_spec(model))
        app_ms, naive_ms = [], []
        for i in range(args.runs):
            frame = frames[i % len(frames)]
            t0 = time.perf_counter()
            pre(frame)
            t1 = time.perf_counter()
            naive(frame)
            t2 = time.perf_counter()
            app_ms.append((t1 - t0) * 1e3)
            naive_ms.append((t2 - t1) * 1e3)
        results[model] = {"app": app_ms, "naive": naive_ms}
    print(
        f"1280x720 BGR frame -> 1x224x224x3, {args.runs} runs interleaved, cv2 {cv2.__version__}, "
        f"{cv2.getNumThreads()} OpenCV threads"
    )
    print("| model input | app Preprocessor median (p95) | PIL + numpy median (p95) | ratio |")
    print("| --- | --- | --- | --- |")
    figures = {}
    for model, r in results.items():
        a, n = r["app"], r["naive"]
        am, nm = statistics.median(a), statistics.median(n)
        figures[model] = {"app_median_ms": am, "app_p95_ms": p95(a), "naive_median_ms": nm, "naive_p95_ms": p95(n)}
        print(f"| {model} | {am:.3f} ms ({p95(a):.3f}) | {nm:.3f} ms ({p95(n):.3f}) | {nm / am:.1f}x faster |")
    shrinks = shrink_against_area(frames, args.runs)
    write_json(args.json, {"runs": args.runs, "models": figures, "shrink": shrinks})
    return 0


def shrink_against_area(frames: list[np.ndarray], runs: int) -> dict[str, dict[str, float]]:
    """`shrink` (bilinear to twice the target, then INTER_AREA's whole x2 path) against INTER_AREA in one
    call, for a classifier's centre crop and a 512x512 segmenter's whole frame."""
    cases = {"720x720 crop -> 224x224": (lambda f: f[:, 280:1000], 224), "1280x720 -> 512x512": (lambda f: f, 512)}
    print("\n| shrink | INTER_AREA median | shrink median | mean difference (grey levels) | max |")
    print("| --- | --- | --- | --- | --- |")
    out = {}
    for name, (region, size) in cases.items():
        area_ms, shrink_ms, diffs = [], [], []
        for i in range(runs):
            image = np.ascontiguousarray(region(frames[i % len(frames)]))
            t0 = time.perf_counter()
            direct = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
            t1 = time.perf_counter()
            ours = shrink(image, size, size)
            t2 = time.perf_counter()
            area_ms.append((t1 - t0) * 1e3)
            shrink_ms.append((t2 - t1) * 1e3)
            diffs.append(np.abs(ours.astype(np.int16) - direct).astype(np.float64))
        mean, peak = float(np.mean([d.mean() for d in diffs])), float(max(d.max() for d in diffs))
        am, sm = statistics.median(area_ms), statistics.median(shrink_ms)
        print(f"| {name} | {am:.3f} ms | {sm:.3f} ms | {mean:.3f} | {peak:.0f} |")
        out[name] = {"area_median_ms": am, "shrink_median_ms": sm, "mean_abs_diff": mean, "max_abs_diff": peak}
    return out


if __name__ == "__main__":
    sys.exit(main())
