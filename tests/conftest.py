"""Fixtures shared by the test modules. Shared helpers live in tests/helpers/ (paths, the CLI, waiting, ...):
a test module imports those, never another test module or this file (tests/test_test_layout.py)."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers.bundle_build import BundleBuild
from tests.helpers.paths import ROOT
from tests.helpers.vulkan import SWIFTSHADER_ICD

if TYPE_CHECKING:
    from app.pipeline import Pipeline

CORAL = ROOT.parent / "shared" / "fixtures" / "coral"
VISION = ROOT.parent / "shared" / "fixtures" / "vision"


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile the project's own modules once, before the workers start. Most tests run `python -m
    app` or a harness in a child process, and where PYTHONDONTWRITEBYTECODE is set (this machine and its CI
    set it) Python keeps nothing it compiles at import, so every child compiled every app module it imported
    again: `bench --help` took 0.51-0.61 s of CPU to start, 0.39-0.41 s with the modules compiled
    (docs/reliability.md). Written by compileall whatever that variable says, read by every import;
    `__pycache__/` is git-ignored."""
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller compiled them before starting it
    import compileall

    for folder in ("app", "tests", "benchmarks"):
        compileall.compile_dir(ROOT / folder, quiet=1)


@pytest.fixture(scope="session")
def coral() -> Path:
    """Third-party models and photos; absent in a user's checkout, mandatory in CI."""
    if not (CORAL / "README.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the third-party fixtures are missing at {CORAL}")
        pytest.skip(f"third-party fixtures not present at {CORAL} (they exist for CI and developers only)")
    return CORAL


@pytest.fixture(scope="session")
def vision() -> Path:
    """Third-party models of the other tasks (a detector, a segmenter, pose and landmark models, audio and a
    sequence model; photos in `coral`): absent in a user's checkout, mandatory in CI."""
    if not (VISION / "README.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the third-party fixtures are missing at {VISION}")
        pytest.skip(f"third-party fixtures not present at {VISION} (they exist for CI and developers only)")
    return VISION


@pytest.fixture(scope="session")
def swiftshader() -> dict[str, str]:
    if not SWIFTSHADER_ICD.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but SwiftShader is missing at {SWIFTSHADER_ICD} (.ci/run installs chromium)")
        pytest.skip(f"SwiftShader Vulkan driver not installed ({SWIFTSHADER_ICD}; Debian package chromium)")
    return {"VK_DRIVER_FILES": str(SWIFTSHADER_ICD), "VK_ICD_FILENAMES": str(SWIFTSHADER_ICD)}


@pytest.fixture(scope="session")
def three_ops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A three-op classifier (MEAN, FULLY_CONNECTED, SOFTMAX over 224x224x3; tests/builders/any_models.py) for
    the GPU tests whose subject is not the model: on SwiftShader the GPU takes it whole, it opens with the
    same 4 queue submits as the bundled models and runs 4 per inference (the fault layer's trace), and an
    inference takes microseconds against 0.7-1 s for theirs."""
    from tests.builders.any_models import mean_classifier

    model = tmp_path_factory.mktemp("three-ops") / "three_ops.tflite"
    model.write_bytes(mean_classifier(224, softmax=True))
    return model


@pytest.fixture(scope="session")
def mobilenet_v1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MobileNet v1 1.0/224 float (tests/builders/mobilenet_v1.py), built once by TensorFlow in a child."""
    if importlib.util.find_spec("tensorflow") is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but TensorFlow (the 'convert' extra) is not installed")
        pytest.skip("building MobileNet v1 needs TensorFlow (the convert extra)")
    # Built once for every xdist worker (~10 s of TensorFlow each): in the run's shared base folder, under a lock.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this run's, never an earlier run's
    path = shared / "mobilenet_v1_1.0_224.tflite"
    with open(shared / "mobilenet_v1.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            partial = path.with_suffix(".partial")
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
            subprocess.run([sys.executable, "-m", "tests.builders.mobilenet_v1", str(partial)], check=True, env=env,
                           timeout=300, capture_output=True, cwd=ROOT)  # fmt: skip
            partial.rename(path)
    return path


@pytest.fixture(scope="session")
def bundle_build(tmp_path_factory: pytest.TempPathFactory) -> BundleBuild:
    """The desktop bundle's build, shared by tests/test_packaging.py and, to start it early beside the
    models' rebuild, tests/test_build_models.py (tests/helpers/bundle_build.py)."""
    return BundleBuild(tmp_path_factory.mktemp("bundle"))


@pytest.fixture(scope="session")
def across_switches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One window-style recording cut at switches (tests/helpers/recordings.py), made once: the report
    and the Review panel read it, never write it."""
    from tests.helpers.recordings import record_across_switches

    return record_across_switches(tmp_path_factory.mktemp("switches") / "rec.csv")


@pytest.fixture(scope="session")
def forked_cli():
    """The command line in processes forked from one that imported the app once (tests/helpers/forked_cli.py):
    for tables of command lines whose subject is what each prints and exits with, not the interpreter's start."""
    from tests.helpers.forked_cli import shared

    return shared()  # the one run_cli uses too


@pytest.fixture
def pipelines():
    """Every pipeline a test starts (tests/helpers/pipelines.py) is stopped, and must leave no thread behind."""
    started: list[Pipeline] = []
    yield started
    for p in started:
        assert p.stop(timeout=10), "pipeline did not stop in time"
        assert not any(t.is_alive() for t in p.threads())


@pytest.fixture(autouse=True)
def json_outputs_hold_to_their_schemas(request: pytest.FixtureRequest):
    """Each versioned JSON file a test leaves in its tmp_path (a recording's sidecar written in-process, a
    bench summary, a profile sidecar) is checked against its schema at teardown (docs/json.md). A test
    that damages outputs on purpose says so with `@pytest.mark.damages_outputs`."""
    checked = "tmp_path" in request.fixturenames and not request.node.get_closest_marker("damages_outputs")
    tmp_path = request.getfixturevalue("tmp_path") if checked else None  # set up first: torn down after this
    yield
    if tmp_path is None:
        return
    from tests.helpers.schemas import validate_file, versioned_files

    for path in versioned_files(tmp_path):
        validate_file(path)


@pytest.fixture(scope="session", autouse=True)
def tensorflow_stays_out_of_the_test_process():
    """TensorFlow next to LiteRT's GPU environment aborts the process at exit ("free(): invalid
    pointer", seen here): the app never imports it, and tests that need it use a child process."""
    yield
    assert "tensorflow" not in sys.modules, "a test imported TensorFlow into the test process"
