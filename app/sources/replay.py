"""Frames captured once and replayed: the same pixels for every configuration of a delegate sweep.

A sweep compares configurations on identical input, so the source is read once
(`capture_frames`) and each configuration's pipeline reads the kept frames back
(`CapturedFrames.open`), as fast as inference takes them and looping, so warm-up and
measured inferences never run short of frames. Replayed frames repeat their images
(`Frame.content_id` = the captured frame's position), like the synthetic cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import psutil

from app.errors import SourceError, UsageError
from app.sources.base import SourceInfo, _Source
from app.sources.spec import open_source

MAX_CAPTURED_BYTES = 4 * 1024**3  # what a sweep may keep in memory at most; checked before reading


@dataclass(frozen=True)
class CapturedFrames:
    """The images read from a source, in order (read-only arrays), and that source's info."""

    spec: str  # the source they came from
    images: tuple[np.ndarray, ...]
    info: SourceInfo

    def __str__(self) -> str:  # where a source spec is shown (status messages)
        return f"{len(self.images)} frames of {self.spec}"

    @property
    def nbytes(self) -> int:
        return sum(image.nbytes for image in self.images)

    def open(self, *, pace: bool = False, loop: bool = True, **_: object) -> ReplaySource:
        """A source that replays the frames; `pace` is ignored (a replay is a benchmark input,
        always unpaced) and the source's own options (decode threads) no longer apply."""
        return ReplaySource(self, loop=loop)


def capture_frames(spec: str, count: int, *, decode_threads: int | None = None) -> CapturedFrames:
    """Read `count` frames from the source `spec` (unpaced: a file is read as fast as it decodes;
    a camera or stream delivers at its own rate). SourceError when it cannot be opened or ends
    before giving one frame; UsageError when the frames would not fit (`capture_limit_bytes`); a
    file shorter than `count` loops."""
    source = open_source(spec, pace=False, loop=True, decode_threads=decode_threads)
    try:
        frame_bytes = source.info.width * source.info.height * 3
        limit = capture_limit_bytes()
        if frame_bytes * count > limit:
            raise UsageError(
                f"{count} frames of {source.info.width}x{source.info.height} need "
                f"{frame_bytes * count / 1024**3:.1f} GiB in memory (at most {limit / 1024**3:.1f} GiB here: "
                f"{MAX_CAPTURED_BYTES / 1024**3:.0f} GiB, and no more than half the memory available); "
                "ask for fewer frames"
            )
        images: list[np.ndarray] = []
        while len(images) < count:
            frame = source.read()
            if frame is None:
                break
            image = frame.image
            image.setflags(write=False)
            images.append(image)
        if not images:
            raise SourceError(f"{spec} gave no frame to capture")
        return CapturedFrames(spec, tuple(images), source.info)
    finally:
        source.close()


def capture_limit_bytes() -> int:
    """What a capture may keep: MAX_CAPTURED_BYTES, and no more than half the memory available now."""
    return min(MAX_CAPTURED_BYTES, psutil.virtual_memory().available // 2)


class ReplaySource(_Source):
    """The captured frames again, unpaced, looping unless `loop=False`."""

    def __init__(self, frames: CapturedFrames, *, loop: bool = True) -> None:
        super().__init__(None)
        self._images = frames.images
        self._loop = loop
        first = frames.images[0]
        self.info = SourceInfo(
            spec=frames.spec,
            kind="replay",
            width=first.shape[1],
            height=first.shape[0],
            fps=0.0,  # unpaced: as fast as inference takes them
            frame_count=len(frames.images),
            description=f"{len(frames.images)} frames captured from {frames.info.description}, replayed unpaced",
        )

    def _content_id(self, index: int) -> int:
        return index % len(self._images)

    def _next_image(self) -> np.ndarray | None:
        if not self._loop and self._index >= len(self._images):
            return None
        return self._images[self._index % len(self._images)]
