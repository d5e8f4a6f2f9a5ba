"""Why a GPU pipeline's capture thread is slow on a many-core host: preprocessing alone (with
OpenCV's default thread pool and with one thread), and whether the GPU run leaves the GIL
free for other threads (a Python counter thread's rate while the raw GPU loop runs, against
its rate alone). One process per question (benchmarks/investigations/gpu_host_probe_child.py);
prints one JSON line each.

    python -m benchmarks.investigations.gpu_host_probe [--model models/efficientnet_lite0.tflite]
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.harness.children import run_module
from benchmarks.harness.paths import model_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(model_path("efficientnet_lite0")))
    args = parser.parse_args(argv)
    runs = [("preprocess, OpenCV's default threads", "preprocess", "0"),
            ("preprocess, OpenCV on 1 thread", "preprocess", "1"),
            ("GIL while the raw GPU loop runs", "gil", "0"),
            ("GIL, sleeping 0.3 ms before the read", "gil", "0.3"),
            ("GIL, sleeping 0.6 ms before the read", "gil", "0.6")]  # fmt: skip
    for name, kind, value in runs:
        proc = run_module("benchmarks.investigations.gpu_host_probe_child", kind, args.model, value)
        line = (proc.stdout.strip().splitlines() or [proc.stderr.strip().splitlines()[-1]])[-1]
        print(f"{name}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
