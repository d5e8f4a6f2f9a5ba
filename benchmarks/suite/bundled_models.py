"""Measure the bundled models for docs/models.md: top-1 on the test photos, fp32/int8 agreement,
sizes, and single-thread inference time from LiteRT's own benchmark tool.

    .venv/bin/python -m benchmarks.suite.bundled_models [--rounds 5] [--json FILE]

then paste the printed markdown over the figures in docs/models.md's "Figures" section.
Every figure comes from a real run on this machine; the markdown printed says which machine.
The benchmark tool runs the two models alternately until each has `--rounds` undisturbed runs
(other processes used at most 0.25 cores meanwhile, per benchmarks/harness/load.py) or 3 x `--rounds` runs;
the table gives the median of each figure over the undisturbed runs, or over all of them,
marked DISTURBED, when none was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.recording.writer import cpu_name
from benchmarks.harness import paths
from benchmarks.harness.children import app_command, write_json
from benchmarks.harness.load import OtherLoad
from benchmarks.harness.loops import litert_tool

# The project's test photos, plus the third-party ones when the fixtures folder is there.
PHOTOS = sorted(paths.PHOTOS.glob("*.jpg")) + sorted(paths.CORAL.glob("*.bmp"))
MODELS = list(paths.BUNDLED)


def classify(model: str) -> dict[str, list[dict[str, Any]]]:
    out = subprocess.run(
        app_command("classify", "--model", model, "--threads", "1", "--top-k", "5", "--json", *map(str, PHOTOS)),
        capture_output=True,
        text=True,
        check=True,
        cwd=paths.ROOT,
    )
    return {Path(r["image"]).name: r["top"] for r in json.loads(out.stdout)["results"]}


def litert_benchmark(path: Path, runs: int = 100) -> dict[str, Any]:
    return litert_tool(path, threads=1, runs=runs)


def main(argv: list[str] | None = None) -> int:
    from importlib.metadata import version

    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    import ai_edge_litert  # noqa: F401 (version below)

    results = {m: classify(m) for m in MODELS}
    print(
        f"Measured {__import__('datetime').date.today()} on {cpu_name()}, {os.cpu_count()} cores, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"ai-edge-litert {version('ai-edge-litert')}.\n"
    )
    print("### Top-1 on the test photos (`delegate-scope classify --threads 1`)\n")
    print("| photo | " + " | ".join(MODELS) + " | top-1 agrees | top-5 overlap |")
    print("| --- | " + " | ".join("---" for _ in MODELS) + " | --- | --- |")
    agree = 0
    for photo in (p.name for p in PHOTOS):
        cells = [
            f"{results[m][photo][0]['index']} {results[m][photo][0]['label']} ({results[m][photo][0]['score']:.3f})"
            for m in MODELS
        ]
        a, b = (results[m][photo] for m in MODELS)
        same = a[0]["index"] == b[0]["index"]
        agree += same
        overlap = len({t["index"] for t in a} & {t["index"] for t in b})
        print(f"| {photo} | " + " | ".join(cells) + f" | {'yes' if same else 'no'} | {overlap}/5 |")
    print(f"\nfp32 vs int8 top-1 agreement: {agree} of {len(PHOTOS)} photos.\n")
    print("### Size and single-thread inference time\n")
    print(
        "`python -m ai_edge_litert.tools.benchmark_litert_model --model models/NAME.tflite --num_threads 1 "
        "--num_runs 100 --warmup_runs 10`\n"
    )
    runs: dict[str, list[tuple[float, dict[str, Any]]]] = {m: [] for m in MODELS}  # (other processes' cores, result)
    while any(sum(o <= 0.25 for o, _ in r) < args.rounds for r in runs.values()) and all(
        len(r) < 3 * args.rounds for r in runs.values()
    ):
        for m in MODELS:
            with OtherLoad() as other:
                bench = litert_benchmark(paths.model_path(m))
            runs[m].append((other.cores or 0.0, bench))
    print("| model | file size | init | first run | median | p5 | p95 | fully accelerated (CPU) | runs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    figures: dict[str, Any] = {"top": results}
    for m in MODELS:
        path = paths.model_path(m)
        clean = [b for o, b in runs[m] if o <= 0.25][: args.rounds]
        used = clean or [b for _, b in runs[m]]
        note = (
            f"median of {len(clean)} undisturbed of {len(runs[m])}"
            if clean
            else f"DISTURBED: median of all {len(used)}; other processes used "
            f"{min(o for o, _ in runs[m]):.2f}-{max(o for o, _ in runs[m]):.2f} cores"
        )
        lat = {k: statistics.median(b["latency"][k] for b in used) for k in used[0]["latency"]}
        print(
            f"| {m} | {path.stat().st_size / 1e6:.2f} MB | {lat['init_ms']:.1f} ms | {lat['warmup_first_ms']:.1f} ms | "
            f"{lat['median_ms']:.2f} ms | {lat['p5_ms']:.2f} ms | {lat['p95_ms']:.2f} ms | "
            f"{used[0]['fully_accelerated']} | {note} |"
        )
        figures[m] = {"size_bytes": path.stat().st_size, "latency": lat, "note": note}
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
