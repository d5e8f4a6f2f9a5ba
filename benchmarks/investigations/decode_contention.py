"""How much a decoder on the other core slows the model: the raw LiteRT loop alone, beside a
process that only decodes the demo clip, and beside a pure-Python spinner, alternated.

On a 2-core machine the pipeline's capture thread decodes and preprocesses the next frame
while the model runs; this isolates that effect from the pipeline's own machinery
(docs/performance.md, "The pipeline against LiteRT's own benchmark_model").

    python -m benchmarks.investigations.decode_contention [--model efficientnet_lite0_int8] [--pairs 3]

The neighbours are benchmarks/investigations/decode_contention_child.py.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from benchmarks.harness.children import module_command
from benchmarks.harness.loops import InterpreterLoop
from benchmarks.harness.paths import DEMO_CLIP, ROOT, model_path
from benchmarks.harness.rounds import alternate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args(argv)
    loop = InterpreterLoop(model_path(args.model), 1, fill="zeros")

    def median_ms() -> float:
        return loop.run(args.runs).median_ms

    def beside(kind: str) -> float:
        seconds = args.runs * 0.03 + 1  # outlasts the loop
        child = module_command("benchmarks.investigations.decode_contention_child", kind, str(seconds), str(DEMO_CLIP))
        neighbour = subprocess.Popen(child, cwd=ROOT)
        time.sleep(0.5)  # let it start working
        try:
            return median_ms()
        finally:
            neighbour.kill()
            neighbour.wait()

    def report(i: int, r: dict[str, float]) -> None:
        alone, decoding, spinning = r["alone"], r["decoder"], r["spinner"]
        print(
            f"pair {i + 1}: alone {alone:.2f} ms; beside a decoder {decoding:.2f} ({decoding / alone - 1:+.1%}); "
            f"beside a Python spinner {spinning:.2f} ({spinning / alone - 1:+.1%})"
        )

    median_ms()  # warm-up
    print(f"{args.model}, 1 thread, median of {args.runs} runs")
    legs = {"alone": median_ms, "decoder": lambda: beside("decode"), "spinner": lambda: beside("spin")}
    alternate(legs, args.pairs, rotate=False, report=report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
