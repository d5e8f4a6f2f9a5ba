"""ModelSpec: what the loader decides for real models, and where each decision came from."""

import json
import shutil
from pathlib import Path

import pytest

from app.errors import ModelError
from app.model.spec import DEFAULT_MODEL, bundled_models, load_model_spec
from tests.helpers.paths import ROOT, TEST_MODELS

MODELS = ROOT / "models"


def test_bundled_models_are_found_by_name():
    found = bundled_models()
    assert set(found) >= {"efficientnet_lite0", "efficientnet_lite0_int8"}
    assert DEFAULT_MODEL == "efficientnet_lite0"


def test_bundled_float_model_spec():
    spec = load_model_spec("efficientnet_lite0")
    assert spec.bundled and spec.path == MODELS / "efficientnet_lite0.tflite"
    assert spec.input.shape == (1, 224, 224, 3) and spec.input.dtype == "float32"
    assert spec.input.shape_signature == (1, 224, 224, 3)  # batch fixed: GPU delegates need static shapes
    assert spec.classes == 1000 and not spec.labels.background_class
    assert spec.labels.source.startswith("sidecar")
    assert (spec.normalization.mean, spec.normalization.std) == ((127.0,) * 3, (128.0,) * 3)
    assert spec.normalization.source == "sidecar"
    assert spec.output_kind == "probabilities"
    assert spec.info["licence"] == "Apache-2.0"
    assert spec.sha256 == json.loads((MODELS / "efficientnet_lite0.json").read_text())["sha256"]
    assert spec.warnings == ()


def test_bundled_int8_model_is_fully_quantized():
    spec = load_model_spec("efficientnet_lite0_int8")
    assert spec.input.dtype == "int8" and spec.output.dtype == "int8"
    assert spec.input.scale and spec.output.scale
    assert "FULLY_CONNECTED" in spec.op_types or "CONV_2D" in spec.op_types
    assert "DEQUANTIZE" not in spec.op_types  # integer kernels end to end


def test_labels_file_lists_1000_unique_names():
    labels = (MODELS / "imagenet_labels.txt").read_text(encoding="utf-8").splitlines()
    assert len(labels) == 1000
    assert len(set(labels)) == 1000
    assert labels[88] == "macaw"


def test_a_bundled_model_copied_alone_uses_its_embedded_metadata(tmp_path: Path):
    """Without the sidecar or a labels file, labels and normalisation come from the TFLite metadata."""
    lone = tmp_path / "copied.tflite"
    shutil.copy(MODELS / "efficientnet_lite0.tflite", lone)
    spec = load_model_spec(lone)
    assert spec.labels.source == "labels embedded in the model (labels.txt)"
    assert spec.label(967) == "espresso"
    assert spec.normalization.source == "TFLite metadata"
    assert spec.normalization.mean == (127.0,) * 3
    assert not spec.bundled


def test_label_sources_in_order_of_precedence(coral: Path, tmp_path: Path):
    model = tmp_path / "m.tflite"
    shutil.copy(coral / "mobilenet_v1_0.25_128_quant.tflite", model)
    assert load_model_spec(model).labels.source.startswith("labels embedded")
    (tmp_path / "labels.txt").write_text("\n".join(f"generic {i}" for i in range(1001)))
    assert load_model_spec(model).label(5) == "generic 5"
    (tmp_path / "m.txt").write_text("\n".join(f"stem {i}" for i in range(1001)))
    assert load_model_spec(model).label(5) == "stem 5"
    explicit = tmp_path / "explicit.txt"
    explicit.write_text("\n".join(f"explicit {i}" for i in range(1001)))
    assert load_model_spec(model, labels_file=explicit).label(5) == "explicit 5"


def test_1001_class_model_with_1000_imagenet_labels_puts_macaw_at_89(coral: Path):
    spec = load_model_spec(coral / "mobilenet_v2_1.0_224_quant.tflite", labels_file=MODELS / "imagenet_labels.txt")
    assert spec.classes == 1001 and spec.labels.background_class
    assert (spec.label(0), spec.label(89)) == ("background", "macaw")


def test_normalisation_sources(coral: Path):
    quant = load_model_spec(coral / "mobilenet_v1_0.25_128_quant.tflite")
    assert quant.normalization.source == "TFLite metadata" and quant.normalization.mean == (127.5,) * 3
    override = load_model_spec(coral / "mobilenet_v1_0.25_128_quant.tflite", mean=(0.0,), std=(1.0,))
    assert override.normalization.source == "--mean/--std"
    plain_float = load_model_spec(TEST_MODELS / "dynamic_batch_logits.tflite")
    assert plain_float.normalization.source == "default for float input"
    assert plain_float.normalization.mean == (127.5,) * 3
    with pytest.raises(ModelError, match="std"):
        load_model_spec(TEST_MODELS / "dynamic_batch_logits.tflite", std=(0.0,))


def test_a_sidecar_that_does_not_match_the_model_is_ignored_with_a_warning(tmp_path: Path):
    model = tmp_path / "efficientnet_lite0.tflite"
    shutil.copy(MODELS / "efficientnet_lite0.tflite", model)
    sidecar = json.loads((MODELS / "efficientnet_lite0.json").read_text())
    sidecar["sha256"] = "0" * 64
    (tmp_path / "efficientnet_lite0.json").write_text(json.dumps(sidecar))
    spec = load_model_spec(model)
    assert any("sha256 does not match" in w for w in spec.warnings)
    assert spec.normalization.source == "TFLite metadata"


def test_a_corrupt_sidecar_is_ignored(tmp_path: Path):
    model = tmp_path / "x.tflite"
    shutil.copy(TEST_MODELS / "dynamic_batch_logits.tflite", model)
    (tmp_path / "x.json").write_bytes(b"{not json \xff")
    assert load_model_spec(model).name == "x"


def test_labels_mismatch_is_a_warning_not_a_failure(tmp_path: Path):
    labels = tmp_path / "few.txt"
    labels.write_text("a\nb\n")
    spec = load_model_spec(TEST_MODELS / "dynamic_batch_logits.tflite", labels_file=labels)
    assert spec.label(2) == "class 2"
    assert "has 2 labels but the model has 3 outputs" in spec.warnings[0]
