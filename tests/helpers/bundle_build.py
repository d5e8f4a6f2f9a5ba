"""The PyInstaller bundle's build (packaging/build.py) as a child process that can start early.

The build and the bundled models' rebuild (tests/test_build_models.py) are the suite's two longest
steps (~32 s and ~36 s here), each one process mostly on one core: when both modules run, the rebuild's
fixture starts the bundle's build beside its own and waits for both. Both modules are in one xdist group
("bundle"), so one worker holds the build; the other worker goes on with the rest of the suite."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import ROOT


class BundleBuild:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._proc: subprocess.Popen[str] | None = None
        self._started = 0.0
        self._info: dict[str, Any] | None = None
        self._error: str | None = None  # a failed build's output, said again to every later wait()

    @staticmethod
    def possible() -> bool:
        return importlib.util.find_spec("PyInstaller") is not None

    def start(self) -> None:
        if self._proc is None and self._info is None and self.possible():
            cmd = [sys.executable, str(ROOT / "packaging" / "build.py"), "--dist", str(self.folder / "dist"),
                   "--work", str(self.folder / "work"), "--json", str(self.folder / "build.json")]  # fmt: skip
            self._started = time.perf_counter()
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait(self, timeout: float = 1500) -> dict[str, Any]:
        """The build's build.json (starting it if nobody has); an AssertionError with its output if it failed."""
        assert self._error is None, self._error
        if self._info is None:
            self.start()
            assert self._proc is not None, "PyInstaller is not installed"
            out, err = self._proc.communicate(timeout=timeout)
            if self._proc.returncode != 0:
                self._error = f"build failed:\n{out[-4000:]}\n{err[-6000:]}"
            assert self._error is None, self._error
            self._info = json.loads((self.folder / "build.json").read_text(encoding="utf-8"))
            print(f"\nbundle built in {time.perf_counter() - self._started:.0f} s, "
                  f"{self._info['size_bytes'] / 1e6:.1f} MB")  # fmt: skip
            shutil.rmtree(self.folder / "work", ignore_errors=True)  # PyInstaller's intermediate files
        return self._info


def packaging_tests_collected(session: pytest.Session) -> bool:
    """Whether this run holds a test of the bundle (its `bundle` fixture)."""
    return any("bundle" in getattr(item, "fixturenames", ()) for item in session.items)
