"""`numerics`: each node's error on a delegate against a reference, found by cutting the model after
the node, and the first node that breaks the output. The figures against their definitions; the CPU against
LiteRT's reference kernels on every node (float and int8); the GPU at fp16 (SwiftShader) against the CPU at
fp32: the bundled float model and third-party models of other tasks, a model built to overflow fp16 at one
known node, and one the GPU takes only in part. Every run is the real CLI in a child process, on real LiteRT;
run_cli checks each --json against app/schemas/numerics.schema.json."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.numerics.metrics import Threshold, dequantized, error_stats
from app.tflite.file import read_tflite
from app.tflite.graph import read_graph
from tests.builders.gpu_models import MIXED, at_image_side, chain
from tests.builders.tflite_builder import GraphBuilder, options
from tests.helpers.cli import run_cli
from tests.helpers.paths import ROOT

# One worker runs the module: the GPU cuts are the costly part (docs/numerics.md) and share the machine.
pytestmark = pytest.mark.xdist_group("numerics")

VISION = ROOT.parent / "shared" / "fixtures" / "vision"
BUNDLED = ROOT / "models" / "efficientnet_lite0.tflite"
E2E_TOLERANCE = 1e-5  # the last row equals the end-to-end difference within this (docs/numerics.md)


def _same_error(row: dict, e2e: dict) -> None:
    """The last row's figures are the end-to-end ones (within E2E_TOLERANCE; SNR in dB within the same)."""
    for key in ("max_abs", "mean_abs", "cosine", "snr_db"):
        a, b = row[key], e2e[key]
        assert (a is None) == (b is None), (key, a, b)
        if a is not None:
            assert abs(a - b) <= E2E_TOLERANCE, (key, a, b)
    assert row["nonfinite"] == e2e["nonfinite"] and row["values"] == e2e["values"]


def test_the_figures_are_their_definitions():
    r = np.array([1.0, 2.0, 3.0, 4.0])
    d = r + np.array([0.0, 0.1, -0.1, 0.0])
    s = error_stats([d.astype(np.float32)], [r.astype(np.float32)])
    assert s.values == 4 and s.nonfinite == 0
    assert s.max_abs == pytest.approx(0.1, rel=1e-6) and s.mean_abs == pytest.approx(0.05, rel=1e-6)
    assert s.cosine == pytest.approx(float(d @ r / np.linalg.norm(d) / np.linalg.norm(r)), abs=1e-9)
    assert s.snr_db == pytest.approx(10 * math.log10(30 / 0.02), abs=1e-4)
    exact = error_stats([r], [r])
    assert exact.snr_db == math.inf and exact.to_dict()["snr_db"] is None and exact.to_dict()["exact"] is True
    # several input sets count as one vector each side
    d32, r32 = d.astype(np.float32), r.astype(np.float32)
    assert error_stats([d32[:2], d32[2:]], [r32[:2], r32[2:]]) == s
    # an fp16 overflow: the value is counted apart and the node breaks whatever its other figures
    overflow = error_stats([np.array([1.0, np.inf, 3.0, 4.0])], [r])
    assert overflow.nonfinite == 1 and overflow.values == 3 and Threshold().breaks(overflow)
    assert "1 value inf or NaN" in (Threshold().why(overflow) or "")
    # a quantized tensor compared in the real values it stands for
    assert dequantized(np.array([-128, 0, 127], np.int8), (0.5, -128)).tolist() == [0.0, 64.0, 127.5]


def test_the_threshold_is_settable():
    r = np.linspace(-1, 1, 100)
    s = error_stats([r + 0.01], [r])  # SNR about 35 dB, cosine 0.9998
    assert not Threshold().breaks(s)
    assert Threshold(min_snr_db=40).breaks(s) and "SNR" in (Threshold(min_snr_db=40).why(s) or "")
    assert Threshold(min_cosine=0.99999).breaks(s) and "cosine" in (Threshold(min_cosine=0.99999).why(s) or "")


@pytest.mark.slow
def test_the_cpu_against_the_reference_kernels_has_a_row_for_every_node_and_the_last_is_end_to_end():
    run = run_cli("numerics", "--delegate", "cpu", "--against", "reference", "--all", "--json", timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.json()
    nodes = len(read_graph(BUNDLED.read_bytes()).nodes)
    assert out["nodes"] == out["cuttable"] == nodes == 61
    assert [r["node"] for r in out["rows"]] == list(range(nodes))
    assert all(r["error"] is not None and r["not_run"] is None for r in out["rows"])
    assert out["cost"]["cuts_compiled"] == nodes and out["mode"] == "all" and out["precision"] == "fp32"
    _same_error(out["rows"][-1]["error"], out["end_to_end"])
    # XNNPACK and the reference kernels agree far inside the threshold, node by node (measured: SNR >= 110 dB)
    assert out["first_breaking"] is None and not any(r["breaks"] for r in out["rows"])
    assert min(r["error"]["snr_db"] for r in out["rows"]) > 80
    assert out["inputs"] == {"kind": "generated", "count": 1, "description": "1 generated input set (seed 0)"}


def test_an_int8_models_rows_are_compared_in_real_values():
    model = ROOT / "models" / "efficientnet_lite0_int8.tflite"
    run = run_cli("numerics", "--model", model, "--delegate", "cpu", "--against", "reference", "--all", "--json",
                  timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.json()
    last = out["rows"][-1]
    assert last["dtype"] in ("int8", "uint8")
    scale = read_tflite(model.read_bytes()).outputs[0].scale
    # dequantized: a difference is a whole number of quanta times the scale (raw integers would be whole numbers)
    steps = last["error"]["max_abs"] / scale
    assert abs(steps - round(steps)) < 1e-6 and last["error"]["max_abs"] < 1
    _same_error(last["error"], out["end_to_end"])


def test_a_node_that_writes_no_numbers_is_said_per_node(tmp_path: Path):
    g = GraphBuilder()
    x = g.input((1, 8, 8, 3))
    relu, less, back = g.tensor((1, 8, 8, 3)), g.tensor((1, 8, 8, 3), "bool"), g.tensor((1, 8, 8, 3))
    g.op("RELU", [x], [relu])
    g.op("LESS", [relu, g.const(np.full((1, 1, 1, 3), 0.5))], [less], options("LessOptions"))
    g.op("CAST", [less], [back], options("CastOptions"))
    path = tmp_path / "bool_inside.tflite"
    path.write_bytes(g.build([back]))
    explorer = tmp_path / "me.json"
    run = run_cli("numerics", "--model", path, "--delegate", "cpu", "--against", "reference", "--all", "--json",
                  "--model-explorer", explorer)  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = {r["node"]: r for r in run.json()["rows"]}
    # Model Explorer node data: a value per node with figures (its SNR), none for the node not cut
    data = json.loads(explorer.read_text())
    assert set(data["results"]) == {"0", "2"} and "SNR dB per node" in data["name"]
    assert data["results"]["0"]["value"] == 150.0  # RELU: the reference kernels and XNNPACK agree exactly
    assert sorted(rows) == [0, 1, 2]
    assert (
        rows[1]["error"] is None
        and rows[1]["not_run"].startswith("not cut: its output")
        and "bool" in (rows[1]["not_run"])
    )
    assert rows[0]["error"] is not None and rows[2]["error"] is not None


@pytest.fixture(scope="module")
def fp16_overflow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/builders/fp16_overflow.py: EXP (node 2) overflows fp16."""
    from tests.builders.fp16_overflow import fp16_overflow

    path = tmp_path_factory.mktemp("overflow") / "fp16_overflow.tflite"
    path.write_bytes(fp16_overflow())
    return path


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--all"]], ids=["search", "all"])
def test_the_gpu_at_fp16_breaks_exactly_at_the_node_that_overflows(swiftshader, fp16_overflow: Path, mode, tmp_path):
    graph = read_graph(fp16_overflow.read_bytes())
    (exp,) = [n.index for n in graph.nodes if n.op == "EXP"]
    explorer = tmp_path / "me.json"
    run = run_cli("numerics", "--model", fp16_overflow, "--allow-software-gpu", "--json", *mode, "--model-explorer",
                  explorer, env=swiftshader, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.json()
    values = {int(k): v["value"] for k, v in json.loads(explorer.read_text())["results"].items()}
    assert values[exp] == 0 and all(values[n] > 30 for n in range(exp))  # the break is the red node
    assert out["precision"] == "fp16" and out["software"] is True and out["delegate"] == "gpu"
    assert out["first_breaking"] == exp
    rows = {r["node"]: r for r in out["rows"]}
    assert sorted(rows) == list(range(len(graph.nodes)))  # 5 nodes: the window holds them all
    assert not any(rows[n]["breaks"] for n in range(exp))
    assert rows[exp]["error"]["nonfinite"] > 0 and "inf or NaN" in rows[exp]["why"]
    assert all(rows[n]["breaks"] for n in range(exp, len(graph.nodes)))
    _same_error(rows[len(graph.nodes) - 1]["error"], out["end_to_end"])
    if not mode:  # the text output names it too (once: the search finds what --all finds, checked above)
        text = run_cli("numerics", "--model", fp16_overflow, "--allow-software-gpu", env=swiftshader, timeout=300)
        assert f"first breaking node {exp} (EXP" in text.stdout, text.stdout


@pytest.mark.slow
def test_the_same_model_at_fp32_on_the_gpu_does_not_break(swiftshader: dict, fp16_overflow: Path):
    run = run_cli("numerics", "--model", fp16_overflow, "--allow-software-gpu", "--gpu-precision", "fp32", "--json",
                  env=swiftshader, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["precision"] == "fp32" and out["first_breaking"] is None and not out["output_breaks"]


@pytest.mark.slow
def test_the_bundled_float_model_on_the_gpu_at_fp16_last_row_is_end_to_end(swiftshader: dict, tmp_path: Path):
    run = run_cli("numerics", "--allow-software-gpu", "--json", env=swiftshader, timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.json()
    last = out["rows"][-1]
    assert last["node"] == out["nodes"] - 1 == 60
    _same_error(last["error"], out["end_to_end"])
    # fp16 against fp32: not bit for bit (SwiftShader honours fp16), far from broken (measured: SNR 39.8 dB)
    assert 30 < out["end_to_end"]["snr_db"] < 70 and out["first_breaking"] is None
    # search mode: the outputs did not break, so a few cuts spread over the model, not one per node, each
    # compiled whole by the GPU
    assert 1 < out["cost"]["cuts_compiled"] < out["cuttable"] and out["cost"]["cuts_refused"] == 0
    assert len(out["rows"]) == out["cost"]["cuts_compiled"] and out["not_cut"] == []
    assert all(r["error"] is not None and r["on_delegate"] is True for r in out["rows"])


@pytest.mark.slow  # 61 GPU compiles and runs under SwiftShader (docs/numerics.md)
def test_every_node_of_the_bundled_float_model_has_its_row_on_the_gpu(swiftshader: dict, tmp_path: Path):
    """The bundled model's 61 nodes, options and weights at a 64x64 image (each activation scaled alike): on
    SwiftShader a cut's run executes its whole prefix, so the command took 44-46 s of CPU at 224x224, 17-18 s
    here. The file as bundled is cut on the GPU by the search test above (the outputs' cut and cuts spread
    over it), and after every node on the CPU by the reference test."""
    model = tmp_path / "efficientnet_lite0_64.tflite"
    model.write_bytes(at_image_side(BUNDLED, 64))  # written anew: without the labels file zipped after it
    run = run_cli("numerics", "--model", model, "--labels", ROOT / "models" / "imagenet_labels.txt",
                  "--allow-software-gpu", "--all", "--json", env=swiftshader, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["rows"][0]["shape"] == [1, 32, 32, 32]  # the stem's 112x112 at 224
    assert out["mode"] == "all" and out["cuttable"] == out["nodes"] == 61 and out["not_cut"] == []
    assert [r["node"] for r in out["rows"]] == list(range(61))
    assert all(r["error"] is not None and r["on_delegate"] is True for r in out["rows"])
    assert out["cost"]["cuts_compiled"] == 61 and out["cost"]["cuts_refused"] == 0
    _same_error(out["rows"][-1]["error"], out["end_to_end"])
    assert out["first_breaking"] is None  # fp16 stays above 30 dB at every node (measured: 35.7-70 dB; 39.8 at 224)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["deeplabv3.tflite", "face_detection_front.tflite", "hand_landmark.tflite"])
def test_fixture_models_of_other_tasks_on_the_gpu_last_row_is_end_to_end(swiftshader: dict, name: str):
    if not (VISION / "README.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the third-party vision fixtures are missing at {VISION}")
        pytest.skip(f"third-party vision fixtures not present at {VISION}")
    graph = read_graph((VISION / name).read_bytes())
    # --growth 2: three cuts where the outputs hold, not seven; the last row is the point here, and every cut
    # of a model compiling on the GPU is the every-node test's (DeepLab's 7 cuts took 13 s of CPU).
    run = run_cli("numerics", "--model", VISION / name, "--allow-software-gpu", "--json", "--growth", "2",
                  env=swiftshader, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.json()
    last = out["rows"][-1]
    writers = {n.index for n in graph.nodes if set(n.outputs) & set(graph.outputs)}
    if len(writers) == 1:  # one node writes every output: its row is the last
        assert last["node"] == max(writers) and last["op"] != "(model outputs)"
    else:  # several do: the last row is a cut that writes them all
        assert last["node"] == len(graph.nodes) and last["op"] == "(model outputs)"
    _same_error(last["error"], out["end_to_end"])
    assert out["cost"]["cuts_refused"] == 0


@pytest.mark.slow
def test_a_model_the_gpu_takes_in_part_says_which_cuts_ran_partly_on_its_cpu_kernels(swiftshader: dict, tmp_path):
    path = tmp_path / "mixed.tflite"
    path.write_bytes(chain(MIXED))  # 0 ADD, 1 SOFTMAX, 2 MUL, 3 SOFTMAX beta 2 and 5 LOG_SOFTMAX refused
    run = run_cli("numerics", "--model", path, "--allow-software-gpu", "--all", "--json", env=swiftshader, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = {r["node"]: r for r in run.json()["rows"]}
    assert [rows[n]["on_delegate"] for n in range(3)] == [True, True, True]
    assert all(rows[n]["on_delegate"] is False for n in range(3, len(rows)))
    _same_error(rows[max(rows)]["error"], run.json()["end_to_end"])


@pytest.mark.slow
def test_a_recording_that_carries_a_table_has_it_in_its_report(tmp_path: Path):
    recording = tmp_path / "rec.csv"
    run = run_cli("bench", "--source", "demo", "--frames", "20", "--warmup", "2", "--csv", recording)
    assert run.returncode == 0, run.stderr
    # a threshold XNNPACK misses against the reference kernels (measured SNR 112-139 dB): a first breaking node
    numerics = run_cli("numerics", "--delegate", "cpu", "--against", "reference", "--min-snr-db", "125", "--json")
    assert numerics.returncode == 0, numerics.stderr
    first = numerics.json()["first_breaking"]
    assert first is not None
    out = tmp_path / "r.html"
    assert run_cli("report", recording, "--out", out).returncode == 0
    assert "Numerics:" not in out.read_text()  # no table beside it: no section
    (tmp_path / "rec.numerics.json").write_text(numerics.stdout)
    assert run_cli("report", recording, "--out", out).returncode == 0
    page = out.read_text()
    assert "Numerics:" in page and f"First breaking node: node {first}." in page
    assert f"<tr style='background:#ffebee'><td>{first}</td>" in page  # the first breaking node highlighted
    for row in numerics.json()["rows"]:  # every row, in the table's columns
        assert f"<td>{row['node']}</td><td>{row['op']}</td>" in page, row
    (tmp_path / "rec.numerics.json").write_text("{not json")  # a damaged table: the report renders without it
    assert run_cli("report", recording, "--out", out).returncode == 0 and "Numerics:" not in out.read_text()


_SHARED_ENVIRONMENT = """
import json, numpy as np
from app.backends.options import BackendOptions
from app.backends.litert_c import HW_CPU, HW_GPU, Environment, NativeModel
from app.errors import ModelError
import app.numerics.runners as runners
from app.numerics.runners import GpuCuts
from tests.builders.gpu_models import chain
used = []  # the environment each cut's model compiled in
class Recording(NativeModel):
    def _open(self, content):
        super()._open(content)
        used.append(self._env.value)
runners.NativeModel = Recording
content = chain("ASM")
x = [np.linspace(-1, 1, 8 * 8 * 3, dtype=np.float32).reshape(1, 8, 8, 3)]
alone = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, capture_log=False)
expected = alone.run_all(x); alone.close()
cuts = GpuCuts(BackendOptions(threads=1, allow_software=True))
runs = [cuts.run(content, [(1, 8, 8, 3)], [x]) for _ in range(3)]
shared = cuts._environment.handle.value if cuts._environment else None
same = all(np.array_equal(r.outputs[0][0], expected[0]) for r in runs)
cuts.close()
closed = Environment(gpu=True); closed.close()
try:
    NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, capture_log=False, environment=closed); refused = None
except ModelError as exc:
    refused = str(exc)
print(json.dumps({"shared": shared is not None and used == [shared] * 3, "same": same,
                  "after_close": cuts._environment is None, "on_gpu": [r.on_delegate for r in runs],
                  "refused": refused}))
"""


def test_the_gpu_cuts_share_one_environment_and_give_what_a_model_of_its_own_gives(swiftshader: dict):
    """Making a LiteRT environment makes the GPU device, 1.4 s on SwiftShader against ~0.1 s for a small cut's
    compile, so the cuts compile in one (docs/numerics.md); each still compiles alone and gives what the same
    model in an environment of its own gives, bit for bit, and the environment is gone once the scan closes."""
    proc = subprocess.run([sys.executable, "-c", _SHARED_ENVIRONMENT], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **swiftshader}, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["shared"] and out["after_close"] and out["same"] and out["on_gpu"] == [True, True, True], out
    assert out["refused"] == "the shared LiteRT environment is closed", out
