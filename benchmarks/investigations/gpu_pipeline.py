"""The pipeline on a real GPU against the raw in-process GPU loop, side by side in one run.

For `--rounds` rounds, each variant in its own process, alternated:

- raw: the Python wrapper's CompiledModel with the GPU accelerator, one fixed input: write,
  run_by_index, read, with and without LiteRT's `hint_waiting_for_completion`; its median ms,
  rate, and CPU time of the calling thread and of the process per run (does the wait spin or
  sleep?). The wrapper holds the GIL through the run, and its default precision is not fp16.
- raw C: the same loop through LiteRT's C API (`app/backends/litert_c.py`, what GpuSession.run
  does since it stopped using the wrapper), fp16 and fp32, with and without the wait hint, with
  the I/O buffers over numpy arrays (the default) or as the runtime made them. Each
  pipeline run is compared with the raw C loop of its own precision (same API, same options).
- bench: the full pipeline (run_bench, unpaced) on the synthetic source and on the demo clip,
  with the inference thread pinned by backend (the default) or not, with the wait hint, the
  demo clip decoded by two threads; and the CPU backend with 8 threads.

Prints one line per run and a table of medians over rounds (pipeline rate / raw rate per
round, medians), and writes every figure to --json.

    python benchmarks/gpu_pipeline.py [--model efficientnet_lite0] [--rounds 3] [--frames 900]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Shared by the child scripts below: `once(i)` run 20 times to warm up, then `runs` times, timed;
# the test inputs; what an output says of the precision that made it.
TIMED = """
import statistics, time
import numpy as np
def timed(once, runs):
    for i in range(20):
        once(i)
    times = []
    c0, p0, start = time.thread_time(), time.process_time(), time.perf_counter()
    for i in range(runs):
        t0 = time.perf_counter(); once(i); times.append((time.perf_counter() - t0) * 1e3)
    wall = time.perf_counter() - start
    return {"ms_p50": statistics.median(times), "rate": runs / wall,
            "thread_cpu_ms": (time.thread_time() - c0) / runs * 1e3,
            "process_cpu_ms": (time.process_time() - p0) / runs * 1e3}
def inputs(n):  # n different float32 images, the same in every child
    return [np.random.default_rng(i).random((1, 224, 224, 3), dtype=np.float32) for i in range(n)]
def output_facts(out):  # which precision ran: fp16 and fp32 give different sums (docs/benchmarks.md)
    order = sorted(range(len(out)), key=lambda k: -out[k])
    return {"top5": [int(k) for k in order[:5]], "out_sum": float(out.sum()), "out_max": float(out.max())}
"""

RAW = (
    TIMED
    + """
import json, sys
import numpy as np
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.gpu_options import GpuOptions
from ai_edge_litert.hardware_accelerator import HardwareAccelerator
from ai_edge_litert.options import Options
model, runs, hint = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
options = Options(hardware_accelerators=HardwareAccelerator.GPU | HardwareAccelerator.CPU,
                  gpu_options=GpuOptions(hint_waiting_for_completion=hint))
m = CompiledModel.from_file(model, options=options)
inputs, outputs = m.create_input_buffers(0), m.create_output_buffers(0)
x = inputs(1)[0]
def once(_):
    inputs[0].write(x); m.run_by_index(0, inputs, outputs); outputs[0].read(1000, np.float32)
result = timed(once, runs)
out = outputs[0].read(1000, np.float32)
print(json.dumps({**result, **output_facts(out), "fully_accelerated": bool(m.is_fully_accelerated())}))
"""
)

RAW_C = (
    TIMED
    + """
import json, sys
import numpy as np
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
model, runs, hint, precision = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
NativeModel.HOST_BUFFERS = sys.argv[5] == "1"
content = open(model, "rb").read()
m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision=precision, wait_hint=hint)
x = inputs(1)[0]
out = np.empty(1000, np.float32)
result = timed(lambda _: m.run_tensor(x, out), runs)
print(json.dumps({**result, **output_facts(out), "fully_accelerated": m.is_fully_accelerated()}))
"""
)

SAME_PROCESS = (
    TIMED
    + """
import json, sys
import numpy as np
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.tasks.bench import BenchConfig, run_bench
from app.pipeline import InferenceConfig
a = json.loads(sys.argv[1])
if a.get("quiet_meters"):  # the runtime threads' CPU read once, the sampler every 5 s without NVML
    import app.tasks.bench, app.metrics.resources, app.system.thread_cpu
    app.system.thread_cpu.READ_EVERY_S = 1e9
    app.tasks.bench.ResourceSampler = lambda: app.metrics.resources.ResourceSampler(interval_s=5.0, gpu=False)
if a.get("runtime_buffers"):  # the loops and the GPU session on the runtime's own buffers (lock, copy, unlock)
    NativeModel.HOST_BUFFERS = False
content = open(a["model"], "rb").read()
def raw_loop():
    m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision="fp16")
    # "cold": a different input each run, 30 in turn, as the synthetic source's 30 images give the pipeline
    xs = inputs(30 if a.get("cold") else 1)
    out = np.empty(1000, np.float32)
    rate = timed(lambda i: m.run_tensor(xs[i % len(xs)], out), a["frames"])["rate"]
    m.close()
    return rate
before = raw_loop()
s = run_bench(BenchConfig(source="synthetic", frames=a["frames"], warmup=30, pace=False, pin_cpus=a["pin"]),
              InferenceConfig(model=a["model"], delegate="gpu", fallback=False))
after = raw_loop()
rate = s["metrics"]["inference_fps"]
print(json.dumps({"rate": rate, "ms_p50": s["metrics"]["latency"]["inference"]["p50"], "raw_before": before,
                  "raw_after": after, "ratio": rate / ((before + after) / 2), "bottleneck": s["bottleneck"]}))
"""
)

# The references and the pipeline in one process, in short turns: the GPU's speed drifts by 10-25%
# over seconds (even within a process), so each pipeline turn is compared with the loops' turns
# just before it. A turn: the Python wrapper's loop, the C loop on the runtime's buffers, the C loop
# on host-memory buffers, then bench on each kind of buffer (the session's NativeModel is opened per
# bench; HOST_BUFFERS is read when it is).
INTERLEAVED = (
    TIMED
    + """
import json, statistics, sys
import numpy as np
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator
from ai_edge_litert.options import Options
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.tasks.bench import BenchConfig, run_bench
from app.pipeline import InferenceConfig
a = json.loads(sys.argv[1])
n, model = a["frames"], a["model"]
xs = inputs(30)
gpu = HardwareAccelerator.GPU | HardwareAccelerator.CPU
w = CompiledModel.from_file(model, options=Options(hardware_accelerators=gpu))
wi, wo = w.create_input_buffers(0), w.create_output_buffers(0)
def wrapper(i):
    wi[0].write(xs[i % 30]); w.run_by_index(0, wi, wo); wo[0].read(1000, np.float32)
content = open(model, "rb").read()
native = {}
for host in (False, True):
    NativeModel.HOST_BUFFERS = host
    native[host] = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision="fp16")
out = np.empty(1000, np.float32)
def bench(host):
    NativeModel.HOST_BUFFERS = host
    s = run_bench(BenchConfig(source="synthetic", frames=n, warmup=30, pace=False, pin_cpus=True),
                  InferenceConfig(model=model, delegate="gpu", fallback=False, options=a.get("options", {})))
    return s["metrics"]["inference_fps"]
turns = []
for _ in range(a["cycles"]):
    t = {"wrapper": timed(wrapper, n)["rate"],
         "C runtime buffers": timed(lambda i: native[False].run_tensor(xs[i % 30], out), n)["rate"],
         "C host buffers": timed(lambda i: native[True].run_tensor(xs[i % 30], out), n)["rate"],
         "bench runtime buffers": bench(False), "bench host buffers": bench(True)}
    turns.append(t)
    print(json.dumps({k: round(v) for k, v in t.items()}), file=sys.stderr, flush=True)
ratio = lambda x, y: round(statistics.median(t[x] / t[y] for t in turns), 3)
spread = lambda x, y: [round(min(t[x] / t[y] for t in turns), 3), round(max(t[x] / t[y] for t in turns), 3)]
print(json.dumps({"turns": turns, "rate": statistics.median(t["bench runtime buffers"] for t in turns),
                  **{f"{x} / {y}": {"median": ratio(x, y), "range": spread(x, y)} for x, y in [
                      ("bench runtime buffers", "wrapper"), ("bench runtime buffers", "C runtime buffers"),
                      ("bench host buffers", "wrapper"), ("bench host buffers", "C host buffers"),
                      ("C runtime buffers", "wrapper"), ("C host buffers", "wrapper")]}}))
"""
)

BENCH = """
import json, sys
import cv2
from app.tasks.bench import BenchConfig, run_bench
from app.pipeline import InferenceConfig
a = json.loads(sys.argv[1])
if a.get("cv2_threads"):
    cv2.setNumThreads(a["cv2_threads"])
if a.get("runtime_buffers"):  # the GPU session's buffers as LiteRT made them (lock, copy, unlock)
    from app.backends.litert_c import NativeModel
    NativeModel.HOST_BUFFERS = False
if a.get("switch_interval"):
    sys.setswitchinterval(a["switch_interval"])
if a.get("no_repeats"):  # the code before repeated images were preprocessed once: a zero budget
    from app.pipeline.rgb_cache import RgbCache
    RgbCache.__init__.__defaults__ = (8, 0)
s = run_bench(BenchConfig(source=a["source"], frames=a["frames"], warmup=30, pace=False, pin_cpus=a["pin"],
                          inference_cpus=a.get("inference_cpus"), decode_threads=a.get("decode_threads")),
              InferenceConfig(model=a["model"], delegate=a["delegate"], options=a["options"], fallback=False))
m = s["metrics"]
print(json.dumps({"rate": m["inference_fps"], "ms_p50": m["latency"]["inference"]["p50"],
                  "cpu_ms": m["cpu_ms_per_inference"], "cpu_per_wall": m["cpu_per_wall"],
                  "gpu_busy_ms": m.get("gpu_busy_ms_per_inference"), "gpu_util_pct": m.get("gpu_util_pct"),
                  "bottleneck": s["bottleneck"], "cpu_affinity": s["cpu_affinity"],
                  "used": (s["delegate"] or {}).get("used"), "status": s["status"],
                  "preprocess_ms_p50": m["latency"]["preprocess"]["p50"], "preprocessing": s.get("preprocessing")}))
"""


def variants(model: str, frames: int) -> dict[str, tuple[str, list[str]]]:
    gpu = {"model": model, "delegate": "gpu", "options": {}, "frames": frames, "pin": True}
    cpu8 = {"model": model, "delegate": "cpu", "options": {"threads": 8}, "frames": frames, "pin": True}
    out: dict[str, tuple[str, list[str]]] = {
        "raw gpu": ("raw", [model, str(frames), "0"]),
        "raw gpu, wait hint": ("raw", [model, str(frames), "1"]),
        "raw C gpu fp16": ("raw_c", [model, str(frames), "0", "fp16", "1"]),
        "raw C gpu fp32": ("raw_c", [model, str(frames), "0", "fp32", "1"]),
        "raw C gpu fp16, wait hint": ("raw_c", [model, str(frames), "1", "fp16", "1"]),
        "raw C gpu fp16, the runtime's buffers": ("raw_c", [model, str(frames), "0", "fp16", "0"]),
    }
    bench = {
        "bench gpu synthetic fp32 (pinned by backend)": {
            **gpu, "source": "synthetic", "options": {"precision": "fp32"}},
        "bench gpu synthetic (pinned by backend)": {**gpu, "source": "synthetic"},
        "bench gpu synthetic (not pinned)": {**gpu, "source": "synthetic", "pin": False},
        "bench gpu synthetic (pinned, the runtime's buffers)": {**gpu, "source": "synthetic", "runtime_buffers": True},
        "bench gpu synthetic (pinned, every frame preprocessed)": {**gpu, "source": "synthetic", "no_repeats": True},
        "bench gpu synthetic (pinned, wait hint)": {**gpu, "source": "synthetic", "options": {"wait_hint": True}},
        "bench gpu synthetic (pinned, GIL switch interval 0.5 ms)": {
            **gpu, "source": "synthetic", "switch_interval": 0.0005},
        "bench gpu synthetic (pinned, GIL switch interval 0.1 ms)": {
            **gpu, "source": "synthetic", "switch_interval": 0.0001},
        "bench gpu demo (pinned, GIL switch interval 0.5 ms)": {**gpu, "source": "demo", "switch_interval": 0.0005},
        "bench gpu demo (pinned by backend)": {**gpu, "source": "demo"},
        "bench gpu demo (not pinned)": {**gpu, "source": "demo", "pin": False},
        "bench gpu demo (pinned, 2 decoding threads)": {**gpu, "source": "demo", "decode_threads": 2},
        "bench gpu demo (pinned, 1 decoding thread)": {**gpu, "source": "demo", "decode_threads": 1},
        "bench cpu 8 threads synthetic": {**cpu8, "source": "synthetic"},
        "bench cpu 8 threads demo": {**cpu8, "source": "demo"},
        "bench cpu 8 threads demo (1 decoding thread)": {**cpu8, "source": "demo", "decode_threads": 1},
    }  # fmt: skip
    out.update({name: ("bench", [json.dumps(args)]) for name, args in bench.items()})
    # The raw C loop, the pipeline and the raw C loop again in one process: the GPU run's speed moved
    # 15-25% between processes, more than the pipeline's overhead; within a process it is one state.
    out["same process: raw C loop, bench gpu synthetic, raw C loop"] = ("same", [json.dumps(gpu)])
    out["same process, not pinned: raw C loop, bench gpu synthetic, raw C loop"] = (
        "same",
        [json.dumps({**gpu, "pin": False})],
    )
    out["same process, loops on 30 inputs: raw C loop, bench gpu synthetic, raw C loop"] = (
        "same",
        [json.dumps({**gpu, "cold": True})],
    )
    out["same process, the runtime's buffers: raw C loop, bench gpu synthetic, raw C loop"] = (
        "same",
        [json.dumps({**gpu, "runtime_buffers": True})],
    )
    out["same process, quiet meters: raw C loop, bench gpu synthetic, raw C loop"] = (
        "same",
        [json.dumps({**gpu, "quiet_meters": True})],
    )
    out["interleaved: wrapper loop, C loops, bench, in turns in one process"] = (
        "interleaved",
        [json.dumps({"model": model, "frames": min(frames, 800), "cycles": 8})],
    )
    return out


def run(kind: str, args: list[str]) -> dict:
    code = {"raw": RAW, "raw_c": RAW_C, "bench": BENCH, "same": SAME_PROCESS, "interleaved": INTERLEAVED}[kind]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "efficientnet_lite0.tflite"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=900)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*", help="run only the variants whose name contains one of these")
    args = parser.parse_args()
    runs = variants(args.model, args.frames)
    if args.only:
        references = ("raw gpu", "raw C gpu fp16", "raw C gpu fp32")  # every ratio's denominators
        runs = {k: v for k, v in runs.items() if k in references or any(word in k for word in args.only)}
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for r in range(args.rounds):
        for name, (kind, argv) in runs.items():
            result = run(kind, argv)
            results[name].append(result)
            print(f"round {r + 1} | {name} | {json.dumps(result)}", flush=True)
    print(
        "\n| run | rate /s (median) | / raw Python-wrapper loop, per round (median) "
        "| / raw C loop of its precision (median) | inference ms p50 | CPU ms / inference |"
    )
    print("| --- | --- | --- | --- | --- | --- |")

    def ratio(rows: list[dict], reference: str) -> str:
        raw = results.get(reference)
        if not raw:
            return "–"
        ratios = [x["rate"] / y["rate"] for x, y in zip(rows, raw, strict=True) if "rate" in x and "rate" in y]
        return f"{statistics.median(ratios):.3f}" if ratios else "–"

    for name, rows in results.items():
        ok = [x for x in rows if "rate" in x]
        if not ok:
            print(f"| {name} | failed: {rows[-1].get('error')} | | | | |")
            continue
        if name.startswith("interleaved"):  # its own ratios, per turn; no single rate or latency
            for key in [k for k in ok[0] if " / " in k]:
                medians = [x[key]["median"] for x in ok]
                print(f"| {name}: {key} | | | {statistics.median(medians):.3f} (per process: {medians}) | | |")
            continue
        cpu = statistics.median(x.get("cpu_ms", x.get("thread_cpu_ms", 0.0)) for x in ok)
        rate, ms = statistics.median(x["rate"] for x in ok), statistics.median(x["ms_p50"] for x in ok)
        same = "raw C gpu fp32" if "fp32" in name else "raw C gpu fp16"
        own = ratio(rows, same) if name.startswith("bench gpu") else "–"
        if name.startswith("same process"):
            own = f"{statistics.median(x['ratio'] for x in ok):.3f} (to its own loops, in-process)"
        print(f"| {name} | {rate:.0f} | {ratio(rows, 'raw gpu')} | {own} | {ms:.3f} | {cpu:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
