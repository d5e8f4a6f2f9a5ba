"""`delegate-scope inspect` as a user runs it: the JSON contract, the readable table, bad models,
and Core ML coverage carried by classify and bench. The JSON contract, the software GPU and the recording
run in a fresh interpreter each, the rest in processes forked from one that imported the app
(tests/helpers/forked_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.model.spec import bundled_models
from tests.helpers.bad_models import bad_models
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import PHOTOS
from tests.helpers.vulkan import NO_VULKAN

COVERAGE_KEYS = {"delegate", "source", "reason", "nodes_total", "nodes_delegated", "partitions",
                 "delegated_partitions", "log", "nodes"}  # fmt: skip
NODE_KEYS = {"index", "op", "version", "delegated", "partition", "reason"}


@pytest.mark.slow
def test_json_contract_without_a_gpu():
    run = run_cli("inspect", "--json", env=NO_VULKAN, fresh=True)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert set(out) == {"schema_version", "model", "coverage", "gpu_adapter", "coreml_pieces", "memory"}
    assert [(p["where"], len(p["nodes"])) for p in out["coreml_pieces"]] == [("coreml", 58), ("cpu", 1), ("coreml", 2)]
    assert out["model"]["name"] == "efficientnet_lite0" and out["model"]["input"]["dtype"] == "float32"
    cov = out["coverage"]
    assert set(cov) == {"cpu", "gpu", "coreml"}
    for name, c in cov.items():
        # log_source: only where the line is measured (the CPU's, computed here); no GPU, Core ML's predicted.
        assert set(c) == COVERAGE_KEYS | ({"log_source"} if name == "cpu" else set()), name
        assert c["delegate"] == name
    assert cov["cpu"]["log_source"] == "computed"
    assert cov["cpu"]["log"] == (
        "Replacing 61 out of 61 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 1 partitions "
        "for subgraph 0 (main)."
    )
    assert cov["cpu"]["source"] == "measured" and cov["cpu"]["nodes_delegated"] == 61
    assert all(set(n) == NODE_KEYS for n in cov["cpu"]["nodes"]) and len(cov["cpu"]["nodes"]) == 61
    assert cov["gpu"]["source"] == "unavailable" and "no GPU" in cov["gpu"]["reason"]
    assert cov["gpu"]["nodes"] == [] and out["gpu_adapter"] is None
    coreml = cov["coreml"]
    assert coreml["source"] == "predicted"
    assert coreml["log"] == "CoreML delegate: 60 nodes delegated out of 61 nodes, with 2 partitions."
    assert (coreml["partitions"], coreml["delegated_partitions"]) == (2, 2)
    refused = [n for n in coreml["nodes"] if not n["delegated"]]
    assert [(n["index"], n["op"]) for n in refused] == [(58, "MEAN")]


@pytest.mark.slow
def test_coreml_version_2_is_an_option_and_other_versions_are_refused(forked_cli: ForkedCli):
    run = forked_cli.run("inspect", "--coreml-version", "2", "--json", env=NO_VULKAN)
    assert run.returncode == 0 and "coreml_version 2" in run.json()["coverage"]["coreml"]["reason"]
    assert forked_cli.run("inspect", "--coreml-version", "4").returncode == 2


@pytest.mark.slow
def test_readable_output_is_summary_lines_a_run_length_table_and_reasons(forked_cli: ForkedCli):
    run = forked_cli.run("inspect", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    text = run.stdout
    assert "CPU (XNNPACK)  measured    61 of 61 nodes delegated in 1 partition\n" in text
    assert "\n" + " " * 27 + "log (computed; this LiteRT build does not print it): Replacing 61 out of 61" in text
    assert "Core ML        predicted   CoreML delegate: 60 nodes delegated out of 61 nodes, with 2 partitions." in text
    assert "58     p0             CPU      MEAN" in text
    assert "MEAN (node 58): keep_dims is false" in text
    assert "Core ML on a Mac runs it in 3 pieces: Core ML nodes 0–57 → CPU node 58 (MEAN) → Core ML nodes 59–60" in text
    coverage, _, memory = text.partition("\nmemory, what the file implies:\n")
    assert len(coverage.splitlines()) < 27  # a short table, not 61 rows
    assert memory.startswith("  weights      18 MB in 101 constant tensors"), memory
    assert "  activations  6.3 MB arena" in memory, memory


@pytest.mark.slow
def test_a_software_gpu_is_measured_and_flagged(swiftshader: dict):
    run = run_cli("inspect", "--json", env=swiftshader, fresh=True)
    assert run.returncode == 0, run.stderr
    out = run.json()
    gpu = out["coverage"]["gpu"]
    assert gpu["source"] == "measured" and gpu["reason"].startswith("on a SOFTWARE RENDERER")
    assert out["gpu_adapter"]["software"] is True and "SwiftShader" in out["gpu_adapter"]["name"]
    assert gpu["nodes_delegated"] == gpu["nodes_total"] == 61


@pytest.mark.slow
def test_every_bundled_and_fixture_model(coral: Path, forked_cli: ForkedCli):
    for model in [*bundled_models(), *sorted(coral.glob("*.tflite"))]:
        run = forked_cli.run("inspect", "--model", model, "--json", env=NO_VULKAN)
        assert run.returncode == 0, (model, run.stderr)
        cov = run.json()["coverage"]
        assert cov["cpu"]["nodes_total"] == cov["coreml"]["nodes_total"] == len(cov["coreml"]["nodes"])
        assert cov["coreml"]["log"].startswith("CoreML delegate: "), model
        if not cov["coreml"]["nodes_delegated"]:  # nothing runs in Core ML: no pieces (the quantized models)
            assert run.json()["coreml_pieces"] is None, model


@pytest.mark.parametrize("case", ["missing", "empty", "truncated", "not tflite", "a jpeg", "dynamic size"])
def test_bad_models_exit_3_with_one_line(tmp_path: Path, case: str, forked_cli: ForkedCli):
    path, fragment = bad_models(tmp_path)[case]
    assert_one_line_error(forked_cli.run("inspect", "--model", path, env=NO_VULKAN), 3, fragment)


@pytest.mark.slow
def test_classify_on_coreml_carries_the_predicted_coverage_inspect_prints(forked_cli: ForkedCli):
    classify = forked_cli.run("classify", "--delegate", "coreml", "--json", PHOTOS / "coffee.jpg")
    assert classify.returncode == 0, classify.stderr
    delegate = classify.json()["delegate"]
    assert delegate["used"] == "cpu" and delegate["fallback_reason"]
    inspected = forked_cli.run("inspect", "--json", env=NO_VULKAN).json()
    inspect = inspected["coverage"]
    assert delegate["predicted"] == inspect["coreml"]
    # The pieces the window shows (app/coreml_mil/split.py's CoreMLPieces) are inspect's.
    pieces = delegate["coreml_pieces"]["pieces"]
    assert [(p["index"], p["where"], p["nodes"]) for p in pieces] == [
        (p["piece"], p["where"], p["nodes"]) for p in inspected["coreml_pieces"]
    ]
    assert [p["ops"] for p in pieces if p["where"] == "cpu"] == [["MEAN"]]
    assert delegate["coreml_pieces"]["first_inference_ms"] is None  # nothing ran in pieces here
    assert delegate["coverage"]["delegate"] == "cpu" and delegate["coverage"]["source"] == "measured"
    table = forked_cli.run("classify", "--delegate", "coreml", PHOTOS / "coffee.jpg").stdout
    assert "coreml    Core ML can't run here; on a Mac the TFLite Core ML delegate would take 60 of 61 nodes" in table
    assert "left on the CPU: MEAN (node 58): keep_dims is false" in table


@pytest.mark.slow
def test_a_recording_and_its_report_keep_the_coverage_of_what_ran(tmp_path: Path):
    import json

    csv = tmp_path / "coreml.csv"
    run = run_cli("bench", "--delegate", "coreml", "--source", "synthetic", "--frames", "15", "--warmup", "2",
                  "--csv", csv, env=NO_VULKAN, fresh=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    (session,) = json.loads(csv.with_name("coreml.csv.meta.json").read_text())["sessions"].values()
    assert session["coverage"]["delegate"] == "cpu" and session["coverage"]["nodes_delegated"] == 61
    assert session["predicted"]["log"] == "CoreML delegate: 60 nodes delegated out of 61 nodes, with 2 partitions."
    out = tmp_path / "report.html"
    assert run_cli("report", csv, "--out", out, fresh=True).returncode == 0
    page = out.read_text()
    assert "Core ML delegate (predicted)" in page
    assert "CoreML delegate: 60 nodes delegated out of 61 nodes, with 2 partitions." in page
    assert "MEAN (node 58): keep_dims is false" in page


def test_a_gpu_child_killed_by_a_signal_is_named_so():
    """LiteRT's GPU accelerator aborts on some models (a failed CHECK in object_reader.cc on YAMNet
    under SwiftShader): the coverage says the child was killed by SIGABRT, not a bare exit code."""
    import subprocess
    import sys

    from app.tasks.inspect import _child_failure

    aborted = subprocess.run([sys.executable, "-c", "import os; os.abort()"], capture_output=True, text=True)
    assert _child_failure(aborted, ValueError()) == (
        "the GPU child process was killed by SIGABRT while the runtime opened the model"
    )
    failed = subprocess.run([sys.executable, "-c", "raise SystemExit(3)"], capture_output=True, text=True)
    assert _child_failure(failed, IndexError()) == "the GPU child process failed (exit code 3)"
    assert "could not start" in _child_failure(None, OSError("no such file"))
