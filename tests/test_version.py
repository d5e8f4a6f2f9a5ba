"""One version: pyproject.toml's, read from the installed metadata by `--version`, About and the bundle."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from app.system.version import DISTRIBUTION, UNINSTALLED, summary, version
from tests.helpers.paths import ROOT


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_installed_metadata_is_pyprojects_version_and_description():
    """Fails when pyproject.toml was raised and the package not reinstalled (`pip install -e .`)."""
    assert version() == metadata.version(DISTRIBUTION) == _project()["version"] != UNINSTALLED
    assert summary() == _project()["description"]


def test_the_command_line_prints_the_installed_version_on_stdout():
    script = Path(sys.executable).parent / "delegate-scope"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "app"]
    proc = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"delegate-scope {_project()['version']}\n" and proc.stderr == ""


def test_no_module_carries_a_version_of_its_own():
    """`__version__` literals drift from pyproject.toml: the one reader is app.system.version."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "app").rglob("*.py")
        if "__version__ =" in p.read_text(encoding="utf-8")
    ]
    assert offenders == []
