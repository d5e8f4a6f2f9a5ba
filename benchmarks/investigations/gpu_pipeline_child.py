"""The variants of benchmarks/investigations/gpu_pipeline.py, each run in a process of its own; prints
one JSON line. Each imports only what its variant needs (the raw wrapper loop never imports the app).

    python -m benchmarks.investigations.gpu_pipeline_child raw MODEL RUNS HINT(0|1)
    python -m benchmarks.investigations.gpu_pipeline_child raw_c MODEL RUNS HINT PRECISION HOST_BUFFERS(0|1)
    python -m benchmarks.investigations.gpu_pipeline_child bench|same|interleaved JSON_ARGS
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

import numpy as np

from benchmarks.harness.loops import float_inputs, output_facts, timed


def raw(model: str, runs: str, hint: str) -> dict[str, Any]:
    """The Python wrapper's CompiledModel on the GPU: write, run_by_index, read, one fixed input."""
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.gpu_options import GpuOptions
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator
    from ai_edge_litert.options import Options

    options = Options(hardware_accelerators=HardwareAccelerator.GPU | HardwareAccelerator.CPU,
                      gpu_options=GpuOptions(hint_waiting_for_completion=hint == "1"))  # fmt: skip
    m = CompiledModel.from_file(model, options=options)
    ins, outs = m.create_input_buffers(0), m.create_output_buffers(0)
    x = float_inputs(1)[0]

    def once(_: int) -> None:
        ins[0].write(x)
        m.run_by_index(0, ins, outs)
        outs[0].read(1000, np.float32)

    result = timed(once, int(runs))
    out = outs[0].read(1000, np.float32)
    return {**result, **output_facts(out), "fully_accelerated": bool(m.is_fully_accelerated())}


def raw_c(model: str, runs: str, hint: str, precision: str, host_buffers: str) -> dict[str, Any]:
    """The same loop through LiteRT's C API (app/backends/litert_c.py), as GpuSession.run does."""
    from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel

    NativeModel.HOST_BUFFERS = host_buffers == "1"
    content = open(model, "rb").read()
    m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision=precision, wait_hint=hint == "1")
    x = float_inputs(1)[0]
    out = np.empty(1000, np.float32)
    result = timed(lambda _: m.run_tensor(x, out), int(runs))
    return {**result, **output_facts(out), "fully_accelerated": m.is_fully_accelerated()}


def bench(a: dict[str, Any]) -> dict[str, Any]:
    """The full pipeline (run_bench, unpaced), with the variant's settings."""
    import cv2

    from app.pipeline import InferenceConfig
    from app.pipeline.plan import FeedPlan
    from app.tasks.bench import run_bench
    from app.tasks.plan import RunPlan

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
    feed = FeedPlan(a["source"], pace=False, pin_cpus=a["pin"], inference_cpus=a.get("inference_cpus"),
                    decode_threads=a.get("decode_threads"))  # fmt: skip
    inference = InferenceConfig(model=a["model"], delegate=a["delegate"], options=a["options"], fallback=False)
    s = run_bench(RunPlan(inference, feed, frames=a["frames"], warmup=30)).to_dict()
    m = s["metrics"]
    return {"rate": m["inference_fps"], "ms_p50": m["latency"]["inference"]["p50"],
            "cpu_ms": m["cpu_ms_per_inference"], "cpu_per_wall": m["cpu_per_wall"],
            "gpu_busy_ms": m.get("gpu_busy_ms_per_inference"), "gpu_util_pct": m.get("gpu_util_pct"),
            "bottleneck": s["bottleneck"], "cpu_affinity": s["cpu_affinity"],
            "used": (s["delegate"] or {}).get("used"), "status": s["status"],
            "preprocess_ms_p50": m["latency"]["preprocess"]["p50"],
            "preprocessing": s.get("preprocessing")}  # fmt: skip


def same(a: dict[str, Any]) -> dict[str, Any]:
    """The raw C loop, the pipeline and the raw C loop again in one process."""
    from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
    from app.pipeline import InferenceConfig
    from app.pipeline.plan import FeedPlan
    from app.tasks.bench import run_bench
    from app.tasks.plan import RunPlan

    if a.get("quiet_meters"):  # the runtime threads' CPU read once, the sampler every 5 s without NVML
        import app.metrics.resources
        import app.system.thread_cpu
        import app.tasks.bench

        app.system.thread_cpu.READ_EVERY_S = 1e9
        app.tasks.bench.ResourceSampler = lambda: app.metrics.resources.ResourceSampler(interval_s=5.0, gpu=False)
    if a.get("runtime_buffers"):  # the loops and the GPU session on the runtime's own buffers (lock, copy, unlock)
        NativeModel.HOST_BUFFERS = False
    content = open(a["model"], "rb").read()

    def raw_loop() -> float:
        m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision="fp16")
        # "cold": a different input each run, 30 in turn, as the synthetic source's 30 images give the pipeline
        xs = float_inputs(30 if a.get("cold") else 1)
        out = np.empty(1000, np.float32)
        rate: float = timed(lambda i: m.run_tensor(xs[i % len(xs)], out), a["frames"])["rate"]
        m.close()
        return rate

    before = raw_loop()
    feed = FeedPlan("synthetic", pace=False, pin_cpus=a["pin"])
    config = InferenceConfig(model=a["model"], delegate="gpu", fallback=False)
    s = run_bench(RunPlan(config, feed, frames=a["frames"], warmup=30)).to_dict()
    after = raw_loop()
    rate = s["metrics"]["inference_fps"]
    return {"rate": rate, "ms_p50": s["metrics"]["latency"]["inference"]["p50"], "raw_before": before,
            "raw_after": after, "ratio": rate / ((before + after) / 2), "bottleneck": s["bottleneck"]}  # fmt: skip


def interleaved(a: dict[str, Any]) -> dict[str, Any]:
    """The references and the pipeline in one process, in short turns: the GPU's speed drifts by 10-25%
    over seconds (even within a process), so each pipeline turn is compared with the loops' turns just
    before it. A turn: the Python wrapper's loop, the C loop on the runtime's buffers, the C loop on
    host-memory buffers, then bench on each kind of buffer (the session's NativeModel is opened per
    bench; HOST_BUFFERS is read when it is)."""
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator
    from ai_edge_litert.options import Options

    from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
    from app.pipeline import InferenceConfig
    from app.pipeline.plan import FeedPlan
    from app.tasks.bench import run_bench
    from app.tasks.plan import RunPlan

    n, model = a["frames"], a["model"]
    xs = float_inputs(30)
    gpu = HardwareAccelerator.GPU | HardwareAccelerator.CPU
    w = CompiledModel.from_file(model, options=Options(hardware_accelerators=gpu))
    wi, wo = w.create_input_buffers(0), w.create_output_buffers(0)

    def wrapper(i: int) -> None:
        wi[0].write(xs[i % 30])
        w.run_by_index(0, wi, wo)
        wo[0].read(1000, np.float32)

    content = open(model, "rb").read()
    native = {}
    for host in (False, True):
        NativeModel.HOST_BUFFERS = host
        native[host] = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision="fp16")
    out = np.empty(1000, np.float32)

    def bench_rate(host: bool) -> float:
        NativeModel.HOST_BUFFERS = host
        config = InferenceConfig(model=model, delegate="gpu", fallback=False, options=a.get("options", {}))
        s = run_bench(RunPlan(config, FeedPlan("synthetic", pace=False, pin_cpus=True), frames=n, warmup=30)).to_dict()
        rate: float = s["metrics"]["inference_fps"]
        return rate

    turns = []
    for _ in range(a["cycles"]):
        t = {"wrapper": timed(wrapper, n)["rate"],
             "C runtime buffers": timed(lambda i: native[False].run_tensor(xs[i % 30], out), n)["rate"],
             "C host buffers": timed(lambda i: native[True].run_tensor(xs[i % 30], out), n)["rate"],
             "bench runtime buffers": bench_rate(False), "bench host buffers": bench_rate(True)}  # fmt: skip
        turns.append(t)
        print(json.dumps({k: round(v) for k, v in t.items()}), file=sys.stderr, flush=True)

    def ratio(x: str, y: str) -> float:
        return round(statistics.median(t[x] / t[y] for t in turns), 3)

    def spread(x: str, y: str) -> list[float]:
        return [round(min(t[x] / t[y] for t in turns), 3), round(max(t[x] / t[y] for t in turns), 3)]

    pairs = [("bench runtime buffers", "wrapper"), ("bench runtime buffers", "C runtime buffers"),
             ("bench host buffers", "wrapper"), ("bench host buffers", "C host buffers"),
             ("C runtime buffers", "wrapper"), ("C host buffers", "wrapper")]  # fmt: skip
    return {"turns": turns, "rate": statistics.median(t["bench runtime buffers"] for t in turns),
            **{f"{x} / {y}": {"median": ratio(x, y), "range": spread(x, y)} for x, y in pairs}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("raw", "raw_c", "bench", "same", "interleaved"))
    parser.add_argument("args", nargs="+", help="the variant's arguments (see above)")
    parsed = parser.parse_args(argv)
    kind, args = parsed.kind, parsed.args
    if kind == "raw":
        result = raw(*args)
    elif kind == "raw_c":
        result = raw_c(*args)
    else:
        result = {"bench": bench, "same": same, "interleaved": interleaved}[kind](json.loads(args[0]))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
