"""The GPU backend on models that are not classifiers, on the real runtime under SwiftShader:
several outputs, outputs the file leaves without a shape, a custom op left on the CPU, uint8 pixels
without quantization, a model LiteRT's compiled-model API cannot read. Each model is opened once, in a
child process (the Vulkan driver is chosen by the environment), beside the CPU session on the same inputs.

Tolerances: the GPU runs fp16 here (SwiftShader honours the precision the session asks for), and a
quantized model's ops in float where the CPU runs integer kernels; each bound below is a few times what
was measured on this machine (figures beside it), far below what a wrong output, a wrong buffer or a
swapped output would give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.builders.tflite_builder import GraphBuilder, options
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.paths import ROOT

# One worker runs the module: its fixtures open each model once.
pytestmark = pytest.mark.xdist_group("gpu_any_model")

VISION = ROOT.parent / "shared" / "fixtures" / "vision"
PHOTOS = ROOT.parent / "shared" / "fixtures" / "coral"
SSD = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"


@pytest.fixture(scope="module")
def vision_models() -> Path:
    """Third-party models beyond classifiers; absent in a user's checkout, mandatory in CI."""
    if not (VISION / "README.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the third-party vision fixtures are missing at {VISION}")
        pytest.skip(f"third-party vision fixtures not present at {VISION} (they exist for CI and developers only)")
    return VISION


_CHILD = """
import json, sys
from pathlib import Path
import numpy as np
from app.backends.cpu import CpuSession
from app.backends.gpu.backend import GpuSession
from app.errors import BackendUnavailable
from app.model.feed import InputFeeder
from app.model.image_files import read_image
from app.model.preprocess import Preprocessor
from app.model.spec import load_model_spec
from app.profile.gpu import profile_gpu

model, profile, photos = sys.argv[1], sys.argv[2] == "profile", sys.argv[3:]
spec = load_model_spec(model)
try:
    gpu = GpuSession(spec, "fp16", 2, allow_software=True)
except BackendUnavailable as exc:
    print(json.dumps({"opened": False, "reason": str(exc)}))
    sys.exit(0)
cpu = CpuSession(spec, 2)
pre, feeder = Preprocessor(spec), InputFeeder(spec)
runs = []
for photo in photos:
    inputs = feeder.inputs(pre(read_image(Path(photo))).copy())
    ours, theirs = gpu.run_all(inputs), cpu.run_all(inputs)
    primary = gpu.run(inputs[spec.image_input])  # run(): the image, the task's primary output
    runs.append({
        "gpu": [o.tolist() for o in ours], "cpu": [o.tolist() for o in theirs],
        "shapes": [list(o.shape) for o in ours], "dtypes": [str(o.dtype) for o in ours],
        "cpu_shapes": [list(o.shape) for o in theirs], "primary_same": bool(np.array_equal(primary, ours[0].ravel())),
    })
r = gpu.report
out = {"opened": True, "fully": r.fully_accelerated, "delegated": r.nodes_delegated, "total": r.nodes_total,
       "partitions": r.partitions, "cpu_ops": r.cpu_ops, "first_ms": r.first_inference_ms,
       "coverage": r.coverage.to_dict(), "file_shapes": [list(t.shape) for t in spec.outputs], "runs": runs}
if profile:
    import app.profile.gpu
    app.profile.gpu.WARMUP_RUNS = 0  # the session ran each photo twice above: warm (a run of the SSD is ~1.2 s here)
    p = profile_gpu(spec, gpu, 1, 1)
    out["profile"] = [{"op": o.op, "node": o.node, "nodes": list(o.nodes or ()), "place": str(o.placement), "ms": o.ms}
                      for o in p.ops]
    out["wall_ms"] = p.wall_ms
gpu.close()
print(json.dumps(out))
"""


def _open(swiftshader: dict, model: Path, *photos: str, profile: bool = False) -> dict:
    args = [sys.executable, "-c", _CHILD, str(model), "profile" if profile else "-", *(str(PHOTOS / p) for p in photos)]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **swiftshader},
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def ssd(swiftshader: dict, vision_models: Path) -> dict:
    return _open(swiftshader, vision_models / SSD, "grace_hopper.bmp", profile=True)


@pytest.fixture(scope="module")
def hand(swiftshader: dict, vision_models: Path) -> dict:
    return _open(swiftshader, vision_models / "hand_landmark.tflite", "grace_hopper.bmp", "cat.bmp")


@pytest.fixture(scope="module")
def movenet(swiftshader: dict, vision_models: Path) -> dict:
    return _open(swiftshader, vision_models / "movenet_single_pose_lightning_ptq.tflite", "grace_hopper.bmp")


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    top, left = max(a[0], b[0]), max(a[1], b[1])
    bottom, right = min(a[2], b[2]), min(a[3], b[3])
    inter = max(bottom - top, 0) * max(right - left, 0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union)


@pytest.mark.slow
def test_the_ssd_runs_on_the_gpu_with_its_post_processing_left_on_the_cpu(ssd: dict):
    """The file gives the four TFLite_Detection_PostProcess outputs no shape; the op sets it when the
    runtime allocates, and the GPU session reads that (buffers made from the file's type were too small:
    "Custom allocation is too small for tensor")."""
    assert ssd["opened"] and ssd["file_shapes"] == [[], [], [], []]
    (run,) = ssd["runs"]
    assert run["shapes"] == run["cpu_shapes"] == [[1, 10, 4], [1, 10], [1, 10], [1]]
    assert run["dtypes"] == ["float32"] * 4 and run["primary_same"]
    # The runtime's own count, and the one node it leaves: the custom op, last.
    assert (ssd["fully"], ssd["delegated"], ssd["total"], ssd["partitions"]) == (False, 63, 64, 1)
    assert ssd["cpu_ops"] == ["CUSTOM:TFLite_Detection_PostProcess"]
    coverage = ssd["coverage"]
    # The runtime prints only the GPU delegate's count; TFLite's own line is computed from the nodes it took.
    assert coverage["log"] == (
        "Replacing 63 out of 64 node(s) with delegate (LITERT_WEBGPU) node, yielding 2 partitions for subgraph 0 ()."
    )
    assert coverage["log_source"] == "computed"
    printed = "63 operations will run on the GPU, and the remaining 1 operations will run on the CPU."
    assert printed in coverage["reason"]
    assert [n["index"] for n in coverage["nodes"] if not n["delegated"]] == [63]
    # Detections above 0.5 (LiteRT's own on this photo: person 0.72, tie 0.66; README): the same classes
    # in the same order, boxes of IoU >= 0.9 (measured 0.946 and 0.984), scores within 0.03 (measured 0 to
    # 0.012 over all ten; they are quantized in steps of 1/256 before the post-processing). A score near
    # 0.5 may land on either side (bird.bmp: 0.512 on the CPU, 0.488 on the GPU): the CPU's set is compared.
    boxes, classes, scores, count = (np.asarray(o) for o in run["gpu"])
    cpu_boxes, cpu_classes, cpu_scores, cpu_count = (np.asarray(o) for o in run["cpu"])
    assert count[0] == cpu_count[0] == 10
    kept = cpu_scores[0] > 0.5
    # person, tie: the metadata's labelmap has "tie" at line 31 (the README's "(27)" is its "umbrella")
    assert cpu_classes[0][kept].astype(int).tolist() == [0, 31]
    assert classes[0][kept].tolist() == cpu_classes[0][kept].tolist()
    assert np.abs(scores[0][kept] - cpu_scores[0][kept]).max() < 0.03
    assert min(_iou(a, b) for a, b in zip(boxes[0][kept], cpu_boxes[0][kept], strict=True)) >= 0.9


@pytest.mark.slow
def test_the_gpu_profile_of_the_ssd_times_its_cpu_node_apart(ssd: dict):
    """profile --delegate gpu on a model the classification path cannot run: every input through run_all,
    the GPU partition timed by difference, the custom op by the CPU profile."""
    gpu_row, custom = ssd["profile"]
    assert (gpu_row["op"], gpu_row["nodes"], gpu_row["place"]) == ("GPU partition 0", list(range(63)), "accelerator")
    assert (custom["op"], custom["node"], custom["place"]) == ("CUSTOM:TFLite_Detection_PostProcess", 63, "cpu")
    assert custom["ms"] > 0 and gpu_row["ms"] + custom["ms"] == pytest.approx(ssd["wall_ms"])


@pytest.mark.slow
def test_three_outputs_of_a_fully_accelerated_landmark_model_agree_with_the_cpu(hand: dict):
    assert (hand["fully"], hand["delegated"], hand["total"], hand["partitions"]) == (True, 64, 64, 1)
    assert hand["first_ms"] > 0
    for run in hand["runs"]:
        assert run["shapes"] == run["cpu_shapes"] == [[1, 63], [1, 1], [1, 1]]
        assert run["primary_same"]
        landmarks, presence, handedness = (np.asarray(o) for o in run["gpu"])
        cpu_landmarks, cpu_presence, cpu_handedness = (np.asarray(o) for o in run["cpu"])
        # 21 points in input pixels (0-224): within 1.5 px (fp16: measured 0.43 px at most).
        assert np.abs(landmarks - cpu_landmarks).max() < 1.5
        assert np.abs(landmarks).max() > 100  # points, not zeros: the outputs were read
        # Probabilities within 0.05 (measured 0.029 at most); the outputs in the model's order.
        assert np.abs(presence - cpu_presence).max() < 0.05
        assert np.abs(handedness - cpu_handedness).max() < 0.05


@pytest.mark.slow
def test_movenet_uint8_pixels_run_partly_on_the_gpu(movenet: dict):
    """uint8 input without quantization; GATHER_ND and the decoding after it left on the CPU."""
    assert (movenet["fully"], movenet["delegated"], movenet["total"]) == (False, 112, 157)
    printed = "112 operations will run on the GPU, and the remaining 45 operations will run on the CPU."
    assert printed in movenet["coverage"]["reason"]
    assert movenet["coverage"]["log"] == (
        "Replacing 112 out of 157 node(s) with delegate (LITERT_WEBGPU) node, yielding 2 partitions "
        "for subgraph 0 (main)."
    )
    assert movenet["coverage"]["nodes_delegated"] == 112
    assert "GATHER_ND" in movenet["cpu_ops"]
    (run,) = movenet["runs"]
    assert run["shapes"] == [[1, 1, 17, 3]] and run["primary_same"]
    points, cpu_points = np.asarray(run["gpu"][0])[0, 0], np.asarray(run["cpu"][0])[0, 0]
    # The GPU runs the quantized model's ops in float, the CPU in int8: low-confidence keypoints may jump
    # to another heatmap peak (measured up to 0.67 apart, at scores < 0.3), the confident ones stay put:
    # within 0.05 of the image (measured 0.012); the mean score within 0.05 (measured 0.277 vs 0.296).
    confident = cpu_points[:, 2] > 0.3
    assert confident.sum() >= 3 and confident[5]  # the left shoulder (README: score 0.70)
    distance = np.hypot(*(points[:, :2] - cpu_points[:, :2]).T)
    assert distance[confident].max() < 0.05
    assert abs(points[:, 2].mean() - cpu_points[:, 2].mean()) < 0.05


def test_a_model_the_compiled_model_api_cannot_read_is_refused_with_the_runtimes_reason(
    swiftshader: dict, vision_models: Path
):
    """The Keras LSTM keeps its state in variable tensors, which LiteRT's compiled-model API (the GPU
    accelerator's only way in) does not read: the GPU is unavailable for it, said so, and the caller
    falls back to the CPU's Interpreter, which runs it."""
    result = _open(swiftshader, vision_models / "keras_lstm_mnist_ptq.tflite")
    assert not result["opened"]
    assert result["reason"] == (
        "LiteRT's compiled-model API, which its GPU accelerator runs in, cannot read this model "
        "(Variable tensors not yet supported.)"
    )


def test_a_model_that_ends_litert_s_gpu_compile_costs_the_gpu_not_the_process(swiftshader: dict, vision_models: Path):
    """LiteRT's GPU delegate aborts the process building YAMNet's graph (an ABSL_CHECK on its int8 SPLIT,
    any device): a model not bundled is compiled in a child first, so the command says why and lives."""
    model = vision_models / "yamnet_audio_classifier_with_metadata.tflite"
    args = ["--allow-software-gpu", "--no-fallback", "--model", model, "--threads", "1", "--runs", "1"]
    run = run_cli("profile", "--delegate", "gpu", *args, env=swiftshader, timeout=300)
    assert_one_line_error(
        run, 5, "the gpu delegate is not available: LiteRT's GPU accelerator ended the process compiling this model "
        "(SIGABRT: Check failed: CanReadValue(node_input_index))"
    )  # fmt: skip


def _two_in_two_out() -> bytes:
    """x, y (batch dynamic: shape signature [-1, 8, 8, 3]) -> x + y, and y * 0.5 reshaped to [-1, 192]."""
    g = GraphBuilder()
    x, y = g.input((1, 8, 8, 3)), g.input((1, 8, 8, 3))
    total, half, flat = g.tensor((1, 8, 8, 3)), g.tensor((1, 8, 8, 3)), g.tensor((1, 192))
    for t in (x, y, total, half):
        g.tensors[t].shapeSignature = [-1, 8, 8, 3]
    g.tensors[flat].shapeSignature = [-1, 192]
    g.op("ADD", [x, y], [total], options("AddOptions"))
    g.op("MUL", [y, g.const(np.full((1, 1, 1, 3), 0.5))], [half], options("MulOptions"))
    g.op("RESHAPE", [half, g.const([-1, 192], "int32")], [flat])
    return g.build([total, flat])


_TWO = """
import json, sys
import numpy as np
from app.backends.cpu import CpuSession
from app.backends.gpu.backend import GpuSession
from app.model.spec import ModelOptions, load_model_spec

options = ModelOptions(input_shapes=(("t0", (2, 8, 8, 3)), ("t1", (2, 8, 8, 3))))  # --input-shape, each input
spec = load_model_spec(sys.argv[1], options=options)
gpu, cpu = GpuSession(spec, "fp16", 1, allow_software=True), CpuSession(spec, 1)
x = (np.arange(384) % 16).astype(np.float32).reshape(2, 8, 8, 3)  # small integers: exact in fp16 too
runs = []
for y in (2, 6):  # a second run with other values: nothing left over from the first
    inputs = [x, np.full((2, 8, 8, 3), y, np.float32)]
    ours, theirs = gpu.run_all(inputs), cpu.run_all(inputs)
    runs.append({"shapes": [list(o.shape) for o in ours], "cpu_shapes": [list(o.shape) for o in theirs],
                 "same": all(np.array_equal(a, b) for a, b in zip(ours, theirs)),
                 "expected": bool(np.array_equal(ours[0], x + y) and (ours[1] == y / 2).all())})
gpu.close()
print(json.dumps(runs))
"""


def test_every_input_is_written_and_resized_and_every_output_read(swiftshader: dict, tmp_path: Path):
    """Two inputs, both with a dynamic batch set to 2 (--input-shape), two outputs of other shapes: each
    input lands in its own buffer, each output comes back in model order with the shape the runtime
    gives it after the resize ([2, 8, 8, 3], [2, 192]); exact values (small integers, exact in fp16)."""
    model = tmp_path / "two.tflite"
    model.write_bytes(_two_in_two_out())
    proc = subprocess.run([sys.executable, "-c", _TWO, str(model)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **swiftshader}, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    for run in json.loads(proc.stdout.strip().splitlines()[-1]):
        assert run["shapes"] == run["cpu_shapes"] == [[2, 8, 8, 3], [2, 192]]
        assert run["expected"] and run["same"]
