"""What classify says beside its numbers: no zero-score padding, and a hint when scores are flat."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.builders.tflite_builder import GraphBuilder, options
from tests.helpers.cli import run_cli
from tests.helpers.paths import PHOTOS


def _flat_classifier(path: Path) -> Path:
    """A 10-class "classifier" whose weights are all zero: softmax of equal logits, 0.1 for every class."""
    g = GraphBuilder()
    image = g.input((1, 8, 8, 3))
    pooled = g.tensor((1, 3))
    g.op("MEAN", [image, g.const([1, 2], "int32")], [pooled], options("ReducerOptions", keepDims=False))
    logits = g.tensor((1, 10))
    g.op("FULLY_CONNECTED", [pooled, g.const(np.zeros((10, 3))), g.const(np.zeros(10))], [logits],
         options("FullyConnectedOptions"))  # fmt: skip
    scores = g.tensor((1, 10))
    g.op("SOFTMAX", [logits], [scores], options("SoftmaxOptions", beta=1.0))
    path.write_bytes(g.build([scores]))
    return path


@pytest.mark.slow
def test_flat_scores_get_a_hint(tmp_path: Path):
    model = _flat_classifier(tmp_path / "flat.tflite")
    text = run_cli("classify", "--model", model, PHOTOS / "coffee.jpg")
    assert text.returncode == 0, text.stderr
    assert "note: the scores are flat (top-1 0.1000, about 1/10 classes)" in text.stdout
    out = run_cli("classify", "--model", model, "--json", PHOTOS / "coffee.jpg").json()
    assert "scores are flat" in out["results"][0]["hint"]
    trained = run_cli("classify", "--json", PHOTOS / "coffee.jpg").json()  # the bundled model: no hint
    assert "hint" not in trained["results"][0]


def test_a_quantized_1001_class_model_lists_no_zero_scores(coral: Path):
    # Found demoing: the top-3 of a uint8 model padded with "background 0.0000" (its floor, not a prediction).
    run = run_cli("classify", "--top-k", "10", "--json", "--model", coral / "mobilenet_v1_0.25_128_quant.tflite",
                  coral / "sunflower.bmp")  # fmt: skip
    assert run.returncode == 0, run.stderr
    top = run.json()["results"][0]["top"]
    assert top[0]["label"] == "daisy"
    assert 1 < len(top) < 10 and all(p["score"] > 0 for p in top)
    assert "background" not in [p["label"] for p in top]
