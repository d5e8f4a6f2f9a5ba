"""Shared test helpers: real files, real runtime, the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PHOTOS = ROOT / "tests" / "data" / "photos"
TEST_MODELS = ROOT / "tests" / "data" / "models"
CORAL = ROOT.parent / "shared" / "fixtures" / "coral"


@pytest.fixture(scope="session")
def coral() -> Path:
    """Third-party models and photos; absent in a user's checkout, mandatory in CI."""
    if not (CORAL / "README.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the third-party fixtures are missing at {CORAL}")
        pytest.skip(f"third-party fixtures not present at {CORAL} (they exist for CI and developers only)")
    return CORAL


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


def run_cli(*args: str | Path, timeout: float = 120, env: dict[str, str] | None = None) -> CliRun:
    """Run `python -m app ...` as a user would, in a fresh process (`env` adds variables)."""
    proc = subprocess.run(
        [sys.executable, "-m", "app", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(run: CliRun, code: int, *fragments: str) -> None:
    """The failure contract: the exit code, one plain line on stderr, no traceback."""
    assert run.returncode == code, (run.returncode, run.stderr)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("delegate-scope: error: "), lines[0]
    assert "Traceback" not in run.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# Chromium's SwiftShader: a real Vulkan driver that runs on the CPU, i.e. a software "GPU" adapter.
SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
# Points the Vulkan loader at a driver file that does not exist: no Vulkan device at all.
NO_VULKAN = {"VK_DRIVER_FILES": "/nonexistent/no_icd.json", "VK_ICD_FILENAMES": "/nonexistent/no_icd.json"}


@pytest.fixture(scope="session")
def swiftshader() -> dict[str, str]:
    if not SWIFTSHADER_ICD.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but SwiftShader is missing at {SWIFTSHADER_ICD} (.ci/run installs chromium)")
        pytest.skip(f"SwiftShader Vulkan driver not installed ({SWIFTSHADER_ICD}; Debian package chromium)")
    return {"VK_DRIVER_FILES": str(SWIFTSHADER_ICD), "VK_ICD_FILENAMES": str(SWIFTSHADER_ICD)}


@pytest.fixture(scope="session", autouse=True)
def tensorflow_stays_out_of_the_test_process():
    """TensorFlow next to LiteRT's GPU environment aborts the process at exit ("free(): invalid
    pointer", seen here): the app never imports it, and tests that need it use a child process."""
    yield
    assert "tensorflow" not in sys.modules, "a test imported TensorFlow into the test process"
