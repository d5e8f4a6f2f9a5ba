"""The bundled models are reproducible: rebuilding them from the weights package gives the same answers."""

import importlib.util
import os
from pathlib import Path

import pytest

from app.backends import get_backend
from app.classify import ImageResult, classify_images
from app.model import load_model_spec
from tests.conftest import PHOTOS, ROOT


def _top1(model: Path) -> dict[str, int]:
    spec = load_model_spec(model)
    session = get_backend("cpu").open(spec, {"threads": 1})
    try:
        results = classify_images(spec, session, sorted(PHOTOS.glob("*.jpg")), 1)
        return {r.image.name: r.top[0].index for r in results if isinstance(r, ImageResult)}
    finally:
        session.close()


@pytest.mark.slow
def test_rebuilding_the_models_reproduces_the_same_top1(tmp_path: Path):
    if importlib.util.find_spec("tensorflow") is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but TensorFlow (the 'convert' extra) is not installed")
        pytest.skip("needs the 'convert' extra (TensorFlow) to rebuild the models")
    from models.build_models import build

    build(tmp_path)
    for name in ("efficientnet_lite0", "efficientnet_lite0_int8"):
        rebuilt, committed = tmp_path / f"{name}.tflite", ROOT / "models" / f"{name}.tflite"
        expected = _top1(committed)
        assert len(expected) == 5
        assert _top1(rebuilt) == expected, name
    assert (tmp_path / "imagenet_labels.txt").read_bytes() == (ROOT / "models" / "imagenet_labels.txt").read_bytes()
