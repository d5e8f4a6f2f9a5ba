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

    python -m benchmarks.investigations.gpu_pipeline [--model models/efficientnet_lite0.tflite] [--rounds 3]
        [--frames 900] [--only WORD ...] [--json FILE]

The variants run in benchmarks/investigations/gpu_pipeline_child.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness.children import last_json, run_module, write_json
from benchmarks.harness.paths import model_path


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


def run(kind: str, args: list[str]) -> dict[str, Any]:
    return last_json(run_module("benchmarks.investigations.gpu_pipeline_child", kind, *args, timeout=300))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(model_path("efficientnet_lite0")))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=900)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*", help="run only the variants whose name contains one of these")
    args = parser.parse_args(argv)
    runs = variants(args.model, args.frames)
    if args.only:
        references = ("raw gpu", "raw C gpu fp16", "raw C gpu fp32")  # every ratio's denominators
        runs = {k: v for k, v in runs.items() if k in references or any(word in k for word in args.only)}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
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

    def ratio(rows: list[dict[str, Any]], reference: str) -> str:
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
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
