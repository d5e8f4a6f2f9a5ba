"""Generated frames: deterministic, for runs and tests without a camera or a file."""

from __future__ import annotations

import cv2
import numpy as np

from app.sources.base import SourceInfo, _Source

SYNTHETIC_DEFAULT = (640, 480, 30.0)  # width, height, fps


CYCLE_FRAMES = 30  # rendered once, then delivered in a loop
_CYCLE_BYTES = 64 * 1024 * 1024  # ... fewer for big frames


class SyntheticSource(_Source):
    """Deterministic generated frames: a gradient that moves with the frame index and the index
    printed on it, so consecutive frames differ and frame N is the same in every run.

    The frames are rendered when the source opens and then delivered in a cycle of up to
    CYCLE_FRAMES (read-only arrays, shared): rendering one took the capture thread ~1.7 ms at
    640x480 on an H200 host's CPU, so an unpaced synthetic source held a GPU pipeline to ~400
    frames/s when its model alone ran ~880 /s. A source meant to never bound must cost nothing.
    """

    def __init__(self, width: int, height: int, fps: float, *, spec: str, pace: bool = True) -> None:
        super().__init__(fps if pace else None)
        self._xs = (np.arange(width) * 256 // width).astype(np.uint8)
        self._ys = (np.arange(height) * 256 // height).astype(np.uint8)
        diagonal = (np.add.outer(np.arange(height) / height, np.arange(width) / width) * 127).astype(np.uint8)
        self._diagonal = diagonal
        self._scale = max(0.4, height / 240)
        count = max(2, min(CYCLE_FRAMES, _CYCLE_BYTES // (width * height * 3)))
        self._cycle = [self._render(n) for n in range(count)]
        for image in self._cycle:
            image.setflags(write=False)
        self.info = SourceInfo(
            spec=spec,
            kind="synthetic",
            width=width,
            height=height,
            fps=fps,
            frame_count=None,
            description=f"synthetic {width}x{height} @ {fps:g} fps" + ("" if pace else ", unpaced"),
        )

    def _content_id(self, index: int) -> int:
        return index % len(self._cycle)

    def _next_image(self) -> np.ndarray:
        return self._cycle[self._index % len(self._cycle)]

    def _render(self, n: int) -> np.ndarray:
        image = np.empty((len(self._ys), len(self._xs), 3), np.uint8)
        image[..., 0] = self._xs[None, :] + np.uint8(3 * n % 256)  # uint8 arithmetic wraps: endless scroll
        image[..., 1] = self._ys[:, None] + np.uint8(2 * n % 256)
        image[..., 2] = self._diagonal
        thickness = max(1, round(2 * self._scale))
        origin = (round(10 * self._scale), round(40 * self._scale))
        cv2.putText(image, f"#{n}", origin, cv2.FONT_HERSHEY_SIMPLEX, self._scale, (255, 255, 255), thickness)
        return image
