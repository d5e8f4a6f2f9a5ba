"""Where one GPU inference's time goes: the raw C loop against the pipeline, in one process, the run
timed from inside C.

Each native run is wrapped by a small C helper that reads CLOCK_MONOTONIC (the clock of
time.perf_counter on Linux) just before and after LiteRtRunCompiledModel, so a run splits into:
write (the input copy), enter (ctypes and giving the GIL up), native (the run itself), exit (taking
the GIL back), read (the output), and the gap to the next write (the inference thread's own
Python: the slot, the hand-off, timing). The pipeline's parts of that gap are timed too. Three
phases per process: the C loop (gpu_pipeline.py's timing loop and inputs), `bench` on the synthetic
source, the C loop again.

    python benchmarks/gpu_run_anatomy.py [--frames 2000] [--processes 3] [--helper timed.so]

The helper is compiled with `cc` into a temporary folder unless --helper names a built one
(a machine without a compiler: build it elsewhere with `cc -O2 -shared -fPIC`). Linux only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gpu_pipeline import TIMED

ROOT = Path(__file__).resolve().parent.parent

HELPER_C = r"""
#include <stdint.h>
#include <stddef.h>
#include <time.h>
typedef int (*run_fn)(void*, size_t, size_t, void*, size_t, void*);
static int64_t now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}
int timed_run(run_fn fn, void* m, size_t sig, size_t nin, void* in, size_t nout, void* out, int64_t* ns) {
    ns[0] = now(); int status = fn(m, sig, nin, in, nout, out); ns[1] = now(); return status;
}
"""

CHILD = TIMED + r"""
import collections, ctypes as C, json, sys
import app.backends.litert_c as L
from app.backends import gpu as G
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.tasks.bench import BenchConfig, run_bench
from app.pipeline import InferenceConfig
from app.pipeline import worker as W
from app.pipeline.frame_slot import LatestFrameSlot
from app.pipeline.handoff import Handoff
from app.pipeline.rgb_cache import RgbCache
assert time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
helper, model, N, software = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
T = C.CDLL(helper)
_P = C.c_void_p
T.timed_run.argtypes = [_P, _P, C.c_size_t, C.c_size_t, _P, C.c_size_t, _P, _P]
pc = time.perf_counter_ns
RUNS, PARTS = [], collections.defaultdict(list)
def run_tensor(self, tensor, out):  # NativeModel.run_tensor, with the run timed inside C
    a = pc(); self.write_input(tensor); b = pc()
    ns = (C.c_int64 * 2)()
    status = T.timed_run(C.cast(self._lib.LiteRtRunCompiledModel, _P), self._compiled, 0, len(self._inputs),
                         self._inputs, len(self._outputs), self._outputs, ns)
    c = pc()
    L._check(status, "run the model", L.NativeRunFailed)
    self._read_output(out); d = pc()
    RUNS.append((a, b, ns[0], ns[1], c, d))
    return out
NativeModel.run_tensor = run_tensor
def timed_part(cls, name, label):
    original = getattr(cls, name)
    def timed(*args, **kwargs):
        t0 = pc(); result = original(*args, **kwargs); PARTS[label].append((t0, pc())); return result
    setattr(cls, name, timed)
for cls, name, label in [(LatestFrameSlot, "take", "slot.take"), (RgbCache, "tensor", "rgb_cache.tensor"),
                         (Handoff, "put", "handoff.put"), (W.InferenceWorker, "_infer", "_infer"),
                         (G.GpuSession, "run", "session.run")]:
    timed_part(cls, name, label)
us = lambda xs: round(statistics.median(xs) / 1e3, 1) if xs else None
def anatomy(runs):
    runs = runs[min(50, len(runs) // 3):]
    pairs = range(len(runs) - 1)
    return {"write": us([r[1] - r[0] for r in runs]), "enter": us([r[2] - r[1] for r in runs]),
            "native": us([r[3] - r[2] for r in runs]), "exit": us([r[4] - r[3] for r in runs]),
            "read": us([r[5] - r[4] for r in runs]), "gap": us([runs[i + 1][0] - runs[i][5] for i in pairs]),
            "period_mean": round(statistics.mean(runs[i + 1][0] - runs[i][0] for i in pairs) / 1e3, 1)}
content = open(model, "rb").read()
def loop():
    RUNS.clear()
    m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision="fp16")
    xs, out = inputs(30), np.empty(1000, np.float32)
    rate = timed(lambda i: m.run_tensor(xs[i % 30], out), N)["rate"]
    m.close()
    return {"rate": round(rate), **anatomy(list(RUNS))}
def bench():
    RUNS.clear(); PARTS.clear()
    s = run_bench(BenchConfig(source="synthetic", frames=N, warmup=30, pace=False, pin_cpus=True),
                  InferenceConfig(model=model, delegate="gpu", fallback=False, options={"allow_software": software}))
    parts = {k: us([b - a for a, b in v[min(50, len(v) // 3):]]) for k, v in PARTS.items()}
    return {"rate": round(s["metrics"]["inference_fps"]), "bound": (s["bottleneck"] or {}).get("stage"),
            **anatomy(list(RUNS)), "parts": parts}
print(json.dumps([{"phase": name, **fn()} for name, fn in [("loop", loop), ("bench", bench), ("loop", loop)]]))
"""

KEYS = ("rate", "write", "enter", "native", "exit", "read", "gap", "period_mean")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "efficientnet_lite0.tflite"))
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--helper", type=Path, help="the C helper, built (default: compile it with cc)")
    parser.add_argument("--allow-software", action="store_true", help="accept a software Vulkan driver (a dry run)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        helper = args.helper
        if helper is None:
            if not shutil.which("cc"):
                print("no C compiler (cc): build the helper elsewhere and pass --helper", file=sys.stderr)
                return 2
            (Path(tmp) / "timed.c").write_text(HELPER_C)
            helper = Path(tmp) / "timed.so"
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(helper), str(Path(tmp) / "timed.c")], check=True)
        columns = " | ".join(f"{k} us (p50)" for k in KEYS[1:-1])
        print(f"| process | phase | rate /s | {columns} | period us (mean) |")
        print("| --- " * (len(KEYS) + 2) + "|")
        for p in range(args.processes):
            proc = subprocess.run([sys.executable, "-c", CHILD, str(helper.resolve()), args.model, str(args.frames),
                                   "1" if args.allow_software else "0"],
                                  capture_output=True, text=True, cwd=ROOT, timeout=600)  # fmt: skip
            lines = proc.stdout.strip().splitlines()
            if proc.returncode != 0 or not lines:
                print(f"| {p + 1} | failed: {(proc.stderr.strip().splitlines() or ['no output'])[-1]} |")
                continue
            for phase in json.loads(lines[-1]):
                row = " | ".join(str(phase.get(k)) for k in KEYS)
                parts = f" parts: {phase['parts']}" if "parts" in phase else ""
                print(f"| {p + 1} | {phase['phase']} | {row} |{parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
