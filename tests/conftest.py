"""Fixtures shared by the test modules. Shared helpers live in tests/helpers/ (paths, the CLI, waiting, ...):
a test module imports those, never another test module or this file (tests/test_test_layout.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers.paths import ROOT
from tests.helpers.vulkan import SWIFTSHADER_ICD

if TYPE_CHECKING:
    from app.pipeline import Pipeline

CORAL = ROOT.parent / "shared" / "fixtures" / "coral"


@pytest.fixture(scope="session")
def coral() -> Path:
    """Third-party models and photos; absent in a user's checkout, mandatory in CI."""
    if not (CORAL / "README.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the third-party fixtures are missing at {CORAL}")
        pytest.skip(f"third-party fixtures not present at {CORAL} (they exist for CI and developers only)")
    return CORAL


@pytest.fixture(scope="session")
def swiftshader() -> dict[str, str]:
    if not SWIFTSHADER_ICD.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but SwiftShader is missing at {SWIFTSHADER_ICD} (.ci/run installs chromium)")
        pytest.skip(f"SwiftShader Vulkan driver not installed ({SWIFTSHADER_ICD}; Debian package chromium)")
    return {"VK_DRIVER_FILES": str(SWIFTSHADER_ICD), "VK_ICD_FILENAMES": str(SWIFTSHADER_ICD)}


@pytest.fixture
def pipelines():
    """Every pipeline a test starts (tests/helpers/pipelines.py) is stopped, and must leave no thread behind."""
    started: list[Pipeline] = []
    yield started
    for p in started:
        assert p.stop(timeout=10), "pipeline did not stop in time"
        assert not any(t.is_alive() for t in p.threads())


@pytest.fixture(scope="session", autouse=True)
def tensorflow_stays_out_of_the_test_process():
    """TensorFlow next to LiteRT's GPU environment aborts the process at exit ("free(): invalid
    pointer", seen here): the app never imports it, and tests that need it use a child process."""
    yield
    assert "tensorflow" not in sys.modules, "a test imported TensorFlow into the test process"
