"""Model files every command refuses, written into a test's folder: missing, empty, truncated, not TFLite,
an input of dynamic size nobody fixed. (A detector-like or text-input model loads, as raw.)"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.paths import PHOTOS, TEST_MODELS


def bad_models(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Model paths a user may hand over that every command refuses (exit 3), with a fragment of the reason."""
    source = (TEST_MODELS / "detector_like.tflite").read_bytes()
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(source[: len(source) // 3])
    text = tmp_path / "notes.tflite"
    text.write_text("this is a text file that someone renamed\n")
    jpeg = tmp_path / "photo.tflite"
    shutil.copy(PHOTOS / "coffee.jpg", jpeg)
    return {
        "missing": (tmp_path / "nope.tflite", "not found"),
        "unknown name": (Path("efficientnet_b7"), "unknown model"),
        "folder": (tmp_path, "folder"),
        "empty": (empty, "empty"),
        "truncated": (truncated, "truncated"),
        "not tflite": (text, "not a TFLite model"),
        "a jpeg": (jpeg, "not a TFLite model"),
        "dynamic size": (TEST_MODELS / "dynamic_size.tflite", "fix them with --input-shape"),
    }
