"""The raw LiteRT Interpreter loop of a model of any task, in a process of its own: every input set,
`invoke`, every output read (what the app's `run_all` does), on one fixed input made once from the
demo clip's first frame as the app preprocesses it (a detector's post-processing op works on real
pixels, not noise). Prints "median_ms rate".

python -m benchmarks.suite.any_model_overhead_child MODEL THREADS RUNS
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

from benchmarks.harness.loops import interpreter_loop
from benchmarks.harness.paths import DEMO_CLIP


def fixed_inputs(model: Path) -> list[np.ndarray]:
    """Every input of `model` in order: the image input from the demo clip's first frame (the app's
    Preprocessor, once, outside the loop), the others from the app's seeded feeder."""
    from app.model.feed import InputFeeder
    from app.model.preprocess import Preprocessor
    from app.model.spec import load_model_spec

    spec = load_model_spec(model)
    capture = cv2.VideoCapture(str(DEMO_CLIP))
    ok, frame = capture.read()
    capture.release()
    if not ok:
        sys.exit(f"cannot read a frame of {DEMO_CLIP}")
    image = Preprocessor(spec)(frame) if spec.image_input is not None else None
    return [np.array(x, copy=True) for x in InputFeeder(spec).inputs(image, 0)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("threads", type=int)
    parser.add_argument("runs", type=int)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args(argv)
    result = interpreter_loop(args.model, args.threads, args.runs, warmup=args.warmup, inputs=fixed_inputs(args.model))
    print(result.median_ms, result.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
