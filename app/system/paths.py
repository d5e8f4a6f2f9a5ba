"""Where the app finds its bundled files, in a checkout, an installed wheel or a frozen bundle."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def _candidates(folder: str) -> list[Path]:
    here = Path(__file__).resolve().parent.parent  # app/system/paths.py -> app
    roots = []
    frozen = getattr(sys, "_MEIPASS", None)  # PyInstaller one-folder bundle
    if frozen:
        roots.append(Path(frozen))
    roots.append(here.parent)  # source checkout or editable install: <repo>/app -> <repo>
    roots.append(Path(sys.prefix) / "share" / "delegate-scope")  # wheel data-files
    return [root / folder for root in roots]


def resource_dir(folder: str, env_var: str | None = None) -> Path:
    """First existing `folder` among the known roots; an env var can point elsewhere."""
    if env_var and os.environ.get(env_var):
        return Path(os.environ[env_var])
    for candidate in _candidates(folder):
        if candidate.is_dir():
            return candidate
    return _candidates(folder)[-1]


def models_dir() -> Path:
    return resource_dir("models", "DELEGATE_SCOPE_MODELS")


def error_log() -> Path:
    """Where the window appends an unexpected error's full traceback (it shows the user one line)."""
    return Path(tempfile.gettempdir()) / "delegate-scope-errors.log"
