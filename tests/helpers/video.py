"""Video files written for the source tests: frames identifiable after lossy coding."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

VIDEO_FPS = 25.0
VIDEO_FRAMES = 50
VIDEO_SIZE = (160, 120)


def grey_level(index: int) -> int:
    return (index * 5) % 250


def write_video(path: Path, fourcc: str, frames: int = VIDEO_FRAMES, fps: float = VIDEO_FPS) -> Path:
    """Frame i is a flat grey of grey_level(i) with its number on it: identifiable after lossy coding."""
    writer = cv2.VideoWriter(str(path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*fourcc), fps, VIDEO_SIZE)
    assert writer.isOpened(), f"OpenCV cannot write {fourcc} to {path.suffix}"
    for i in range(frames):
        image = np.full((VIDEO_SIZE[1], VIDEO_SIZE[0], 3), grey_level(i), np.uint8)
        cv2.putText(image, str(i), (10, 100), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
        writer.write(image)
    writer.release()
    return path
