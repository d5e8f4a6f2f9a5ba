"""Preprocessing cost of a 1280x720 BGR frame: the app's Preprocessor vs the obvious PIL/numpy
approach, interleaved in one run (this machine is shared: compare the ratio, quote medians).

    python benchmarks/preprocess.py [--runs 300]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.model.preprocess import Preprocessor  # noqa: E402
from app.model.spec import load_model_spec  # noqa: E402
from app.sources import open_source  # noqa: E402


def naive(frame_bgr: np.ndarray, size: int = 224) -> np.ndarray:
    """What a user writes first: PIL resize of the whole frame, numpy normalise, add a batch axis."""
    rgb = Image.fromarray(frame_bgr[:, :, ::-1])
    resized = np.asarray(rgb.resize((size, size), Image.BILINEAR), dtype=np.float32)
    return ((resized - 127.0) / 128.0)[np.newaxis]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    source = open_source("demo", pace=False)
    frames = [source.read().image for _ in range(30)]  # real 1280x720 frames of the bundled clip
    source.close()
    assert frames[0].shape == (720, 1280, 3)
    results: dict[str, dict[str, list[float]]] = {}
    for model in ("efficientnet_lite0", "efficientnet_lite0_int8"):
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
    for model, r in results.items():
        a, n = sorted(r["app"]), sorted(r["naive"])
        p95 = lambda v: v[int(0.95 * (len(v) - 1))]  # noqa: E731
        am, nm = statistics.median(a), statistics.median(n)
        print(f"| {model} | {am:.3f} ms ({p95(a):.3f}) | {nm:.3f} ms ({p95(n):.3f}) | {nm / am:.1f}x faster |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
