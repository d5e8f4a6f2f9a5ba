"""The Core ML backend and the bundled .mlpackage files.

Everywhere: availability, model lookup, and the packages' inputs, outputs, metadata and
weights, read from the files and compared with the .tflite models (no Core ML runtime
needed). On macOS only: real Core ML predictions on the test photos.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

from app.backends.coreml.backend import CoreMLBackend, find_mlpackage
from app.backends.coreml.plan import compute_plan
from app.backends.cpu import CpuBackend
from app.backends.options import BackendOptions, ComputeUnits
from app.errors import BackendUnavailable
from app.model.image_files import read_image
from app.model.postprocess import Postprocessor
from app.model.preprocess import Preprocessor
from app.model.spec import load_model_spec
from tests.helpers.extras import need_convert_extra
from tests.helpers.paths import PHOTOS, ROOT

MODELS = ROOT / "models"
FLOAT_TFLITE = MODELS / "efficientnet_lite0.tflite"
VARIANTS = {"efficientnet_lite0": False, "efficientnet_lite0_int8": True}  # name -> int8 weights
EXPECTED_TOP1 = {"coffee": 967, "grace_hopper": 652}  # espresso, military uniform
LAYER_OPS = (fb.BuiltinOperator.CONV_2D, fb.BuiltinOperator.DEPTHWISE_CONV_2D, fb.BuiltinOperator.FULLY_CONNECTED)
on_macos = pytest.mark.skipif(sys.platform != "darwin", reason="Core ML predictions need macOS")


def _read(name: str) -> dict:
    need_convert_extra("coremltools")
    from models.coreml_export import read_mlpackage

    return read_mlpackage(MODELS / f"{name}.mlpackage")


def tflite_layer_weights(path: Path) -> list[np.ndarray]:
    """Conv, depthwise conv and fully-connected weights of a float .tflite, in op order, in Core ML layout."""
    model = fb.Model.GetRootAs(path.read_bytes(), 0)
    graph = model.Subgraphs(0)
    weights = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin not in LAYER_OPS:
            continue
        tensor = graph.Tensors(op.Inputs(1))
        assert tensor.Type() == fb.TensorType.FLOAT32
        data = model.Buffers(tensor.Buffer()).DataAsNumpy()
        assert isinstance(data, np.ndarray) and data.size, "weights are expected inside the flatbuffer"
        w = np.frombuffer(data.tobytes(), "<f4").reshape(tuple(tensor.ShapeAsNumpy()))
        if builtin == fb.BuiltinOperator.CONV_2D:
            w = w.transpose(0, 3, 1, 2)  # OHWI -> OIHW
        elif builtin == fb.BuiltinOperator.DEPTHWISE_CONV_2D:
            w = w.transpose(3, 0, 1, 2)  # (1, kh, kw, C) -> (C, 1, kh, kw)
        weights.append(w)  # FULLY_CONNECTED is (out, in) in both
    return weights


def int8_step_tolerance(reference: np.ndarray) -> np.ndarray:
    """One int8 step per output channel (max|w| / 127), plus what the fp16 scale cannot hold.

    Rounding to the int8 grid costs half a step; the fp16 copy the weights were quantized
    from and the fp16 scale add about 0.06 step each; where max|w| / 127 is below fp16's
    normal range the scale is stored with an absolute error up to 2**-25 (or underflows to 0,
    zeroing channels whose weights are all below 127 * 2**-25), which |q| <= 127 multiplies.
    """
    step = np.abs(reference).reshape(reference.shape[0], -1).max(axis=1) / 127.0
    return (step + 127.0 * 2.0**-25).reshape((-1,) + (1,) * (reference.ndim - 1))


# ---------------------------------------------------------------- everywhere


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the message off macOS")
def test_off_macos_the_backend_says_why_and_refuses_to_open():
    backend = CoreMLBackend()
    assert (backend.name, backend.label) == ("coreml", "Core ML")
    assert backend.availability() == "Core ML needs macOS"
    with pytest.raises(BackendUnavailable, match=r"^Core ML needs macOS$"):
        backend.open(load_model_spec(FLOAT_TFLITE), BackendOptions())


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "darwin", reason="checks the failure off macOS")
def test_a_package_core_ml_cannot_load_is_backend_unavailable_in_one_line():
    """Off macOS coremltools reads the package but has no Core ML to load it into.

    In a fresh process: the backend's coremltools import hides TensorFlow for the whole process.
    """
    need_convert_extra("coremltools")
    code = (
        "from app.backends.coreml.backend import CoreMLSession\n"
        "from app.errors import BackendUnavailable\n"
        "from app.model.spec import load_model_spec\n"
        "from pathlib import Path\n"
        "try:\n"
        "    CoreMLSession(load_model_spec('efficientnet_lite0'), Path('models/efficientnet_lite0.mlpackage'), 'all')\n"
        "except BackendUnavailable as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Core ML cannot load efficientnet_lite0.mlpackage") and out.stdout.count("\n") == 1


@pytest.mark.slow
def test_the_backend_imports_coremltools_without_tensorflow():
    """coremltools imports TensorFlow when it is installed; the app's runtime path must not."""
    need_convert_extra("coremltools")
    code = (
        "import sys\n"
        "from app.coreml_mil.coremltools_import import import_coremltools\n"
        "ct = import_coremltools()\n"
        "assert ct.ComputeUnit.CPU_AND_NE and 'tensorflow' not in sys.modules and 'torch' not in sys.modules\n"
        "import json; print(json.dumps('tensorflow' in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "false"


def test_unknown_compute_units_are_a_value_error():
    with pytest.raises(ValueError, match="cpu_and_ne"):
        CoreMLBackend().open(load_model_spec(FLOAT_TFLITE), BackendOptions(compute_units="neural_engine"))


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the message off macOS")
def test_without_macos_14_4_there_is_no_compute_plan_and_the_reason_says_so():
    assert compute_plan(None, None) == (
        None,
        "no per-op device plan: MLComputePlan needs macOS 14.4 or later (this is macOS unknown)",
    )


def test_each_bundled_tflite_finds_its_mlpackage():
    for name in VARIANTS:
        assert find_mlpackage(load_model_spec(name)) == MODELS / f"{name}.mlpackage"


def test_mlpackage_lookup_uses_the_sidecar_then_the_stem(tmp_path: Path):
    model = tmp_path / "classifier.tflite"
    shutil.copyfile(FLOAT_TFLITE, model)
    assert find_mlpackage(load_model_spec(model)) is None
    shutil.copytree(MODELS / "efficientnet_lite0_int8.mlpackage", tmp_path / "classifier.mlpackage")
    assert find_mlpackage(load_model_spec(model)) == tmp_path / "classifier.mlpackage"
    shutil.copytree(MODELS / "efficientnet_lite0_int8.mlpackage", tmp_path / "other.mlpackage")
    # A name beside the model, never a path elsewhere.
    (tmp_path / "classifier.json").write_text(json.dumps({"format": 1, "coreml": "../elsewhere/other.mlpackage"}))
    assert find_mlpackage(load_model_spec(model)) == tmp_path / "other.mlpackage"


@pytest.mark.slow
@pytest.mark.parametrize("name", VARIANTS)
def test_bundled_mlpackage_io_and_metadata(name: str):
    facts = _read(name)
    assert facts["input"]["name"] == "input"
    assert (facts["input"]["shape"], facts["input"]["dtype"]) == ([1, 224, 224, 3], "float32")
    assert facts["output"]["name"] == "probabilities"
    assert (facts["output"]["shape"], facts["output"]["dtype"]) == ([1, 1000], "float32")
    assert facts["license"] == "Apache-2.0" and facts["version"] == "1" and facts["author"]
    assert "com.github.apple.coremltools.conversion_date" not in facts["user_defined"]  # reproducible builds
    assert facts["op_counts"]["conv"] == 49 and facts["op_counts"]["linear"] == 1
    storage = {layer["storage"] for layer in facts["layers"]}
    if VARIANTS[name]:
        assert "activations and compute stay fp16" in facts["short_description"]
        assert storage == {"int8 (per-axis 0 scale)"}
        assert facts["op_counts"]["constexpr_affine_dequantize"] == 50
    else:
        assert storage == {"float16"}


@pytest.mark.slow
@pytest.mark.parametrize("name", VARIANTS)
def test_weights_match_the_float_tflite_model(name: str):
    """All 50 conv/depthwise/fc weights (batch norm folded in both), in op order.

    fp16: rounding to nearest costs at most half an fp16 ulp, 2**-11 relative (2**-25 absolute
    below the normal range). int8: see int8_step_tolerance. The int8 Core ML model is compared
    with the *float* TFLite model: the TFLite int8 model also quantizes activations.
    """
    reference = tflite_layer_weights(FLOAT_TFLITE)
    facts = _read(name)
    weights = list(facts["weights"].values())
    assert len(weights) == len(reference) == 50
    assert facts["layers"][0]["weight_shape"] == [32, 3, 3, 3]  # stem conv
    assert (facts["layers"][-1]["op"], facts["layers"][-1]["weight_shape"]) == ("linear", [1000, 1280])  # fc
    for i, (ours, ref) in enumerate(zip(weights, reference, strict=True)):
        assert ours.dtype == np.float32 and ours.shape == ref.shape, (i, ours.shape, ref.shape)
        if VARIANTS[name]:
            error = np.abs(ours - ref)
            assert np.all(error <= int8_step_tolerance(ref)), (i, float(error.max()))
        else:
            np.testing.assert_allclose(ours, ref, rtol=2.0**-11, atol=2.0**-25, err_msg=f"layer {i}")


# ---------------------------------------------------------------- macOS: real Core ML


def _scores(name: str, backend: CpuBackend | CoreMLBackend, options: BackendOptions) -> dict[str, np.ndarray]:
    """Class scores per test photo through the app's own pre- and postprocessing."""
    spec = load_model_spec(name)
    session = backend.open(spec, options)
    try:
        preprocess, postprocess = Preprocessor(spec), Postprocessor(spec)
        return {
            path.stem: postprocess.scores(session.run(preprocess(read_image(path)))).copy()
            for path in sorted(PHOTOS.glob("*.jpg"))
        }
    finally:
        session.close()


@on_macos
@pytest.mark.parametrize("units", ComputeUnits)
@pytest.mark.parametrize("name", VARIANTS)
def test_core_ml_classifies_the_photos(name: str, units: str):
    backend = CoreMLBackend()
    assert backend.availability() is None
    session = backend.open(load_model_spec(name), BackendOptions(compute_units=units))
    try:
        r = session.report
        assert (r.requested, r.used, r.accelerator) == ("coreml", "coreml", f"Core ML (compute units: {units})")
        assert r.options["compute_units"] == units and r.init_ms > 0 and r.first_inference_ms > 0
        # A float model runs the delegate's partitions (test_backend_coreml_partitioned.py); the int8 one its package.
        assert r.coreml_mode == ("exported package" if VARIANTS[name] else "partitioned")
        assert r.to_dict()["options"]["mode"] == r.coreml_mode
        if "compute_plan" in r.options:
            if r.coreml_mode == "exported package":
                assert r.nodes_total == sum(r.options["compute_plan"].values()) > 0
                if units == "cpu_only":
                    assert r.nodes_delegated == 0 and r.cpu_ops
            elif units == "cpu_only":
                assert set(r.options["compute_plan"]) == {"cpu"}
        else:
            assert any("no per-op device plan" in w for w in r.warnings)
    finally:
        session.close()
    scores = _scores(name, backend, BackendOptions(compute_units=units))
    for photo, expected in EXPECTED_TOP1.items():
        assert int(np.argmax(scores[photo])) == expected, (photo, units)


@on_macos
@pytest.mark.parametrize("name", VARIANTS)
def test_core_ml_agrees_with_the_cpu_backend(name: str):
    """fp16 Core ML vs float32 XNNPACK: same top-1 where the CPU's answer is clear, close scores.

    The int8 pair differs more: Core ML keeps fp16 activations, TFLite int8 quantizes them.
    """
    ours = _scores(name, CoreMLBackend(), BackendOptions(compute_units="all"))
    cpu = _scores(name, CpuBackend(), BackendOptions(threads=1))
    assert ours.keys() == cpu.keys() and len(cpu) == 5
    for photo, scores in cpu.items():
        second, first = np.sort(scores)[-2:]
        if first - second > 0.1:
            assert int(np.argmax(ours[photo])) == int(np.argmax(scores)), photo
        assert float(np.max(np.abs(ours[photo] - scores))) < (0.1 if VARIANTS[name] else 0.03), photo
