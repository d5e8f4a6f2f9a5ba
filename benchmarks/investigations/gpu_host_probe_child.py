"""One question of benchmarks/investigations/gpu_host_probe.py in a process of its own; prints one JSON line.

python -m benchmarks.investigations.gpu_host_probe_child preprocess MODEL CV2_THREADS(0: OpenCV's default)
python -m benchmarks.investigations.gpu_host_probe_child gil MODEL SLEEP_MS
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness.spinner import Spinner


def preprocess(model: str, threads: str) -> dict[str, Any]:
    """Preprocessing alone: ms per frame of the synthetic source and of the demo clip."""
    import cv2

    from app.model.preprocess import Preprocessor
    from app.model.spec import load_model_spec
    from app.sources import open_source

    if int(threads):
        cv2.setNumThreads(int(threads))
    pre = Preprocessor(load_model_spec(model))
    out: dict[str, Any] = {"cv2_threads": cv2.getNumThreads()}
    for spec in ("synthetic", "demo"):
        image = open_source(spec, pace=False).read().image
        for _ in range(20):
            pre.from_rgb(pre.rgb(image), out=np.empty_like(pre.output_buffer))
        t = time.perf_counter()
        for _ in range(500):
            pre.from_rgb(pre.rgb(image), out=np.empty_like(pre.output_buffer))
        out[spec + "_ms"] = (time.perf_counter() - t) / 500 * 1e3
    return out


def gil(model: str, sleep_ms: str) -> dict[str, Any]:
    """A Python counter thread's rate while the raw GPU loop (the wrapper's CompiledModel) runs, against
    its rate alone; per call of the loop, how much of the call the counter could run."""
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator
    from ai_edge_litert.options import Options

    accelerators = HardwareAccelerator.GPU | HardwareAccelerator.CPU
    m = CompiledModel.from_file(model, options=Options(hardware_accelerators=accelerators))
    ins, outs = m.create_input_buffers(0), m.create_output_buffers(0)
    x = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
    sleep_s = float(sleep_ms) / 1e3
    spans = {"write": [0.0, 0], "run": [0.0, 0], "sleep": [0.0, 0], "read": [0.0, 0]}
    for _ in range(20):  # warm-up, before the counter starts
        ins[0].write(x)
        m.run_by_index(0, ins, outs)
        if sleep_s:
            time.sleep(sleep_s)
        outs[0].read(1000, np.float32)
    with Spinner() as counter:

        def timed(name: str, fn: Callable[[], object]) -> None:
            c, t = counter.count, time.perf_counter()
            fn()
            spans[name][0] += time.perf_counter() - t
            spans[name][1] += counter.count - c

        def once() -> None:
            timed("write", lambda: ins[0].write(x))
            timed("run", lambda: m.run_by_index(0, ins, outs))
            if sleep_s:
                timed("sleep", lambda: time.sleep(sleep_s))
            timed("read", lambda: outs[0].read(1000, np.float32))

        time.sleep(0.5)
        c0 = counter.count
        time.sleep(0.5)
        alone = (counter.count - c0) / 0.5
        for v in spans.values():
            v[0] = v[1] = 0
        c0, t0 = counter.count, time.perf_counter()
        for _ in range(900):
            once()
        wall = time.perf_counter() - t0
        during = (counter.count - c0) / wall
    return {"sleep_ms": sleep_s * 1e3, "rate": 900 / wall, "share_of_alone": during / alone,
            "per_call": {k: {"ms": v[0] / 900 * 1e3, "gil_free_share": v[1] / alone / v[0] if v[0] else None}
                         for k, v in spans.items()}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("preprocess", "gil"))
    parser.add_argument("model")
    parser.add_argument("value", help="preprocess: OpenCV's threads (0: its default); gil: ms to sleep before a read")
    args = parser.parse_args(argv)
    print(json.dumps({"preprocess": preprocess, "gil": gil}[args.kind](args.model, args.value)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
