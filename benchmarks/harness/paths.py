"""Where the project's files are. Scripts run from the repo root (`python -m benchmarks...`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
PHOTOS = ROOT / "tests" / "data" / "photos"
GRACE_HOPPER = PHOTOS / "grace_hopper.jpg"
DEMO_CLIP = ROOT / "resources" / "demo.mp4"
# The third-party fixtures, where developers and CI have them (tests/conftest.py reads the same folder).
CORAL = ROOT.parent / "shared" / "fixtures" / "coral"
VISION = CORAL.parent / "vision"  # detectors, segmenters, pose, landmarks, audio, a sequence model
BUNDLED = ("efficientnet_lite0", "efficientnet_lite0_int8")


def model_path(name: str) -> Path:
    """The bundled model `name`'s .tflite file."""
    return MODELS / f"{name}.tflite"
