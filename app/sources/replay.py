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
# A file's frames are spread over it by keeping every k-th; at most this many are read (decoded) for it, so
# a long file is not decoded whole (then the kept frames span its first MAX_READ frames, and say so).
MAX_READ = 3000


@dataclass(frozen=True)
class FrameSelection:
    """Which of the source's frames a capture kept: their numbers in the source (from 0, as it reads
    them), out of the `length` frames it has (None: a live or endless source, read as it comes)."""

    indices: tuple[int, ...]
    length: int | None

    @property
    def span(self) -> int:
        """The source frames the kept ones are spread over: from the first to just before the next pick."""
        step = (self.indices[-1] - self.indices[0]) / (len(self.indices) - 1) if len(self.indices) > 1 else 1
        return round(self.indices[-1] + step)

    def describe(self) -> str:
        """'every 6th frame of the 600 (frames 0–594), spread over the whole source'."""
        n, first, last = len(self.indices), self.indices[0], self.indices[-1]
        span = f"frames {first}–{last}" if n > 1 else f"frame {first}"
        if self.length is None:
            return f"{span}, as the source gave them (a live or endless source)"
        if all(b - a == 1 for a, b in zip(self.indices, self.indices[1:], strict=False)):
            return f"{span} of {self.length}, in order" + (", looping" if last >= self.length else "")
        steps = {b - a for a, b in zip(self.indices, self.indices[1:], strict=False)}
        every = f"every {_ordinal(steps.pop())} frame" if len(steps) == 1 else f"one frame in {self.span / n:.3g}"
        covered = "spread over the whole source" if self.span >= self.length else (
            f"spread over its first {self.span} frames (at most {MAX_READ} are read)")
        return f"{every} of the {self.length} ({span}), {covered}"

    def to_dict(self) -> dict[str, object]:
        return {"length": self.length, "indices": list(self.indices), "text": self.describe()}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class CapturedFrames:
    """The images read from a source, in order (read-only arrays), and that source's info."""

    spec: str  # the source they came from
    images: tuple[np.ndarray, ...]
    info: SourceInfo
    selection: FrameSelection | None = None  # which of the source's frames they are (capture_frames)

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
    a camera or stream delivers at its own rate). A source of known length longer than `count` (a
    video file, the demo clip, an image slideshow) gives frames evenly spread over it (every k-th), so
    every scene is in them, not only its opening seconds (over its first MAX_READ frames at most); a
    live or endless one gives frames as they come. SourceError when it cannot be opened or ends before giving one frame;
    UsageError when the frames would not fit (`capture_limit_bytes`); a file shorter than `count` loops.
    `selection` says which frames were kept."""
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
        length = source.info.frame_count if source.info.frame_count and source.info.frame_count > 0 else None
        # Evenly spread picks (frame i * span // count) over the source, or its first MAX_READ frames.
        span = max(count, min(length, MAX_READ)) if length is not None else count
        picks = {i * span // count for i in range(count)}
        last_pick = max(picks)
        images: list[np.ndarray] = []
        kept: list[int] = []
        while len(images) < count:
            frame = source.read()
            if frame is None or frame.index > last_pick:  # ended, or shorter than it said
                break
            if frame.index not in picks:
                continue
            image = frame.image
            image.setflags(write=False)
            images.append(image)
            kept.append(frame.index)
        if not images:
            raise SourceError(f"{spec} gave no frame to capture")
        selection = FrameSelection(tuple(kept), length)
        return CapturedFrames(spec, tuple(images), source.info, selection)
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
