"""Importing coremltools without TensorFlow or torch, for loading, predicting and building ML programs."""

from __future__ import annotations

import sys
from typing import Any

# coremltools imports each of these at import time when installed, only to enable converters the
# app never uses: TensorFlow alone costs seconds and gigabytes, and the app runs on LiteRT alone.
_CONVERTER_FRAMEWORKS = ("tensorflow", "torch")


def import_coremltools() -> Any:
    """Import coremltools for loading and predicting only, without pulling in TensorFlow or torch.

    A `None` entry in sys.modules makes `import x` raise ImportError, which coremltools
    takes as "not installed"; the entries are removed again, so later imports work.
    """
    if "coremltools" in sys.modules:
        return sys.modules["coremltools"]
    blocked = [name for name in _CONVERTER_FRAMEWORKS if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # typeshed types the values as modules; None blocks
    try:
        import coremltools
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    return coremltools
