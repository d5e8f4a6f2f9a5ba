"""A feature vector is not class scores: a classifier cut at its pooling (the project's own cutter,
app/numerics/cuts.py over app/tflite/cut.py) reads as raw with its evidence, `classify` refuses it
(exit 3), and forced with --task classification its values are shown as values, never as percentages;
the classifiers themselves (bundled, Coral's, quantized with labels) stay classifiers with
probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.model.postprocess import Postprocessor
from app.model.spec import ModelOptions, load_model_spec
from app.model.task import ClassificationLayout, Task
from app.numerics.cuts import CutModel
from app.tflite.file import read_tflite
from tests.helpers.cli import run_cli
from tests.helpers.paths import ROOT

MODELS = ROOT / "models"
PHOTO = ROOT / "tests" / "data" / "photos" / "grace_hopper.jpg"


def _cut_at(source: Path, op: str, folder: Path) -> Path:
    """`source` cut after its first `op` node: what a backbone gives as an embedding."""
    model = CutModel(source.read_bytes())
    cut = next(c for c in model.cuts if c.op == op)
    path = folder / f"{source.stem}_features.tflite"
    path.write_bytes(model.prefix(cut))
    return path


@pytest.fixture(scope="module")
def embedders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """EfficientNet-Lite0 (float and int8) cut at the global average pool (MEAN): [1, 1280] features."""
    folder = tmp_path_factory.mktemp("embedders")  # no labels file beside them
    return {name: _cut_at(MODELS / f"{name}.tflite", "MEAN", folder)
            for name in ("efficientnet_lite0", "efficientnet_lite0_int8")}  # fmt: skip


@pytest.mark.parametrize("name", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_a_classifier_cut_at_its_pooling_reads_as_raw_with_its_evidence(embedders, name):
    spec = load_model_spec(embedders[name])
    assert spec.kind == Task.RAW
    evidence = spec.task.evidence if spec.task else ""
    assert "comes from MEAN" in evidence and "feature vector" in evidence and "no labels" in evidence
    assert list(spec.outputs[0].shape) == [1, 1280]


def test_the_op_that_feeds_each_output_is_read_through_reshapes(embedders):
    # The bundled classifier: FULLY_CONNECTED then SOFTMAX (the output); its cut: the MEAN.
    assert read_tflite((MODELS / "efficientnet_lite0.tflite").read_bytes()).output_ops == ("SOFTMAX",)
    assert read_tflite(embedders["efficientnet_lite0"].read_bytes()).output_ops == ("MEAN",)


def test_labels_make_the_same_vector_class_scores(embedders, tmp_path):
    """A SqueezeNet's logits come out of an average pool too: its labels say they are classes."""
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"thing {i}\n" for i in range(1280)))
    spec = load_model_spec(embedders["efficientnet_lite0"], labels_file=labels)
    assert spec.kind == Task.CLASSIFICATION and spec.classes == 1280


def test_classify_refuses_an_embedding_and_predict_summarises_it(embedders):
    model = embedders["efficientnet_lite0"]
    refused = run_cli("classify", "--model", model, PHOTO)
    assert refused.returncode == 3 and "reads as raw" in refused.stderr and "feature vector" in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    run = run_cli("predict", "--model", model, "--json", PHOTO)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["task"]["name"] == "raw" and "feature vector" in out["model"]["task"]["evidence"]
    (result,) = out["results"]
    assert result["task"] == "raw" and "top" not in result
    assert result["outputs"][0]["shape"] == [1, 1280] and result["outputs"][0]["max"] > 1  # no distribution


@pytest.mark.parametrize("name", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_forced_classification_shows_the_values_never_percentages(embedders, name):
    model = embedders[name]
    spec = load_model_spec(model, options=ModelOptions(task=Task.CLASSIFICATION))
    layout = spec.task.layout if spec.task else None
    assert spec.kind == Task.CLASSIFICATION and isinstance(layout, ClassificationLayout) and layout.features
    post = Postprocessor(spec)
    raw = np.linspace(-1.0, 4.0, 1280, dtype=np.float32)
    if spec.output.dtype == "int8":
        raw = np.arange(1280).astype(np.int8)
    scores = post.scores(raw)
    top = post.top_k(scores, 3)
    assert not post.are_probabilities(scores) and all(not p.probability for p in top)
    if spec.output.dtype == "float32":
        assert np.array_equal(scores, raw)  # never softmaxed into a distribution the values are not
    assert top[0].shown() == f"{top[0].score:.4g}" and "%" not in top[0].shown()

    json_run = run_cli("classify", "--task", "classification", "--model", model, "--top-k", "3", "--json", PHOTO)
    assert json_run.returncode == 0, json_run.stderr
    (result,) = json_run.json()["results"]
    assert [p["probability"] for p in result["top"]] == [False] * 3
    text = run_cli("classify", "--task", "classification", "--model", model, "--top-k", "3", PHOTO)
    assert text.returncode == 0 and "note: the scores are the model's values, not probabilities" in text.stdout
    assert "%" not in "".join(line for line in text.stdout.splitlines() if line.strip().startswith("1."))


def test_the_bundled_classifiers_stay_classifiers_with_probabilities():
    for name in ("efficientnet_lite0", "efficientnet_lite0_int8"):
        spec = load_model_spec(name)
        layout = spec.task.layout if spec.task else None
        assert spec.kind == Task.CLASSIFICATION and isinstance(layout, ClassificationLayout)
        assert layout.fed_by == "SOFTMAX" and not layout.features and layout.probabilities, name
    run = run_cli("classify", "--model", "efficientnet_lite0_int8", "--json", PHOTO)
    assert run.returncode == 0, run.stderr
    top = run.json()["results"][0]["top"]
    assert all("probability" not in p for p in top) and 0 < top[0]["score"] <= 1  # the JSON as it was


def test_coral_classifiers_stay_and_their_cut_is_a_feature_vector(coral, tmp_path):
    for name in ("mobilenet_v1_0.25_128_quant", "mobilenet_v2_1.0_224_quant"):
        spec = load_model_spec(coral / f"{name}.tflite", labels_file=coral / "imagenet_labels.txt")
        assert spec.kind == Task.CLASSIFICATION and spec.classes == 1001, name
        without_labels = load_model_spec(coral / f"{name}.tflite")  # its SOFTMAX says so, labels or not
        assert without_labels.kind == Task.CLASSIFICATION, name
    # MobileNet v1 cut at its AvgPool: [1, 1, 1, 256] uint8, an embedding.
    cut = _cut_at(coral / "mobilenet_v1_0.25_128_quant.tflite", "AVERAGE_POOL_2D", tmp_path)
    spec = load_model_spec(cut)
    assert spec.kind == Task.RAW and "comes from AVERAGE_POOL_2D" in (spec.task.evidence if spec.task else "")
    assert list(spec.outputs[0].shape) == [1, 1, 1, 256]
    run = run_cli("classify", "--task", "classification", "--model", cut, "--json", coral / "cat.bmp")
    assert run.returncode == 0, run.stderr
    top = run.json()["results"][0]["top"]
    # Dequantized ReLU6 features: values past 1, as values.
    assert top[0]["score"] > 1 and all(p["probability"] is False for p in top)
    classified = run_cli("classify", "--model", coral / "mobilenet_v1_0.25_128_quant.tflite",
                         "--labels", coral / "imagenet_labels.txt", "--json", coral / "cat.bmp")  # fmt: skip
    assert classified.returncode == 0 and all("probability" not in p for p in classified.json()["results"][0]["top"])


def test_a_logits_classifier_without_labels_stays_a_classifier_in_percentages(tmp_path):
    """EfficientNet-Lite0 cut after its FULLY_CONNECTED: 1000 logits, no softmax, no labels. A dense layer
    makes class scores, not features: still a classifier, its logits softmaxed into probabilities."""
    cut = _cut_at(MODELS / "efficientnet_lite0.tflite", "FULLY_CONNECTED", tmp_path)
    spec = load_model_spec(cut)
    layout = spec.task.layout if spec.task else None
    assert spec.kind == Task.CLASSIFICATION and isinstance(layout, ClassificationLayout)
    assert layout.fed_by == "FULLY_CONNECTED" and not layout.features and not layout.probabilities
    post = Postprocessor(spec)
    scores = post.scores(np.linspace(-3.0, 6.0, 1000, dtype=np.float32))
    assert post.are_probabilities(scores) and post.top_k(scores, 3)[0].probability
    assert abs(float(scores.sum()) - 1.0) < 1e-4
    run = run_cli("classify", "--model", cut, "--json", PHOTO)
    assert run.returncode == 0, run.stderr
    assert all("probability" not in p for p in run.json()["results"][0]["top"])
