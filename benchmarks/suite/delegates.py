"""Compare backends on the bundled models: init, first inference, steady-state latency, CPU cost,
delegation facts and top-1 agreement with the CPU backend. All sides run in one process, one
after the other, on the same preprocessed tensors.

    python -m benchmarks.suite.delegates [--runs 300] [--json FILE]

Prints a markdown table (docs/performance.md quotes it). Backends that are unavailable are
listed with the reason, never silently replaced by CPU (fallback is off here).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from app.backends import open_session
from app.backends.options import default_threads
from app.errors import BackendUnavailable
from app.model.image_files import read_image
from app.model.postprocess import Postprocessor
from app.model.preprocess import Preprocessor
from app.model.spec import load_model_spec
from app.recording.writer import cpu_name
from app.system.native_log import NativeLogFile
from benchmarks.harness import paths
from benchmarks.harness.children import write_json
from benchmarks.harness.stats import p95

PHOTOS = sorted(paths.PHOTOS.glob("*.jpg"))
MODELS = list(paths.BUNDLED)


def configs() -> list[tuple[str, str, dict]]:
    threads = sorted({1, default_threads()})
    cpu = [(f"cpu, {n} thread{'s' if n > 1 else ''}", "cpu", {"threads": n}) for n in threads]
    # allow_software: a software adapter is measured (and marked) rather than skipped.
    gpu = [(f"gpu {p}", "gpu", {"precision": p, "threads": 1, "allow_software": True}) for p in ("fp16", "fp32")]
    return cpu + gpu


def measure(model: str, backend: str, options: dict, runs: int) -> dict:
    spec = load_model_spec(model)
    pre, post = Preprocessor(spec), Postprocessor(spec)
    tensors = {p.name: pre(read_image(p)).copy() for p in PHOTOS}
    try:
        session = open_session(spec, backend, options, fallback=False)
    except BackendUnavailable as exc:
        return {"available": False, "reason": str(exc)}
    try:
        r = session.report
        top1 = {name: post.top_k(post.scores(session.run(x)), 1)[0].index for name, x in tensors.items()}
        scores = {name: post.scores(session.run(x)).copy() for name, x in tensors.items()}
        x = tensors["coffee.jpg"]
        walls, cpus = [], []
        for _ in range(runs):
            c0, t0 = time.process_time(), time.perf_counter()
            session.run(x)
            t1, c1 = time.perf_counter(), time.process_time()
            walls.append((t1 - t0) * 1e3)
            cpus.append((c1 - c0) * 1e3)
        return {
            "available": True,
            "used": r.used,
            "adapter": r.adapter,
            "software": r.software,
            "fully_accelerated": r.fully_accelerated,
            "nodes": f"{r.nodes_delegated}/{r.nodes_total}",
            "partitions": r.partitions,
            "cpu_ops": r.cpu_ops,
            "init_ms": r.init_ms,
            "first_inference_ms": r.first_inference_ms,
            "median_ms": statistics.median(walls),
            "p95_ms": p95(walls),
            "cpu_per_wall": statistics.median(c / w for c, w in zip(cpus, walls, strict=True) if w > 0),
            "top1": top1,
            "scores": {k: v.tolist() for k, v in scores.items()},
        }
    finally:
        session.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    NativeLogFile()  # keep the runtime's own logging out of the printed table
    results: dict = {
        "machine": f"{cpu_name()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
    }
    print(results["machine"])
    print()
    print(
        "| model | backend | adapter | fully accel. | nodes | init ms | first ms | median ms | p95 ms | "
        "CPU/wall | top-1 = CPU | max score diff vs CPU |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model in MODELS:
        reference = None
        for label, backend, options in configs():
            m = measure(model, backend, options, args.runs)
            results[f"{model} / {label}"] = m
            if not m["available"]:
                print(f"| {model} | {label} | not available: {m['reason']} | | | | | | | | | |")
                continue
            if reference is None:
                reference = m
            agree = sum(m["top1"][k] == reference["top1"][k] for k in m["top1"])
            diff = max(
                float(np.abs(np.array(m["scores"][k]) - np.array(reference["scores"][k])).max()) for k in m["scores"]
            )
            adapter = (m["adapter"] or "-").split(",")[0] + (" (software)" if m["software"] else "")
            print(
                f"| {model} | {label} | {adapter} | {m['fully_accelerated']} | {m['nodes']} | {m['init_ms']:.1f} | "
                f"{m['first_inference_ms']:.1f} | {m['median_ms']:.3f} | {m['p95_ms']:.3f} | {m['cpu_per_wall']:.2f} | "
                f"{agree}/{len(m['top1'])} | {diff:.4f} |"
            )
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
