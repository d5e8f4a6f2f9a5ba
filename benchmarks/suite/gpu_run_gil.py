"""How fast another Python thread runs while GPU inferences go on back to back, against alone: what the GPU
session's runs through the C API (ctypes: the GIL given up for the run) leave the pipeline's other threads.

    python -m benchmarks.suite.gpu_run_gil [--model efficientnet_lite0_int8] [--seconds 1] [--rounds 5] [--json FILE]

A thread counts in a tight Python loop (it needs the GIL for every step); each round counts its steps per
second while this thread runs the model on the GPU back to back, then while this thread sleeps. With the
GIL held through a run (LiteRT's Python wrapper) the ratio is next to nothing; with it given up, the
spinner competes for the CPUs with the driver's threads only (on SwiftShader, a software Vulkan driver on
two cores, a 2-core VM read over 0.2). Needs a Vulkan driver: a GPU's, or SwiftShader
(VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json, Debian package chromium). tests/test_backend_gpu.py checks
that a run gives the GIL up, by a hand-off rather than a clock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.harness.children import write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8", help="a bundled model's name or a .tflite path")
    parser.add_argument("--seconds", type=float, default=1.0, help="each phase of a round, at least")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    from app.backends.gpu.backend import GpuSession
    from app.model.spec import load_model_spec

    spec = load_model_spec(args.model)
    session = GpuSession(spec, "fp16", 1, allow_software=True)
    x = np.zeros(spec.input.shape, spec.input.dtype)
    session.run(x)
    count, stop = [0], threading.Event()

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    threading.Thread(target=spin, daemon=True).start()
    time.sleep(0.2)
    rows = []
    try:
        for _ in range(args.rounds):
            runs, before, start = 0, count[0], time.perf_counter()
            while runs < 3 or time.perf_counter() - start < args.seconds:
                session.run(x)
                runs += 1
            during = (count[0] - before) / (time.perf_counter() - start)
            before, start = count[0], time.perf_counter()
            time.sleep(args.seconds)
            alone = (count[0] - before) / (time.perf_counter() - start)
            rows.append({"runs": runs, "during_per_s": during, "alone_per_s": alone, "ratio": during / alone})
    finally:
        stop.set()
        session.close()
    ratios = [r["ratio"] for r in rows]
    print(f"{spec.path.name} on {session.report.used}: a Python spinner's pace during GPU runs / alone")
    print("| round | runs | spins/s during | spins/s alone | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for i, r in enumerate(rows):
        print(f"| {i + 1} | {r['runs']} | {r['during_per_s']:,.0f} | {r['alone_per_s']:,.0f} | {r['ratio']:.2f} |")
    print(f"median ratio {statistics.median(ratios):.2f}")
    write_json(args.json, {"model": str(spec.path), "rounds": rows, "median_ratio": statistics.median(ratios)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
