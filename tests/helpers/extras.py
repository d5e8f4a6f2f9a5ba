"""Optional extras of the package (pyproject.toml): tests that need one skip without it, with the reason."""

from __future__ import annotations

import importlib.util
import os

import pytest


def need_convert_extra(*modules: str) -> None:
    """Skip without the modules (coremltools, tensorflow: the 'convert' extra), except in CI, where the
    README test command installs the extra and a missing one is a failure."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {', '.join(missing)} is not installed (the 'convert' extra)")
        pytest.skip(f"needs {', '.join(missing)} (the 'convert' extra)")
