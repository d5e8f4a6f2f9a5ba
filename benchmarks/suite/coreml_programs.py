"""Time the Core ML program path without a Mac: split, translate, convert, cache build and cache hit.

For each round, in this one process (coremltools imported once, without TensorFlow): split the model
at the delegate's partitions; translate and convert every delegated piece; open through a fresh
cache (build) and then through the same cache again (hit). Prints medians and ranges in seconds.

    python -m benchmarks.suite.coreml_programs [--model models/efficientnet_lite0.tflite] [--rounds 5]
        [--precision fp16] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from app.coreml_mil.cache import ProgramCache
from app.coreml_mil.coremltools_import import import_coremltools
from app.coreml_mil.programs import load_or_convert, split_model
from app.coreml_mil.translate import convert, translate
from benchmarks.harness.children import write_json
from benchmarks.harness.paths import model_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=model_path("efficientnet_lite0"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--precision", choices=("fp16", "fp32"), default="fp16")
    parser.add_argument("--json", type=Path, help="write every round's seconds here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    import_coremltools()
    print(f"import coremltools (no TensorFlow): {time.perf_counter() - started:.2f} s")
    data = args.model.read_bytes()
    times: dict[str, list[float]] = {"split": [], "translate": [], "convert": [], "build": [], "hit": []}
    for _ in range(args.rounds):
        t = time.perf_counter()
        split = split_model(data)
        times["split"].append(time.perf_counter() - t)
        for piece in split.pieces:
            if piece.delegated:
                t = time.perf_counter()
                translation = translate(data, split.graph, piece)
                t1 = time.perf_counter()
                convert(translation, args.precision)
                t2 = time.perf_counter()
                if len(piece.nodes) == max(len(p.nodes) for p in split.pieces if p.delegated):
                    times["translate"].append(t1 - t)
                    times["convert"].append(t2 - t1)
        with tempfile.TemporaryDirectory() as folder:
            cache = ProgramCache(Path(folder))
            times["build"].append(load_or_convert(data, args.precision, cache=cache).seconds)
            times["hit"].append(load_or_convert(data, args.precision, cache=cache).seconds)
    print(f"{args.model.name}, {args.precision}, {args.rounds} rounds (translate/convert: the largest partition)")
    for name, values in times.items():
        print(f"  {name:9s} median {statistics.median(values):.3f} s  ({min(values):.3f}-{max(values):.3f})")
    write_json(args.json, {"model": args.model.name, "precision": args.precision, "seconds": times})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
