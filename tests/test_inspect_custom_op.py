"""`inspect` on a model this LiteRT runtime cannot load (a custom op it has no kernel for, as PoseNet's
`PosenetDecoderOp`): exit 0 with what the file says (its nodes, Core ML's prediction from the graph), the
op named, and the measured sections saying they are not measurable here and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders.tflite_builder import GraphBuilder
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.vulkan import NO_VULKAN

WHY = (
    "not measurable here: the model needs the custom op 'PosenetDecoderOp' (node 2), which this LiteRT runtime "
    "does not have"
)


@pytest.fixture(scope="module")
def custom_op_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two float ops Core ML takes, then the custom op no runtime here has (node 2)."""
    g = GraphBuilder()
    image = g.input((1, 8, 8, 3))
    relu = g.tensor((1, 8, 8, 3))
    g.op("RELU", [image], [relu])
    doubled = g.tensor((1, 8, 8, 3))
    g.op("ADD", [relu, relu], [doubled])
    scores = g.tensor((1, 10))
    g.custom("PosenetDecoderOp", [doubled], [scores])
    path = tmp_path_factory.mktemp("custom") / "custom_op.tflite"
    path.write_bytes(g.build([scores]))
    return path


def test_inspect_shows_what_the_file_says_and_why_the_rest_is_not_measurable(custom_op_model: Path):
    run = run_cli("inspect", "--model", custom_op_model, env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert (
        "          node 2 CUSTOM:PosenetDecoderOp: needs a custom op this LiteRT runtime does not have; "
        "no backend here runs the model"
    ) in lines
    assert f"CPU (XNNPACK)  unavailable {WHY}" in lines
    assert f"GPU (LiteRT)   unavailable {WHY}" in lines
    # Core ML reads only the graph: its prediction stands, node by node.
    coreml = "Core ML        predicted   CoreML delegate: 2 nodes delegated out of 3"
    assert any(line.startswith(coreml) for line in lines), run.stdout
    assert any(line.startswith("2 ") and "CUSTOM:PosenetDecoderOp" in line for line in lines), run.stdout
    refused = "CUSTOM:PosenetDecoderOp is not among the ops the delegate takes"
    assert f"  CUSTOM:PosenetDecoderOp (node 2): {refused}" in lines


def test_inspect_json_names_the_missing_op_and_rules_on_it_fail_unchecked(custom_op_model: Path):
    run = run_cli("inspect", "--model", custom_op_model, "--json", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["missing_custom_op"] == {"op": "PosenetDecoderOp", "nodes": [2], "reason": WHY.removeprefix(
        "not measurable here: ")}  # fmt: skip
    for delegate in ("cpu", "gpu"):
        coverage = out["coverage"][delegate]
        assert (coverage["source"], coverage["reason"], coverage["nodes_delegated"]) == ("unavailable", WHY, None)
    assert out["coverage"]["coreml"]["nodes_delegated"] == 2
    # A gate on the CPU cannot be checked: it fails, never passes on what could not be measured.
    gated = run_cli("inspect", "--model", custom_op_model, "--require", "cpu:nodes>=0", "coreml:nodes>=2",
                    env=NO_VULKAN)  # fmt: skip
    assert_one_line_error(gated, 7, "1 of 2 required checks failed: cpu:nodes>=0")
    assert f"required cpu:nodes>=0 failed: could not be checked, the cpu coverage is unknown: {WHY}" in gated.stdout


def test_a_model_without_custom_ops_keeps_its_json_keys():
    run = run_cli("inspect", "--json", env=NO_VULKAN)
    assert run.returncode == 0 and "missing_custom_op" not in run.json()


def test_debug_never_prints_an_empty_log_heading(custom_op_model: Path):
    run = run_cli("classify", "--model", custom_op_model, "--debug", str(Path(__file__).parent / "data" / "photos" /
                  "coffee.jpg"), env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 3
    lines = run.stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("delegate-scope: native runtime log ("):
            assert i + 1 < len(lines) and lines[i + 1].startswith("[native] "), run.stderr
    assert any(
        line.startswith("delegate-scope: native runtime log (")
        or line.startswith("delegate-scope: the native runtime wrote nothing to its log (")
        for line in lines
    ), run.stderr
