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


def run_cli(*args: str | Path, timeout: float = 120) -> CliRun:
    """Run `python -m app ...` as a user would, in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-m", "app", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
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
