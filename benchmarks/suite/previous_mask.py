"""What feeding a segmenter its previous mask costs the inference thread per frame (app/model/preprocess.py,
PreviousMask): the mask made from the last output (`mask`: its foreground probability as uint8, resized to
the input when the output is smaller) and the input made from it (`fed`: that, plus a copy of the cached
tensor and the mask looked up into its 4th channel), for a 512x512x4 float input as MediaPipe's hair
segmentation takes. Outputs: 512x512x2 logits (the hair model's: no resize) and 256x256x2 (a resize), and
512x512x2 after a SOFTMAX. Interleaved in one run (this machine is shared: quote medians).

    python -m benchmarks.suite.previous_mask [--runs 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from app.model.preprocess import Preprocessor, PreviousMask
from app.model.spec import load_model_spec
from benchmarks.harness.children import write_json
from benchmarks.harness.stats import p95
from tests.builders.any_models import rgba_segmenter

SIDE = 512
SHAPES = {  # name: (output side, softmax)
    "512x512x2 logits": (SIDE, False),
    "256x256x2 logits": (SIDE // 2, False),
    "512x512x2 softmax": (SIDE, True),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", type=Path, help="write the medians and p95s here")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, (side, softmax) in SHAPES.items():
            path = Path(folder) / f"{side}_{softmax}.tflite"
            path.write_bytes(rgba_segmenter(SIDE, side, softmax=softmax))
            spec = load_model_spec(path)
            tensor = Preprocessor(spec)(rng.integers(0, 256, (SIDE, SIDE, 3), dtype=np.uint8)).copy()
            logits = rng.normal(0, 4, (1, side, side, 2)).astype(np.float32)
            if softmax:
                logits = np.exp(logits) / np.exp(logits).sum(axis=3, keepdims=True)
            feedback = PreviousMask(spec)
            feedback.remember([logits])
            cases[name] = (feedback, tensor)
    times: dict[str, dict[str, list[float]]] = {name: {"mask": [], "fed": []} for name in cases}
    for _ in range(args.runs):
        for name, (feedback, tensor) in cases.items():
            t0 = time.perf_counter()
            feedback.mask()
            t1 = time.perf_counter()
            feedback.fed(tensor)
            t2 = time.perf_counter()
            times[name]["mask"].append((t1 - t0) * 1e3)
            times[name]["fed"].append((t2 - t1) * 1e3)
    print(f"1x{SIDE}x{SIDE}x4 float32 input, {args.runs} runs interleaved, cv2 {cv2.__version__}, "
          f"numpy {np.__version__}")  # fmt: skip
    print("| last output | mask median (p95) | fed median (p95) |")
    print("| --- | --- | --- |")
    figures = {}
    for name, t in times.items():
        m, f = t["mask"], t["fed"]
        figures[name] = {"mask_median_ms": statistics.median(m), "mask_p95_ms": p95(m),
                         "fed_median_ms": statistics.median(f), "fed_p95_ms": p95(f)}  # fmt: skip
        print(f"| {name} | {statistics.median(m):.3f} ms ({p95(m):.3f}) | "
              f"{statistics.median(f):.3f} ms ({p95(f):.3f}) |")  # fmt: skip
    write_json(args.json, {"runs": args.runs, "input": [1, SIDE, SIDE, 4], "outputs": figures})
    return 0


if __name__ == "__main__":
    sys.exit(main())
