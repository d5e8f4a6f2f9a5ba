"""Where a point of a letterboxed input lands on the photo: MediaPipe's detectors and hand landmarks see the
whole photo scaled to fit their input, its aspect kept (app/model/preprocess.py, letterbox_box)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from app.model.preprocess import letterbox_box


def on_photo(points: np.ndarray, photo: Path, aspect: float = 1.0) -> np.ndarray:
    """(N, 2) points (x, y) normalised to the input -> normalised to the photo, clipped to it (a point in the
    bars is put on the photo's edge, as the decoder does)."""
    height, width = cv2.imread(str(photo)).shape[:2]
    box = letterbox_box(width, height, aspect)
    xy = np.asarray(points, dtype=float)
    on = np.stack([(box.x + xy[:, 0] * box.width) / width, (box.y + xy[:, 1] * box.height) / height], axis=1)
    return np.clip(on, 0.0, 1.0)
