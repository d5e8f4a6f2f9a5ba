"""Which nodes LiteRT's GPU accelerator takes of a model it does not take whole, on the real runtime
under SwiftShader (skipped, with the reason, where that Vulkan driver is absent), and the reasoning
that turns the runtime's log into nodes, on lines as LiteRT prints them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ai_edge_litert import schema_py_generated as fb

from app.coverage.gpu_nodes import GpuSplit, one_node_model, parse_split, resolve
from app.tflite.graph import read_graph
from tests.builders.gpu_models import MIXED, MIXED_REFUSED, MIXED_TAKEN, TIE, chain, with_softmax_beta
from tests.helpers.cli import run_cli
from tests.helpers.paths import PHOTOS, ROOT

PHOTO = PHOTOS / "coffee.jpg"


def test_the_refused_ops_block_is_read_as_litert_prints_it():
    lines = [
        "INFO: [environment.cc:47] Adding options to the existing LiteRT environment",
        "ERROR: Following operations are not supported by GPU delegate:",
        "LOG_SOFTMAX: Operation is not supported.",
        "SOFTMAX: Softmax.beta != 1 is not supported.",
        "3 operations will run on the GPU, and the remaining 5 operations will run on the CPU.",
        "I0000 00:00:1796358517.247595    8559 delegate_kernel.cc:984] Initializing WebGPU-based API from graph.",
    ]
    split = parse_split(lines)
    assert split == GpuSplit(
        (("LOG_SOFTMAX", "Operation is not supported."), ("SOFTMAX", "Softmax.beta != 1 is not supported.")),
        3,
        5,
        "3 operations will run on the GPU, and the remaining 5 operations will run on the CPU.",
    )
    none = [
        "ERROR: Following operations are not supported by GPU delegate:",
        "LOG_SOFTMAX: Operation is not supported.",
        "No operations will run on the GPU, and all 3 operations will run on the CPU.",
    ]
    assert (parse_split(none).gpu_nodes, parse_split(none).cpu_nodes) == (0, 3)
    assert parse_split(["INFO: Created TensorFlow Lite XNNPACK delegate for CPU."]) is None


def test_a_node_compiled_alone_keeps_its_op_options_shapes_and_constants():
    content = chain(MIXED)
    graph = read_graph(content)
    alone = read_graph(one_node_model(fb.ModelT.InitFromPackedBuf(content, 0), content, 3))
    (node,) = alone.nodes
    assert (node.op, node.options.beta) == ("SOFTMAX", 2.0)
    assert [alone.tensors[t].shape for t in alone.inputs] == [(1, 8, 8, 3)]
    add = read_graph(one_node_model(fb.ModelT.InitFromPackedBuf(content, 0), content, 4))
    const = add.tensors[add.nodes[0].inputs[1]]
    original = graph.tensors[graph.nodes[4].inputs[1]]
    assert const.constant and const.data.tolist() == original.data.tolist() and len(add.inputs) == 1


def test_an_answer_that_does_not_add_up_to_the_runtimes_count_is_not_given():
    graph = read_graph(chain(MIXED))

    def never(_: bytes) -> tuple[bool, list[str]]:
        raise AssertionError("no refused kind: nothing to compile alone")

    # Every node supported makes one partition of 8: no number of largest partitions holds 5.
    said = resolve(graph, chain(MIXED), GpuSplit((), 5, 3, None), False, never)
    assert isinstance(said, str) and "adds up" in said
    said = resolve(graph, chain(MIXED), GpuSplit((), 8, 0, None), False, never)
    assert isinstance(said, str) and "is_fully_accelerated" in said
    said = resolve(graph, chain(MIXED), GpuSplit((), 3, 4, None), False, never)
    assert isinstance(said, str) and "the model has 8" in said


_CONTRADICTED = """
import json
from app.backends.gpu.backend import _compile_alone
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.coverage.gpu_nodes import GpuSplit, resolve
from app.tflite.graph import read_graph
from tests.builders.gpu_models import MIXED, chain
content = chain(MIXED)
model = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False)
split = GpuSplit((("MUL", "made up for this test"),), 7, 1, None)
print(json.dumps(resolve(read_graph(content), content, split, False, _compile_alone(model))))
"""


def test_a_refused_kind_whose_every_node_passes_alone_is_a_disagreement(swiftshader: dict):
    """MUL is taken alone (on the real runtime, in a child process); a log that refused it would
    contradict the one-node answers, so the nodes are not given."""
    proc = subprocess.run([sys.executable, "-c", _CONTRADICTED], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **swiftshader}, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    assert said == "the GPU log refuses MUL, but each MUL node compiled alone was taken"


def inspect_gpu(model: Path, env: dict) -> dict:
    run = run_cli("inspect", "--model", model, "--json", env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.json()["coverage"]["gpu"]


@pytest.mark.slow
def test_swiftshader_takes_the_largest_partition_and_says_why_the_rest_stays(swiftshader: dict, tmp_path: Path):
    model = tmp_path / "mixed.tflite"
    model.write_bytes(chain(MIXED))
    gpu = inspect_gpu(model, swiftshader)
    assert gpu["source"] == "measured"
    # TFLite's line for the GPU, computed (this build does not print it), agrees with the line the GPU
    # delegate does print: 3 nodes, 3 + 5 in all; P counts the CPU's subset too (nodes 3-7: one subset).
    printed = "3 operations will run on the GPU, and the remaining 5 operations will run on the CPU."
    assert (gpu["log"], gpu["log_source"]) == (
        "Replacing 3 out of 8 node(s) with delegate (LITERT_WEBGPU) node, yielding 2 partitions for subgraph 0 ().",
        "computed",
    )
    assert gpu["reason"].endswith(f"; its log says: {printed}")
    assert (gpu["nodes_total"], gpu["nodes_delegated"], gpu["partitions"], gpu["delegated_partitions"]) == (8, 3, 3, 1)
    assert "each compiled alone" in gpu["reason"]
    nodes = gpu["nodes"]
    assert [n["index"] for n in nodes if n["delegated"]] == MIXED_TAKEN
    assert [n["partition"] for n in nodes] == [0, 0, 0, None, None, None, None, None]
    assert all(n["delegated"] is False for n in nodes[3:])
    # SOFTMAX is taken at node 1 (beta 1) and refused at node 3 (beta 2): one kind, two answers.
    for index, words in MIXED_REFUSED.items():
        assert f"refuses it: {words}" in nodes[index]["reason"] and "compiled alone" in nodes[index]["reason"]
    for index in (4, 6, 7):
        assert "delegates only its largest partition" in nodes[index]["reason"]

    run = run_cli("inspect", "--model", model, env=swiftshader, timeout=300)
    assert "0–2    p0             p0            p0       ADD, SOFTMAX, MUL" in run.stdout
    assert "SOFTMAX (node 3): the GPU accelerator refuses it: Softmax.beta != 1 is not supported." in run.stdout


@pytest.mark.slow
def test_equal_partitions_leave_which_one_the_gpu_took_open(swiftshader: dict, tmp_path: Path):
    model = tmp_path / "tie.tflite"
    model.write_bytes(chain(TIE))
    gpu = inspect_gpu(model, swiftshader)
    assert gpu["nodes_delegated"] == 2 and gpu["delegated_partitions"] == 1 and gpu["partitions"] == 2
    # Which of two equal partitions it took is open, and so is TFLite's count of subsets: the GPU
    # delegate's own printed line stands in for it.
    assert (gpu["log"], gpu["log_source"]) == (
        "2 operations will run on the GPU, and the remaining 3 operations will run on the CPU.",
        "printed",
    )
    assert [n["delegated"] for n in gpu["nodes"]] == [None, None, False, None, None]
    assert "which is not reported by the runtime" in gpu["nodes"][0]["reason"]


@pytest.mark.slow
def test_classify_names_the_ops_left_on_the_cpu(swiftshader: dict, tmp_path: Path):
    model = tmp_path / "mixed.tflite"
    model.write_bytes(chain(MIXED))
    run = run_cli("classify", "--model", model, "--delegate", "gpu", "--allow-software-gpu", "--json", PHOTO,
                  env=swiftshader, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    delegate = run.json()["delegate"]
    assert (delegate["used"], delegate["fully_accelerated"], delegate["nodes_delegated"]) == ("gpu", False, 3)
    assert delegate["cpu_ops"] == ["ADD", "LOG_SOFTMAX", "RESHAPE", "SOFTMAX"]
    assert [n["delegated"] for n in delegate["coverage"]["nodes"]] == [True] * 3 + [False] * 5


@pytest.mark.slow
def test_a_61_node_model_with_one_refused_node_is_answered_quickly(swiftshader: dict, tmp_path: Path):
    """EfficientNet-Lite0 whose final SOFTMAX has beta 2: only that node is compiled alone."""
    model = tmp_path / "efficientnet_lite0_beta2.tflite"
    model.write_bytes(with_softmax_beta(ROOT / "models/efficientnet_lite0.tflite", 2.0))
    gpu = inspect_gpu(model, swiftshader)
    assert gpu["reason"].endswith(
        "its log says: 60 operations will run on the GPU, and the remaining 1 operations will run on the CPU."
    )
    # The SOFTMAX left at the end is a subset of its own: 2 partitions, as the runtime's partitioning counts.
    assert gpu["log"] == (
        "Replacing 60 out of 61 node(s) with delegate (LITERT_WEBGPU) node, "
        "yielding 2 partitions for subgraph 0 (main)."
    )
    assert [n["index"] for n in gpu["nodes"] if not n["delegated"]] == [60]
    assert all(n["partition"] == 0 for n in gpu["nodes"][:60])
    assert "1 node(s) of those kinds each compiled alone" in gpu["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_a_model_taken_whole_compiles_nothing_alone(swiftshader: dict, model: str):
    gpu = inspect_gpu(ROOT / f"models/{model}.tflite", swiftshader)
    assert gpu["nodes_delegated"] == 61 and "compiled alone" not in gpu["reason"]
    assert gpu["log"] == (
        "Replacing 61 out of 61 node(s) with delegate (LITERT_WEBGPU) node, "
        "yielding 1 partitions for subgraph 0 (main)."
    )
