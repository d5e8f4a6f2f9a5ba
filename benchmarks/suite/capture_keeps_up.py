"""Does the pipeline keep up with the model on the unpaced demo clip? Interleaved rounds of the model
alone against `bench --source demo --no-pace`, and the median of the per-round ratios (on a
fast accelerator the capture thread, decoding then preprocessing each frame, held the demo to 0.66-0.78
of the model alone; the target is 0.90 or more).

Each round runs, each in its own process, in an order rotated from round to round:

- "alone": the app's own session on the delegate (the same backend and options bench opens), one
  fixed input back to back (benchmarks/suite/capture_keeps_up_child.py); its runs per second.
- "demo (PLACEMENT)" for each `--placements` value: `python -m app bench --source demo --no-pace
  --throttle-ms 0 --preprocess-thread PLACEMENT`; its inference rate, bound line and where it
  preprocessed (the JSON's preprocessing.placement). `auto` is what a user gets; `off` decodes
  and preprocesses in series on the capture thread, `on` a thread of its own.
- "synthetic" (with `--synthetic`): bench on the synthetic source, no decoding: the pipeline's own cost.
- "... GPU in this process" (with `--gpu-process`): the same with bench --gpu-process off. On the GPU,
  unpaced, bench's default (auto) runs the session in a process of its own with two frames queued
  (app/backends/gpu/process_session.py); these legs measure the in-process path beside it.

Needs only the app's runtime packages for bench (numpy, opencv-python-headless, psutil, ai-edge-litert;
on a GPU host with the wheels unpacked: `PYTHONPATH=WHEELS`). On the GPU host:

    python -m benchmarks.suite.capture_keeps_up --delegate gpu --rounds 5 --frames 1500 --json keeps_up.json

Here (CPU, a small model, quick):

    python -m benchmarks.suite.capture_keeps_up --model efficientnet_lite0_int8 --threads 1 --rounds 3 \\
        --frames 200 --placements auto off on
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness.children import bench_summary, last_json, run_module, write_json
from benchmarks.harness.load import OtherLoad
from benchmarks.harness.rounds import alternate
from benchmarks.harness.stats import spread


def alone(args: argparse.Namespace) -> dict[str, Any]:
    proc = run_module(
        "benchmarks.suite.capture_keeps_up_child", args.model, args.delegate, str(args.threads), str(args.frames)
    )
    result = last_json(proc)
    if "error" in result:
        sys.exit(f"the model alone failed: {result['error']}")
    return result


def bench(
    args: argparse.Namespace,
    source: str,
    placement: str,
    switch_ms: float | None = None,
    pin: bool = True,
    inference_cpus: int | None = None,
    gpu_process: str | None = None,
    decode_threads: int | None = None,
) -> dict[str, Any]:
    flags = ["--model", args.model, "--delegate", args.delegate, "--source", source, "--no-pace"]
    flags += ["--throttle-ms", "0", "--frames", str(args.frames), "--preprocess-thread", placement]
    if args.threads:
        flags += ["--threads", str(args.threads)]
    if not pin:
        flags.append("--no-pin")
    if inference_cpus:
        flags += ["--inference-cpus", str(inference_cpus)]
    if gpu_process:
        flags += ["--gpu-process", gpu_process]
    if decode_threads is not None:
        flags += ["--decode-threads", str(decode_threads)]
    s = bench_summary(flags, switch_interval_ms=switch_ms)
    bound = s.get("bottleneck") or {}
    placed = s["preprocessing"].get("placement") or {}
    return {
        "rate": s["metrics"]["inference_fps"],
        "inference_p50_ms": s["metrics"]["latency"]["inference"]["p50"],
        "used": (s.get("delegate") or {}).get("used"),
        "process": ((s.get("delegate") or {}).get("options") or {}).get("process", "this"),  # "own": a child
        "stage": bound.get("stage"),
        "sentence": (bound.get("evidence") or {}).get("sentence"),
        "busy_share": (bound.get("evidence") or {}).get("busy_share"),
        "own_thread": placed.get("own_thread"),
        "placement": placed.get("reason"),
        "sm_clock_mhz": (s.get("power") or {}).get("sm_clock_mhz"),  # the GPU's median over the span (NVML)
        # the inference thread's time ready but not on a CPU, per inference (/proc schedstat)
        "waited_ms_per_inference": s["metrics"].get("waited_ms_per_inference"),
        "cpu_split": s.get("cpu_affinity"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0", help="a bundled model's name or a .tflite path")
    parser.add_argument("--delegate", default="cpu", help="cpu, gpu, ... (as bench's --delegate)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: the app's default)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=900, help="runs of the model alone, inferences of each bench")
    parser.add_argument(
        "--placements", nargs="+", choices=("auto", "on", "off"), default=["auto", "off"],
        help="bench's --preprocess-thread values to run, one leg each (default: auto off)",
    )  # fmt: skip
    parser.add_argument("--synthetic", action="store_true", help="also bench on the synthetic source")
    parser.add_argument("--unpinned", action="store_true", help="also a demo (auto) leg with bench --no-pin")
    parser.add_argument(
        "--gpu-process", action="store_true",
        help="also a demo (auto) leg, and a synthetic one with --synthetic, with bench --gpu-process off (the GPU "
        "session in this process; bench's auto runs it, unpaced, in a process of its own)",
    )  # fmt: skip
    parser.add_argument(
        "--inference-cpus", type=int, nargs="*", default=[], metavar="N",
        help="also a demo (auto) leg per count given, with bench --inference-cpus N",
    )  # fmt: skip
    parser.add_argument(
        "--decode-threads", type=int, nargs="*", default=[], metavar="N",
        help="also a demo (auto) leg per count given, with bench --decode-threads N (FFmpeg's; 0: one per core)",
    )  # fmt: skip
    parser.add_argument(
        "--switch-intervals", type=float, nargs="*", default=[], metavar="MS",
        help="also a demo (auto) leg per GIL switch interval given, in ms (benchmarks/harness/switched_app.py)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args(argv)
    print(
        f"{os.cpu_count()} cores ({len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} "
        f"allowed); {args.model} on {args.delegate}, threads {args.threads or 'default'}; {args.rounds} rounds of "
        f"{args.frames} runs or inferences, order rotated",
        flush=True,
    )
    legs: dict[str, Any] = {"alone": lambda: alone(args)}
    for placement in args.placements:
        legs[f"demo ({placement})"] = lambda p=placement: bench(args, "demo", p)
    if args.unpinned:
        legs["demo (auto, not pinned)"] = lambda: bench(args, "demo", "auto", pin=False)
    for n in args.inference_cpus:
        legs[f"demo (auto, inference on {n} CPUs)"] = lambda n=n: bench(args, "demo", "auto", inference_cpus=n)
    for n in args.decode_threads:
        legs[f"demo (auto, {n} decoding threads)"] = lambda n=n: bench(args, "demo", "auto", decode_threads=n)
    for ms in args.switch_intervals:
        legs[f"demo (auto, GIL switch {ms:g} ms)"] = lambda ms=ms: bench(args, "demo", "auto", ms)
    if args.gpu_process:
        legs["demo (auto, GPU in this process)"] = lambda: bench(args, "demo", "auto", gpu_process="off")
    if args.synthetic:
        legs["synthetic"] = lambda: bench(args, "synthetic", "auto")
        if args.gpu_process:
            legs["synthetic (GPU in this process)"] = lambda: bench(args, "synthetic", "auto", gpu_process="off")
    others: list[float] = []  # the CPU other processes used during each run, in cores (0 where not readable)

    def measured(name: str) -> Any:
        with OtherLoad() as load:
            result = legs[name]()
        others.append(load.cores or 0.0)
        return result

    def report(r: int, results: dict[str, dict[str, Any]]) -> None:
        base = results["alone"]["rate"]

        def clock(res: dict[str, Any]) -> str:  # the GPU's SM clock during the leg, where NVML reads it
            return f" at {res['sm_clock_mhz']:.0f} MHz" if res.get("sm_clock_mhz") else ""

        parts = [f"alone {base:.1f}/s{clock(results['alone'])}"]
        for name, res in results.items():
            if name != "alone":
                waited = res.get("waited_ms_per_inference")
                waits = f", waited {waited * 1000:.0f} us/inf for a CPU" if waited is not None else ""
                ratio = res["rate"] / base
                parts.append(f"{name} {res['rate']:.1f}/s{clock(res)} = {ratio:.3f} ({res['stage']}{waits})")
        print(f"round {r + 1}: " + "; ".join(parts) + f"; others up to {max(others[-len(results):]):.2f} cores",
              flush=True)  # fmt: skip

    results = alternate({name: (lambda n=name: measured(n)) for name in legs}, args.rounds, report=report)
    print("\n| leg | rate /s, median (range) | / model alone, median of rounds (range) | bound (last round) |")
    print("| --- | --- | --- | --- |")
    print(f"| model alone ({results['alone'][-1]['used']}) | {spread(r['rate'] for r in results['alone'])} | 1 | |")
    ratios: dict[str, list[float]] = {}
    for name, runs in results.items():
        if name == "alone":
            continue
        ratios[name] = [run["rate"] / a["rate"] for run, a in zip(runs, results["alone"], strict=True)]
        print(f"| {name} | {spread(r['rate'] for r in runs)} | {spread(ratios[name])} | {runs[-1]['sentence']} |")
    print()
    for name, runs in results.items():
        if name != "alone":
            print(f"{name}: ran on {runs[-1]['used']} in {runs[-1]['process']} process; preprocessing "
                  f"{runs[-1]['placement']}")  # fmt: skip
    for name, values in ratios.items():
        print(f"RATIO {name} / alone: median {statistics.median(values):.3f}")
    write_json(args.json, {"args": vars(args), "results": results, "ratios": ratios, "others_cores": others})
    return 0


if __name__ == "__main__":
    sys.exit(main())
