"""Every command for any model: `inspect --json` and `profile` on every fixture model with a verdict
for every node; --task overriding and refusing; --input-shape fixing a dynamic input; --inputs good and bad;
and models of the same kinds that are not in the fixtures (tests/builders/any_models.py), read and predicted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.model.spec import load_model_spec
from app.model.task import Task
from app.tflite.file import read_tflite
from tests.builders import any_models
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.letterbox import on_photo
from tests.helpers.paths import PHOTOS, TEST_MODELS
from tests.helpers.vulkan import NO_VULKAN

VISION_MODELS = (
    "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite",
    "deeplabv3.tflite",
    "movenet_single_pose_lightning_ptq.tflite",
    "face_detection_front.tflite",
    "hand_landmark.tflite",
    "yamnet_audio_classifier_with_metadata.tflite",
    "keras_lstm_mnist_ptq.tflite",
)
TASKS = {
    "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite": "detection",
    "deeplabv3.tflite": "segmentation",
    "movenet_single_pose_lightning_ptq.tflite": "keypoints",
    "face_detection_front.tflite": "detection",
    "hand_landmark.tflite": "keypoints",
    "yamnet_audio_classifier_with_metadata.tflite": "raw",
    "keras_lstm_mnist_ptq.tflite": "raw",
}
COFFEE = PHOTOS / "coffee.jpg"
DYNAMIC = TEST_MODELS / "dynamic_size.tflite"
TEXT = TEST_MODELS / "text_input.tflite"  # one input [1,16] int32


@pytest.mark.slow
@pytest.mark.parametrize("name", VISION_MODELS)
def test_inspect_and_profile_place_every_node(vision: Path, name: str):
    model = vision / name
    nodes = len(read_tflite(model.read_bytes()).op_types)
    inspect = run_cli("inspect", "--model", model, "--json", env=NO_VULKAN)
    assert inspect.returncode == 0, inspect.stderr
    out = inspect.json()
    assert out["model"]["task"]["name"] == TASKS[name] and out["model"]["task"]["evidence"]
    assert out["model"]["inputs"] and out["model"]["outputs"]
    for delegate in ("cpu", "coreml"):
        coverage = out["coverage"][delegate]
        assert coverage["nodes_total"] == len(coverage["nodes"]) == nodes, delegate
        assert all(n["delegated"] is not None for n in coverage["nodes"]), delegate

    profile = run_cli("profile", "--model", model, "--runs", "2", "--json", env=NO_VULKAN)
    assert profile.returncode == 0, profile.stderr
    ops = profile.json()["profile"]
    placed = {f["node"] for f in ops["fused"]}
    for op in ops["ops"]:
        placed.update(op["nodes"] or ([op["node"]] if op["node"] is not None else []))
        assert op["placement"] in ("accelerator", "cpu")
    assert placed == set(range(nodes))  # a verdict for every node: its row, or fused into a neighbour's


def test_profile_text_of_a_model_the_runtime_s_profiler_cannot_take(vision: Path):
    """LiteRT's CompiledModel refuses the LSTM its Interpreter runs: places and the measured run, no per-op
    time made up. The SSD, whose outputs are sized when it runs, gets its per-op times, post-processing
    on the CPU."""
    run = run_cli("profile", "--model", vision / "keras_lstm_mnist_ptq.tflite", "--runs", "2", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    assert "per-op times not reported" in run.stdout
    assert "not reported: per-op time: LiteRT's profiler cannot take this model (LiteRT's CompiledModel" in run.stdout
    ssd = run_cli("profile", "--model", vision / VISION_MODELS[0], "--runs", "2", "--json", env=NO_VULKAN)
    assert ssd.returncode == 0, ssd.stderr
    ops = ssd.json()["profile"]["ops"]
    post = [op for op in ops if op["node"] == 63]
    assert post and post[0]["placement"] == "cpu" and post[0]["ms"] > 0


def test_inspect_text_shows_the_task_and_every_tensor(vision: Path):
    run = run_cli("inspect", "--model", vision / "hand_landmark.tflite", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    assert "task keypoints: structure: output " in run.stdout
    assert run.stdout.count("          output ") == 3 and "input 0 " in run.stdout and "(the image)" in run.stdout


@pytest.mark.slow
def test_task_overrides_and_refusals(vision: Path, coral: Path):
    hand = vision / "hand_landmark.tflite"
    run = run_cli("predict", "--model", hand, "--task", "raw", "--json", coral / "grace_hopper.bmp", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    result = run.json()["results"][0]
    assert result["task"] == "raw" and "keypoints" not in result and len(result["outputs"]) == 3
    assert run.json()["model"]["task"]["evidence"].startswith("--task raw (")
    refused = run_cli("predict", "--model", vision / "deeplabv3.tflite", "--task", "keypoints", COFFEE)
    assert_one_line_error(refused, 3, "--task keypoints does not fit this model", "it reads as segmentation")
    assert run_cli("inspect", "--task", "pose").returncode == 2  # not a task: argparse's usage error


@pytest.mark.slow
def test_input_shape_fixes_a_dynamic_input_and_refuses_a_wrong_one():
    refused = run_cli("inspect", "--model", DYNAMIC, env=NO_VULKAN)
    assert_one_line_error(refused, 3, "dynamic dimensions", "--input-shape")
    name = read_tflite(DYNAMIC.read_bytes()).inputs[0].name
    fixed = run_cli("predict", "--model", DYNAMIC, "--input-shape", f"{name}=1x64x48x3", "--json", COFFEE)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.json()["model"]["input"]["shape"] == [1, 64, 48, 3]
    assert fixed.json()["results"][0]["top"]
    by_index = run_cli("inspect", "--model", DYNAMIC, "--input-shape", "0=1x32x32x3", "--json", env=NO_VULKAN)
    assert by_index.returncode == 0 and by_index.json()["model"]["input"]["shape"] == [1, 32, 32, 3]
    wrong = run_cli("inspect", "--model", DYNAMIC, "--input-shape", f"{name}=1x64x64x4", env=NO_VULKAN)
    assert_one_line_error(wrong, 3, "does not fit input", "only its dynamic (-1) dimensions can be set")
    for text in ("1x64x64x3", f"{name}=1x0x64x3", f"{name}=1xbigx3"):
        bad = run_cli("inspect", "--model", DYNAMIC, "--input-shape", text)
        assert bad.returncode == 2 and "--input-shape" in bad.stderr and "Traceback" not in bad.stderr


@pytest.fixture(scope="module")
def npz_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("npz")
    tokens = np.arange(16, dtype=np.int32).reshape(1, 16)
    files = {"good": folder / "good.npz", "not npz": folder / "notes.npz", "wrong shape": folder / "shape.npz",
             "wrong dtype": folder / "dtype.npz", "pickle": folder / "pickle.npz"}  # fmt: skip
    np.savez(files["good"], tokens)
    files["not npz"].write_text("not an archive\n")
    np.savez(files["wrong shape"], tokens.reshape(2, 8))
    np.savez(files["wrong dtype"], tokens.astype(np.float64))
    np.savez(files["pickle"], np.array([{"a": 1}], dtype=object))
    with np.load(files["pickle"], allow_pickle=True) as npz:  # what the app refuses to unpickle
        assert npz["arr_0"].dtype == object
    return files


def test_inputs_file_feeds_a_model_that_takes_no_image(npz_files: dict[str, Path]):
    run = run_cli("profile", "--model", TEXT, "--inputs", npz_files["good"], "--runs", "2", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "inputs: good.npz"  # which feeder ran it
    generated = run_cli("profile", "--model", TEXT, "--runs", "2", "--json", env=NO_VULKAN)
    assert generated.returncode == 0, generated.stderr
    assert generated.json()["inputs"]["source"] == "generated (seed 0)"
    assert generated.json()["inputs"]["inputs"][0].endswith("[0, 100) int32 (integer)")


@pytest.mark.parametrize(
    "case,fragment",
    [
        ("missing", "inputs file not found"),
        ("not npz", "cannot read inputs file"),
        ("wrong shape", "is [2, 8], the input takes [1, 16]"),
        ("wrong dtype", "is float64, the input takes int32"),
        ("pickle", "cannot read inputs file"),
    ],
)
def test_a_bad_inputs_file_is_exit_4_with_one_line(npz_files: dict[str, Path], case: str, fragment: str):
    path = npz_files.get(case, npz_files["good"].parent / "nope.npz")
    assert_one_line_error(run_cli("profile", "--model", TEXT, "--inputs", path, env=NO_VULKAN), 4, fragment)


# Models beyond the fixtures: each built once, in one folder.
POINTS = np.stack([np.linspace(1, 15, 21), np.linspace(15, 1, 21)], axis=1)  # (x, y) in input pixels


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("any_models")
    models = {
        "class map int64": any_models.class_map("int64"),
        "class map int32": any_models.class_map("int32"),
        "landmarks": any_models.landmarks(POINTS),
        "two inputs": any_models.two_inputs(),
        "grey": any_models.channels(1),
        "rgba": any_models.channels(4),
    }
    paths = {}
    for name, data in models.items():
        paths[name] = folder / (name.replace(" ", "_") + ".tflite")
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize("name", ["class map int64", "class map int32"])
def test_a_class_map_segmenter(built: dict[str, Path], name: str):
    run = run_cli("predict", "--model", built[name], "--json", COFFEE)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["task"]["name"] == "segmentation" and "a class map" in out["model"]["task"]["evidence"]
    seg = out["results"][0]["segmentation"]
    assert seg == {"classes": {"class 2": 1.0}, "mask_shape": [16, 16]}
    assert out["results"][0]["outputs"][0]["dtype"] == name.split()[-1]


@pytest.mark.slow
def test_a_landmark_regressor_beside_a_score(built: dict[str, Path]):
    run = run_cli("predict", "--model", built["landmarks"], "--json", COFFEE)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["task"]["name"] == "keypoints"
    points = out["results"][0]["keypoints"]
    assert [p["name"] for p in points][:2] == ["wrist", "thumb cmc"] and len(points) == 21
    # 21 hand points: the whole frame letterboxed into 16x16 (MediaPipe's hand graph), mapped back through its bars.
    assert np.allclose([[p["x"], p["y"]] for p in points], on_photo(POINTS / any_models.SIZE, COFFEE), atol=1e-5)
    assert all(p["score"] is None for p in points)


@pytest.mark.slow
def test_an_image_model_with_a_second_input(built: dict[str, Path], tmp_path: Path):
    model = built["two inputs"]
    generated = run_cli("predict", "--model", model, "--json", COFFEE)
    assert generated.returncode == 0, generated.stderr
    assert generated.json()["inputs"]["source"] == "generated (seed 0)"
    values = np.array([[0.0, 0.0, 0.0, 5.0]], np.float32)
    np.savez(tmp_path / "second.npz", values)
    given = run_cli("predict", "--model", model, "--inputs", tmp_path / "second.npz", "--json", COFFEE)
    assert given.returncode == 0, given.stderr
    assert given.json()["inputs"]["source"] == "second.npz"
    assert given.json()["results"][0]["top"][0]["index"] == 3  # the scores are the second input
    refused = run_cli("classify", "--model", model, COFFEE)
    assert_one_line_error(refused, 3, "classify reads image classifiers", "use `predict`")


@pytest.mark.parametrize("name,channels", [("grey", 1), ("rgba", 4)])
def test_grey_and_rgba_inputs(built: dict[str, Path], name: str, channels: int):
    run = run_cli("predict", "--model", built[name], "--json", COFFEE)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["input"]["shape"] == [1, 16, 16, channels]
    assert out["results"][0]["task"] == "classification" and out["results"][0]["top"][0]["index"] == 2


def test_predict_refuses_a_model_that_takes_no_image(vision: Path):
    run = run_cli("predict", "--model", vision / "yamnet_audio_classifier_with_metadata.tflite", COFFEE)
    assert_one_line_error(run, 3, "predict takes image models", "--inputs FILE.npz")


def test_a_detector_without_metadata_is_read_from_its_post_processing_node(vision: Path, tmp_path: Path):
    """The structure rule alone (tensorflow/lite/kernels/detection_postprocess.cc's output order)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb

    model = fb.ModelT.InitFromObj(fb.Model.GetRootAs((vision / VISION_MODELS[0]).read_bytes(), 0))
    model.metadata = []  # no TFLite Support metadata: no tensor names, no labels
    builder = flatbuffers.Builder(1 << 22)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    bare = tmp_path / "ssd_bare.tflite"
    bare.write_bytes(bytes(builder.Output()))
    spec = load_model_spec(bare)
    assert spec.kind == Task.DETECTION
    assert spec.task is not None and spec.task.evidence.startswith("structure: node 63 is TFLite_Detection_PostProcess")
    assert spec.labels.source.startswith("none")
