"""How much a decoder on the other core slows the model: the raw LiteRT loop alone, beside a
process that only decodes the demo clip, and beside a pure-Python spinner, alternated.

On a 2-core machine the pipeline's capture thread decodes and preprocesses the next frame
while the model runs; this isolates that effect from the pipeline's own machinery
(docs/benchmarks.md, "After moving postprocessing to a results thread").

    python benchmarks/decode_contention.py [--model efficientnet_lite0_int8] [--pairs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter

ROOT = Path(__file__).resolve().parent.parent
DECODE = (
    "import cv2, time\nend = time.time() + {s}\nwhile time.time() < end:\n"
    "    c = cv2.VideoCapture({clip!r})\n    while time.time() < end and c.read()[0]:\n        pass\n"
)
SPIN = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    pass\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    it = Interpreter(model_path=str(ROOT / "models" / f"{args.model}.tflite"), num_threads=1)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    x = np.zeros(inp["shape"], inp["dtype"])

    def median_ms() -> float:
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            it.set_tensor(inp["index"], x)
            it.invoke()
            it.get_tensor(out["index"])
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1e3

    def beside(code: str) -> float:
        seconds = args.runs * 0.03 + 1  # outlasts the loop
        script = code.format(s=seconds, clip=str(ROOT / "resources" / "demo.mp4"))
        neighbour = subprocess.Popen([sys.executable, "-c", script])
        time.sleep(0.5)  # let it start working
        try:
            return median_ms()
        finally:
            neighbour.kill()
            neighbour.wait()

    median_ms()  # warm-up
    print(f"{args.model}, 1 thread, median of {args.runs} runs")
    for i in range(args.pairs):
        alone, decoding, spinning = median_ms(), beside(DECODE), beside(SPIN)
        print(
            f"pair {i + 1}: alone {alone:.2f} ms; beside a decoder {decoding:.2f} ({decoding / alone - 1:+.1%}); "
            f"beside a Python spinner {spinning:.2f} ({spinning / alone - 1:+.1%})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
