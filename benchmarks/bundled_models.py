"""Measure the bundled models for docs/models.md: top-1 on the test photos, fp32/int8 agreement,
sizes, and single-thread inference time from LiteRT's own benchmark tool.

    .venv/bin/python benchmarks/bundled_models.py > /tmp/models.md

Every figure comes from a real run on this machine; the markdown printed says which machine.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The project's test photos, plus the third-party ones when the fixtures folder is there.
PHOTOS = sorted((ROOT / "tests" / "data" / "photos").glob("*.jpg")) + sorted(
    (ROOT.parent / "shared" / "fixtures" / "coral").glob("*.bmp")
)
MODELS = ["efficientnet_lite0", "efficientnet_lite0_int8"]
sys.path.insert(0, str(ROOT))

from app.recording import cpu_name  # noqa: E402


def classify(model: str) -> dict[str, list[dict]]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "classify",
            "--model",
            model,
            "--threads",
            "1",
            "--top-k",
            "5",
            "--json",
            *PHOTOS,
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return {Path(r["image"]).name: r["top"] for r in json.loads(out.stdout)["results"]}


def litert_benchmark(path: Path, runs: int = 100) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "r.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ai_edge_litert.tools.benchmark_litert_model",
                "--model",
                str(path),
                "--num_threads",
                "1",
                "--num_runs",
                str(runs),
                "--warmup_runs",
                "10",
                "--result_json",
                str(result),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(result.read_text())


def main() -> None:
    from importlib.metadata import version

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
    print("| model | file size | init | first run | median | p5 | p95 | fully accelerated (CPU) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in MODELS:
        path = ROOT / "models" / f"{m}.tflite"
        lat = (bench := litert_benchmark(path))["latency"]
        print(
            f"| {m} | {path.stat().st_size / 1e6:.2f} MB | {lat['init_ms']:.1f} ms | {lat['warmup_first_ms']:.1f} ms | "
            f"{lat['median_ms']:.2f} ms | {lat['p5_ms']:.2f} ms | {lat['p95_ms']:.2f} ms | "
            f"{bench['fully_accelerated']} |"
        )


if __name__ == "__main__":
    main()
