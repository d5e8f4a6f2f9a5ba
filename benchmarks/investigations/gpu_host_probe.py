"""Why a GPU pipeline's capture thread is slow on a many-core host: preprocessing alone (with
OpenCV's default thread pool and with one thread), and whether the GPU run leaves the GIL
free for other threads (a Python counter thread's rate while the raw GPU loop runs, against
its rate alone). One process per question; prints one JSON line each.

    python benchmarks/gpu_host_probe.py [--model models/efficientnet_lite0.tflite]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PREPROCESS = """
import json, sys, time
import cv2, numpy as np
from app.model.spec import load_model_spec
from app.model.preprocess import Preprocessor
from app.sources import open_source
threads = int(sys.argv[2])
if threads:
    cv2.setNumThreads(threads)
pre = Preprocessor(load_model_spec(sys.argv[1]))
out = {"cv2_threads": cv2.getNumThreads()}
for spec in ("synthetic", "demo"):
    image = open_source(spec, pace=False).read().image
    for _ in range(20):
        pre.from_rgb(pre.rgb(image), out=np.empty_like(pre.output_buffer))
    t = time.perf_counter()
    for _ in range(500):
        pre.from_rgb(pre.rgb(image), out=np.empty_like(pre.output_buffer))
    out[spec + "_ms"] = (time.perf_counter() - t) / 500 * 1e3
print(json.dumps(out))
"""

GIL = """
import json, sys, threading, time
import numpy as np
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator
from ai_edge_litert.options import Options
accelerators = HardwareAccelerator.GPU | HardwareAccelerator.CPU
m = CompiledModel.from_file(sys.argv[1], options=Options(hardware_accelerators=accelerators))
ins, outs = m.create_input_buffers(0), m.create_output_buffers(0)
x = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
sleep_s = float(sys.argv[2]) / 1e3
count, stop = [0], [False]
def spin():
    while not stop[0]:
        count[0] += 1
spans = {"write": [0.0, 0], "run": [0.0, 0], "sleep": [0.0, 0], "read": [0.0, 0]}
def timed(name, fn):
    c, t = count[0], time.perf_counter()
    fn()
    spans[name][0] += time.perf_counter() - t
    spans[name][1] += count[0] - c
def once():
    timed("write", lambda: ins[0].write(x))
    timed("run", lambda: m.run_by_index(0, ins, outs))
    if sleep_s:
        timed("sleep", lambda: time.sleep(sleep_s))
    timed("read", lambda: outs[0].read(1000, np.float32))
for _ in range(20):
    once()
t = threading.Thread(target=spin); t.start()
time.sleep(0.5); c0 = count[0]; time.sleep(0.5); alone = (count[0] - c0) / 0.5
for v in spans.values():
    v[0] = v[1] = 0
c0, t0 = count[0], time.perf_counter()
for _ in range(900):
    once()
wall = time.perf_counter() - t0
during = (count[0] - c0) / wall
stop[0] = True; t.join()
print(json.dumps({"sleep_ms": sleep_s * 1e3, "rate": 900 / wall, "share_of_alone": during / alone,
                  "per_call": {k: {"ms": v[0] / 900 * 1e3, "gil_free_share": v[1] / alone / v[0] if v[0] else None}
                               for k, v in spans.items()}}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "efficientnet_lite0.tflite"))
    args = parser.parse_args()
    runs = [("preprocess, OpenCV's default threads", PREPROCESS, ["0"]),
            ("preprocess, OpenCV on 1 thread", PREPROCESS, ["1"]),
            ("GIL while the raw GPU loop runs", GIL, ["0"]),
            ("GIL, sleeping 0.3 ms before the read", GIL, ["0.3"]),
            ("GIL, sleeping 0.6 ms before the read", GIL, ["0.6"])]  # fmt: skip
    for name, code, extra in runs:
        command = [sys.executable, "-c", code, args.model, *extra]
        proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        line = (proc.stdout.strip().splitlines() or [proc.stderr.strip().splitlines()[-1]])[-1]
        print(f"{name}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
