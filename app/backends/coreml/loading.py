"""What both Core ML sessions (a converted package, translated partitions) need to load: coremltools, or the
reason it cannot be imported, and the Python warnings Core ML gave while loading, one line each."""

from __future__ import annotations

import warnings
from typing import Any

from app.backends.base import first_line
from app.coreml_mil.coremltools_import import import_coremltools
from app.errors import BackendUnavailable


def coremltools_or_unavailable() -> Any:
    """coremltools, or BackendUnavailable saying why it cannot be imported."""
    try:
        return import_coremltools()
    except ImportError as exc:
        raise BackendUnavailable(f"coremltools cannot be imported: {first_line(exc)}") from None


def warning_lines(caught: list[warnings.WarningMessage]) -> list[str]:
    """Python warnings caught while Core ML loaded or converted, one line each."""
    return [f"{w.category.__name__}: {first_line(str(w.message))}" for w in caught]
