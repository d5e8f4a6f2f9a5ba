"""Check bench's memory figures against readings taken outside the app (Linux).

    python -m benchmarks.suite.memory_anchor [--models NAME_OR_PATH ...] [--threads 1] [--frames 150]
        [--delegate cpu|gpu] [--gpu-process auto|on|off] [--pairs 12] [--phase-s 1] [--skip init peak cost gpu]
        [--json FILE]

For each model (default: the bundled models, and the fixture detector and segmenter where the fixtures are):

- init: `bench --json`'s `memory.init_mb` beside a raw `ai_edge_litert` Interpreter's resident-set delta in a
  fresh child (this module with --child): VmRSS just before the Interpreter is made and just after
  `allocate_tensors` and a first `invoke` on zeros, same model and threads, two ways: over bytes read first
  (`model_content`, as the app holds a model: its bytes are not part of a session's open) and from the file
  (`model_path`: LiteRT maps it, so the file's pages it touches count too); and the app's own CPU session
  opened alone in a fresh child (`open_session`, nothing else running), which tells the session's cost from
  what else bench's process did while it opened. Judged: within 35% or 6 MB of the `model_content` delta
  (CPU delegate only: the raw loop has no GPU session).
- peak: bench's `memory.peak_mb` beside the kernel's peak resident set of the same command: `/usr/bin/time
  -v`'s "Maximum resident set size" (where /usr/bin/time is absent, the child's ru_maxrss through
  getrusage(RUSAGE_CHILDREN), said in the output). Both are of bench's process; GNU time's includes the
  start-up before bench resets its peak as its measured span opens, so it can only be higher; with the GPU
  session in a process of its own, it is the larger of the two processes' peaks. Judged: within 15%.
- cost: the rate of the app's CPU session back to back in one process, with the ResourceSampler (CPU,
  resident set, GPU listing every 0.5 s, as bench runs it) on and off in interleaved pairs of phases: the
  median of on/off ratios (target: at most 1% slower), with the sampler thread's own CPU over all the on
  phases (/proc/self/task/TID/schedstat); and the time of one memory reading in microseconds:
  the sampler's per sample (`resident_mb`, /proc/PID/statm) and the one at a session's open and a run's end
  (`read_memory`: status and smaps_rollup).
- gpu (with --delegate gpu): bench's `memory.gpu_mb` and the recording's `gpu_mem_mb` column beside
  `nvidia-smi --query-compute-apps=pid,used_memory`, polled every 0.5 s while bench runs, for bench's
  process and its children.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.children import app_command, module_command, write_json
from benchmarks.harness.paths import BUNDLED, ROOT, VISION, model_path

INIT_TOLERANCE = (0.35, 6.0)  # share, MB: the larger of them
PEAK_TOLERANCE = 0.15
COST_TARGET = 0.01
FIXTURES = ("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite", "deeplabv3.tflite")  # a detector, a segmenter
GNU_TIME = "/usr/bin/time"
_MAXRSS = re.compile(r"Maximum resident set size \(kbytes\):\s*(\d+)")


# ---- what is parsed and judged (tests/test_memory_anchor.py) -------------------------------------


def max_rss_mb(time_v_output: str) -> float | None:
    """`/usr/bin/time -v`'s maximum resident set, MiB (it prints KiB); None where the line is absent."""
    found = _MAXRSS.search(time_v_output)
    return int(found.group(1)) / 1024 if found else None


def smi_used_mb(csv_text: str, pids: set[int]) -> float | None:
    """The sum of `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` rows for `pids`, MiB;
    None where none of them is listed (or its memory is `[N/A]`)."""
    total, listed = 0.0, False
    for row in csv.reader(io.StringIO(csv_text)):
        if len(row) < 2 or not row[0].strip().isdigit() or int(row[0]) not in pids:
            continue
        value = row[1].strip().split()[0] if row[1].strip() else ""
        if value.replace(".", "", 1).isdigit():
            total, listed = total + float(value), True
    return total if listed else None


def within(ours: float | None, theirs: float | None, share: float, floor_mb: float = 0.0) -> bool | None:
    """Whether `ours` is within `share` of `theirs` (or `floor_mb`, the larger); None where either is missing."""
    if ours is None or theirs is None:
        return None
    return abs(ours - theirs) <= max(share * abs(theirs), floor_mb)


def slowdown(on_rates: list[float], off_rates: list[float]) -> float:
    """How much slower the pairs ran with the sampler on: 1 - the median over pairs of on/off."""
    return 1.0 - statistics.median(on / off for on, off in zip(on_rates, off_rates, strict=True))


# ---- the raw interpreter's delta, in a child ---------------------------------------------------------


def _vm_rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise OSError("no VmRSS in /proc/self/status")


def raw_delta(model: Path, threads: int, way: str) -> float:
    """The resident set a raw Interpreter adds, MiB: made, allocated and run once on zeros. `way` "session":
    the app's own CPU session instead (its open runs a first inference), with nothing else running."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    if way == "session":
        return _session_delta(model, threads)
    content = model.read_bytes() if way == "content" else None
    before = _vm_rss_mb()
    if content is not None:
        it = Interpreter(model_content=content, num_threads=threads)
    else:
        it = Interpreter(model_path=str(model), num_threads=threads)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    it.invoke()
    return _vm_rss_mb() - before


def _session_delta(model: Path, threads: int) -> float:
    from app.backends import open_session
    from app.model.spec import load_model_spec

    spec = load_model_spec(str(model))
    before = _vm_rss_mb()
    session = open_session(spec, "cpu", {"threads": threads})
    after = _vm_rss_mb()
    session.close()
    return after - before


def raw_in_child(model: Path, threads: int, way: str) -> float:
    proc = subprocess.run(module_command(__spec__.name, "--child", way, str(model), str(threads)),
                          capture_output=True, text=True, cwd=ROOT, check=True)  # fmt: skip
    return float(proc.stdout.split()[-1])


# ---- bench, under the kernel's peak --------------------------------------------------------------------


@dataclass(frozen=True)
class BenchRun:
    summary: dict[str, Any]
    kernel_peak_mb: float | None
    peak_source: str
    rows: list[dict[str, str]]  # the recording's inference rows
    smi: list[tuple[float, float | None]]  # (seconds since start, nvidia-smi's MiB for bench's processes)


def _bench_args(model: str, args: argparse.Namespace, out: Path) -> list[str]:
    extra = ["--gpu-process", args.gpu_process] if args.delegate == "gpu" else []
    return ["bench", "--model", model, "--threads", str(args.threads), "--delegate", args.delegate,
            "--source", "demo", "--frames", str(args.frames), "--json", str(out / "s.json"),
            "--csv", str(out / "r.csv"), *extra]  # fmt: skip


def _poll_smi(proc: subprocess.Popen[str], started: float) -> list[tuple[float, float | None]]:
    """nvidia-smi's used memory of `proc` and its children every 0.5 s until it ends."""
    import psutil

    polls = []
    while proc.poll() is None:
        try:
            pids = {proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))}
        except psutil.Error:
            break
        smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv"],
                             capture_output=True, text=True)  # fmt: skip
        polls.append((time.monotonic() - started, smi_used_mb(smi.stdout, pids)))
        time.sleep(0.5)
    return polls


def run_bench(model: str, args: argparse.Namespace) -> BenchRun:
    gnu = Path(GNU_TIME).exists()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        command = app_command(*_bench_args(model, args, out))
        command = [GNU_TIME, "-v", "-o", str(out / "time.txt"), *command] if gnu else command
        started = time.monotonic()
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        smi = _poll_smi(proc, started) if args.delegate == "gpu" and shutil.which("nvidia-smi") else []
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"bench failed ({proc.returncode}): {err.strip().splitlines()[-1:]}")
        if gnu:
            peak, source = max_rss_mb((out / "time.txt").read_text()), "/usr/bin/time -v"
        else:  # ru_maxrss of the largest child waited for, KiB on Linux
            peak, source = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "getrusage(RUSAGE_CHILDREN)"
        with (out / "r.csv").open(newline="", encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if not r["event"]]
        return BenchRun(json.loads((out / "s.json").read_text()), peak, source, rows, smi)


# ---- the sampler's cost ------------------------------------------------------------------------------


def sampler_cost(model: Path, threads: int, pairs: int, phase_s: float) -> dict[str, Any]:
    """Interleaved phases of the app's CPU session back to back, ResourceSampler off then on (order
    alternating per pair), each phase `phase_s` long; and one memory reading's time."""
    import numpy as np
    import psutil

    from app.backends import open_session
    from app.metrics.memory import read_memory
    from app.metrics.resources import ResourceSampler, resident_mb
    from app.model.spec import load_model_spec

    spec = load_model_spec(str(model))
    session = open_session(spec, "cpu", {"threads": threads})
    x = np.zeros(spec.input.shape, spec.input.dtype)

    def rate() -> float:
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < phase_s:
            session.run(x)
            n += 1
        return n / (time.perf_counter() - started)

    on, off, sampler_cpu, on_s = [], [], 0.0, 0.0
    try:
        rate()  # warm
        for i in range(pairs):
            for sampled in (False, True) if i % 2 == 0 else (True, False):
                if sampled:
                    with ResourceSampler():
                        started, cpu_before = time.perf_counter(), _thread_cpu_s("ResourceSampler")
                        on.append(rate())
                        sampler_cpu += _thread_cpu_s("ResourceSampler") - cpu_before
                        on_s += time.perf_counter() - started
                else:
                    off.append(rate())
    finally:
        session.close()
    proc = psutil.Process()
    sample_us = _us(lambda: resident_mb(proc, []))  # the sampler's per-sample read (children listed for CPU)
    rollup_us = _us(read_memory)  # VmRSS, VmHWM and smaps_rollup: at a session's open and a run's end
    return {"on": on, "off": off, "slowdown": slowdown(on, off), "sampler_cpu_share": sampler_cpu / on_s,
            "sample_read_us": sample_us,
            "sample_share_of_interval": sample_us / 0.5e6, "rollup_read_us": rollup_us}  # fmt: skip


def _thread_cpu_s(name: str) -> float:
    """CPU seconds of this process's thread named `name`: the first field of /proc/self/task/TID/schedstat,
    nanoseconds on a CPU (its stat file counts 10 ms ticks, too coarse for a sampler's few ms)."""
    import threading

    tid = next(t.native_id for t in threading.enumerate() if t.name == name)
    with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as f:
        return int(f.read().split()[0]) / 1e9


def _us(call: Callable[[], object], n: int = 500) -> float:
    """Median of `n` calls' times, microseconds."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


# ---- the table -----------------------------------------------------------------------------------------


def models(args: argparse.Namespace) -> list[str]:
    if args.models:
        return args.models
    found = [str(VISION / name) for name in FIXTURES if (VISION / name).exists()]
    return list(BUNDLED) + found


def _name(model: str) -> str:
    return Path(model).stem if model.endswith(".tflite") else model


def _path(model: str) -> Path:
    return Path(model) if model.endswith(".tflite") else model_path(model)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _cost(cost: dict[str, Any] | None) -> str:
    if not cost:
        return "–"
    return f"{cost['slowdown'] * 100:.2f}% ({cost['sampler_cpu_share'] * 100:.3f}% of a core)"


def _verdict(ok: bool | None) -> str:
    return {None: "–", True: "yes", False: "NO"}[ok]


def measure_model(model: str, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"model": _name(model)}
    if "init" not in args.skip and args.delegate == "cpu":
        result["raw_content_mb"] = raw_in_child(_path(model), args.threads, "content")
        result["raw_path_mb"] = raw_in_child(_path(model), args.threads, "path")
        result["session_alone_mb"] = raw_in_child(_path(model), args.threads, "session")
    if {"init", "peak", "gpu"} - set(args.skip):
        run = run_bench(model, args)
        memory = run.summary.get("memory") or {}
        result.update(bench=memory, kernel_peak_mb=run.kernel_peak_mb, peak_source=run.peak_source)
        gpu_rows = [float(r["gpu_mem_mb"]) for r in run.rows if r.get("gpu_mem_mb")]
        smi = [mb for _, mb in run.smi if mb is not None]
        result["csv_gpu_mem_mb"] = statistics.median(gpu_rows) if gpu_rows else None
        result["smi_mb"] = statistics.median(smi) if smi else None
        result["smi_polls"] = run.smi
    if "cost" not in args.skip and args.delegate == "cpu":
        result["cost"] = sampler_cost(_path(model), args.threads, args.pairs, args.phase_s)
    return result


def print_table(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"delegate {args.delegate}, {args.threads} thread(s), bench --source demo --frames {args.frames}")
    print("| model | bench init MB (file + anon) | raw delta MB, bytes / file | app session alone MB "
          "| init within 35% or 6 MB "
          "| bench peak MB | kernel peak MB | peak within 15% | GPU MB: bench / CSV median / nvidia-smi median "
          "| sampler on/off slowdown (its thread's CPU) | memory read µs: per sample / smaps_rollup |")  # fmt: skip
    print("| --- " * 11 + "|")
    for r in results:
        m = r.get("bench", {})
        init, peak = m.get("init_mb"), m.get("peak_mb")
        split = f" ({_fmt(m.get('file_mb'))} + {_fmt(m.get('anon_mb'))})" if m.get("file_mb") is not None else ""
        raw = r.get("raw_content_mb")
        cost = r.get("cost")
        reads = f"{_fmt(cost['sample_read_us'], 0)} / {_fmt(cost['rollup_read_us'], 0)}" if cost else "–"
        print(f"| {r['model']} | {_fmt(init)}{split} | {_fmt(raw)} / {_fmt(r.get('raw_path_mb'))} "
              f"| {_fmt(r.get('session_alone_mb'))} "
              f"| {_verdict(within(init, raw, *INIT_TOLERANCE))} | {_fmt(peak)} | {_fmt(r.get('kernel_peak_mb'))} "
              f"| {_verdict(within(peak, r.get('kernel_peak_mb'), PEAK_TOLERANCE))} "
              f"| {_fmt(m.get('gpu_mb'))} / {_fmt(r.get('csv_gpu_mem_mb'))} / {_fmt(r.get('smi_mb'))} "
              f"| {_cost(cost)} "
              f"| {reads} |")  # fmt: skip
    sources = {r["peak_source"] for r in results if "peak_source" in r}
    print(f"kernel peak from: {', '.join(sorted(sources)) or '–'}")
    for r in results:
        reasons = (r.get("bench") or {}).get("reasons") or {}
        if reasons:
            print(f"{r['model']}: not measured: {reasons}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("WAY", "MODEL", "THREADS"), help=argparse.SUPPRESS)
    parser.add_argument("--models", nargs="*", default=None, help="bundled names or .tflite paths")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--delegate", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--gpu-process", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--pairs", type=int, default=12, help="sampler on/off pairs of phases (cost)")
    parser.add_argument("--phase-s", type=float, default=1.0, help="seconds per phase (cost)")
    parser.add_argument("--skip", nargs="*", default=[], choices=("init", "peak", "cost", "gpu"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.child:
        way, model, threads = args.child
        print(raw_delta(Path(model), int(threads), way))
        return 0
    if not sys.platform.startswith("linux") or not os.path.exists("/proc/self/status"):
        raise SystemExit("memory_anchor reads /proc: Linux only")
    results = [measure_model(model, args) for model in models(args)]
    print_table(results, args)
    write_json(args.json, {"args": {k: v for k, v in vars(args).items() if k != "json"}, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
