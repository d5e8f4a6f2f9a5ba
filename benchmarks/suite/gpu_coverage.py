"""Which nodes LiteRT's GPU accelerator takes, and what finding out costs: `inspect`'s GPU coverage on
the bundled models and on models the GPU takes only in part, timed end to end.

    python -m benchmarks.suite.gpu_coverage [--repeat 3] [--each-node] [--json FILE] [MODEL ...]

Run it on a machine with a real GPU (Linux: NVIDIA driver and Vulkan loader; see
benchmarks/suite/gpu_linux_nvidia.sh) to confirm that the hardware takes the same nodes as SwiftShader did
here: the built models print MATCH or DIFFERENT against what SwiftShader took
(tests/test_gpu_coverage.py checks the same nodes). Software adapters are allowed and
flagged, so it also runs under SwiftShader:
    VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json python -m benchmarks.suite.gpu_coverage

--each-node also compiles every node alone (not only the nodes of kinds the runtime's log
refuses, as inspect does): the worst-case cost of the per-node step, and a list of the nodes
this GPU refuses alone, to compare between machines.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.gpu_options import GpuOptions
from ai_edge_litert.hardware_accelerator import HardwareAccelerator
from ai_edge_litert.options import Options

from app.backends.gpu.backend import probe
from app.coverage.gpu_nodes import one_node_model, parse_split
from app.system.native_log import capture_stderr
from app.tflite.graph import read_graph
from benchmarks.harness.children import app_command, write_json
from benchmarks.harness.paths import ROOT, model_path
from tests.builders.gpu_models import MIXED, MIXED_REFUSED, MIXED_TAKEN, TIE, chain, with_softmax_beta

# What SwiftShader's WebGPU took (docs/coverage.md): node -> delegated (None: one of equal partitions).
SWIFTSHADER = {
    "mixed": {i: i in MIXED_TAKEN for i in range(8)},
    "tie": {0: None, 1: None, 2: False, 3: None, 4: None},
    "efficientnet_lite0_beta2": {i: i < 60 for i in range(61)},
    "efficientnet_lite0_int8_beta2": {i: i < 60 for i in range(61)},
}


def build_models(folder: Path) -> list[Path]:
    made = {
        "mixed": chain(MIXED),
        "tie": chain(TIE),
        "efficientnet_lite0_beta2": with_softmax_beta(model_path("efficientnet_lite0"), 2.0),
        "efficientnet_lite0_int8_beta2": with_softmax_beta(model_path("efficientnet_lite0_int8"), 2.0),
    }
    paths = []
    for name, data in made.items():
        path = folder / f"{name}.tflite"
        path.write_bytes(data)
        paths.append(path)
    return paths


def inspect(model: Path, repeat: int) -> tuple[dict[str, Any], list[float]]:
    times: list[float] = []
    out: dict[str, Any] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.run(
            app_command("inspect", "--model", str(model), "--json"),
            capture_output=True, text=True, cwd=ROOT, timeout=600,
        )  # fmt: skip
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            raise SystemExit(f"inspect failed on {model}: {proc.stderr.strip()}")
        out = json.loads(proc.stdout)
    return out, times


def each_node(model: Path) -> tuple[list[int], dict[int, str], float]:
    """Every node compiled alone: (refused nodes, the runtime's reason for each, seconds)."""
    content = model.read_bytes()
    graph = read_graph(content)
    unpacked = fb.ModelT.InitFromPackedBuf(content, 0)
    options = Options(hardware_accelerators=HardwareAccelerator.GPU | HardwareAccelerator.CPU, gpu_options=GpuOptions())
    env = None
    refused, reasons = [], {}
    started = time.perf_counter()
    for node in graph.nodes:
        with capture_stderr() as log:
            try:
                compiled = CompiledModel.from_buffer(
                    one_node_model(unpacked, content, node.index), options=options, environment=env
                )
                env, taken = compiled.environment, compiled.is_fully_accelerated()
                compiled.close()
            except RuntimeError:
                taken = False
        if not taken:
            refused.append(node.index)
            split = parse_split(log.lines())
            reasons[node.index] = "; ".join(r for _, r in split.refused) if split else "no reason logged"
    seconds = time.perf_counter() - started
    with capture_stderr():  # the environment's teardown logs to fd 2
        del env
        gc.collect()
    return refused, reasons, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, help="default: the bundled models and the built ones")
    parser.add_argument("--repeat", type=int, default=3, help="inspect runs per model (median reported)")
    parser.add_argument("--each-node", action="store_true", help="also compile every node alone")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    status = probe()
    print(f"GPU: {status.adapter or status.reason}" + ("  [SOFTWARE]" if status.software else ""))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        bundled = [model_path("efficientnet_lite0"), model_path("efficientnet_lite0_int8")]
        models = args.models or [*bundled, *build_models(Path(tmp))]
        print(
            "| model | nodes | GPU took | partitions (found) | left on the CPU | inspect, median s | vs SwiftShader |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for model in models:
            out, times = inspect(model, args.repeat)
            gpu = out["coverage"]["gpu"]
            nodes = {n["index"]: n["delegated"] for n in gpu["nodes"]}
            left = [f"{n['op']} ({n['index']})" for n in gpu["nodes"] if n["delegated"] is False]
            expected = SWIFTSHADER.get(model.stem)
            verdict = "—" if expected is None else ("MATCH" if nodes == expected else "DIFFERENT")
            row = {
                "model": model.stem, "source": gpu["source"], "nodes_total": gpu["nodes_total"],
                "nodes_delegated": gpu["nodes_delegated"], "partitions": gpu["partitions"],
                "delegated_partitions": gpu["delegated_partitions"], "log": gpu["log"], "reason": gpu["reason"],
                "left_on_cpu": [n for n in gpu["nodes"] if n["delegated"] is not True],
                "inspect_s": times, "vs_swiftshader": verdict,
            }  # fmt: skip
            if args.each_node:
                refused, reasons, seconds = each_node(model)
                row["each_node"] = {"refused": refused, "reasons": reasons, "seconds": seconds}
            results.append(row)
            print(
                f"| {model.stem} | {gpu['nodes_total']} | {gpu['nodes_delegated']} | "
                f"{gpu['delegated_partitions']} ({gpu['partitions']}) | {', '.join(left) or 'none'} | "
                f"{statistics.median(times):.2f} | {verdict} |"
            )
        for row in results:
            print(f"\n{row['model']}: {row['reason']}")
            for n in row["left_on_cpu"]:
                print(f"  {n['op']} (node {n['index']}): {n['reason']}")
            if "each_node" in row:
                e = row["each_node"]
                print(f"  each node compiled alone in {e['seconds']:.2f} s; refused alone: {e['refused'] or 'none'}")
                for index, reason in e["reasons"].items():
                    print(f"    node {index}: {reason}")
    mixed = next((r for r in results if r["model"] == "mixed"), None)
    if mixed:
        said = {n["index"]: n["reason"] for n in mixed["left_on_cpu"] if n["index"] in MIXED_REFUSED}
        same = all(MIXED_REFUSED[i] in (said.get(i) or "") for i in MIXED_REFUSED)
        print(f"\nmixed: the runtime's reasons for nodes 3 and 5 {'MATCH' if same else 'DIFFER from'} SwiftShader's")
    write_json(args.json, {"gpu": status, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
