"""Video files and the bundled demo clip: paced at the file's rate, looping by default."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from app.errors import SourceError, SourceLost
from app.model.preprocess import as_bgr_uint8
from app.sources.base import SourceInfo
from app.sources.opencv import _CaptureSource, _open_capture, _valid_fps
from app.system.paths import resource_dir

DEMO_CLIP_NAMES = ("demo.mp4", "demo.avi")


def demo_clip_path() -> Path:
    folder = resource_dir("resources")
    for name in DEMO_CLIP_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise SourceError(f"demo clip not found in {folder} (build it with: python resources/make_demo_clip.py)")


# Above this many usable CPUs a video file decodes on 2 FFmpeg threads. Unpaced, on an H200 host
# (16 CPUs) the GPU pipeline ran 696 frames/s with 2 against 462 with 1, capture-bound either way;
# on the 2-CPU machine 1 thread was faster (178 against 164 inferences/s): FFmpeg's helpers there
# take the inference thread's core (docs/pipeline.md).
_ONE_DECODER_UP_TO_CPUS = 4


def default_decode_threads() -> int:
    """FFmpeg threads for a video file when not asked for: by the CPUs this process may use."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return 1 if cpus <= _ONE_DECODER_UP_TO_CPUS else 2


def _open_video_file(path: Path, threads: int = 1) -> cv2.VideoCapture:
    """A capture for a video file that decodes on the calling (capture) thread alone, unless
    `threads` asks for more (0: FFmpeg's own choice, one per core).

    FFmpeg's default is one decoding thread per core. Its helper threads then land on the
    core the inference thread is running on and take it from the model: with the demo clip
    and the int8 model here the inference thread waited 0.54 ms per inference for a CPU
    instead of 0.14, and the pipeline ran 164 instead of 178 inferences/s, while one thread
    decodes the clip as fast (2.30 against 2.35 ms a frame; docs/pipeline.md)."""
    # FFmpeg explicitly: CAP_ANY would hand names like "img%03d.png" to the image-sequence reader.
    if cv2.videoio_registry.hasBackend(cv2.CAP_FFMPEG):
        return cv2.VideoCapture(str(path), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, threads])
    return cv2.VideoCapture(str(path), cv2.CAP_ANY)  # another backend may refuse parameters it does not know


class VideoSource(_CaptureSource):
    """A video file, paced at its frame rate (or `fps`) unless pace=False."""

    def __init__(
        self,
        path: Path,
        *,
        spec: str,
        kind: str = "video",
        pace: bool = True,
        loop: bool = True,
        fps: float | None = None,
        decode_threads: int | None = None,  # None: default_decode_threads()
    ) -> None:
        self._path = path
        self._decode_threads = default_decode_threads() if decode_threads is None else decode_threads
        self._loop = loop
        first, file_fps, count = self._open()
        self._pending: np.ndarray | None = first  # decoded at open, handed out as the first frame
        warnings = []
        if not _valid_fps(file_fps):
            warnings.append(f"the file gives no usable frame rate ({file_fps:g}); playing at 30 fps")
            file_fps = 30.0
        rate = fps or file_fps
        super().__init__(rate if pace else None)
        self._frame_count = count
        self._decoded = 0  # frames decoded in the current pass through the file
        height, width = self._pending.shape[:2]
        length = f", {count} frames ({count / file_fps:.1f} s)" if count else ""
        mode = ("paced" if pace else "unpaced") + (", looping" if loop else "")
        self.info = SourceInfo(
            spec=spec,
            kind=kind,
            width=width,
            height=height,
            fps=rate,
            frame_count=count,
            description=f"{kind} {path.name}: {width}x{height} @ {rate:g} fps{length}, {mode}",
            warnings=warnings,
        )

    def _open(self) -> tuple[np.ndarray, float, int | None]:
        """Open the file and decode its first frame: a file that opens but decodes nothing is
        as unusable as one that does not open, and should fail here, not in the thread."""
        path = self._path
        if not path.exists():
            raise SourceError(f"video file not found: {path}")
        if path.is_dir():
            raise SourceError(f"video path is a folder (use images:{path} for a folder of images): {path}")
        unreadable = f"not a readable video: {path}"
        cap, first = _open_capture(
            lambda: _open_video_file(path, self._decode_threads), str(path), not_opened=unreadable, no_frame=unreadable
        )
        self._cap = cap
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        return first, cap.get(cv2.CAP_PROP_FPS), count if count > 0 else None

    def _next_image(self) -> np.ndarray | None:
        if self._pending is not None:
            image, self._pending = self._pending, None
            self._decoded += 1
            return image
        if self._cap is None:  # lost earlier: a looping source starts again, others have ended
            return self._restart() if self._loop else None
        ok, image = self._cap.read()
        if ok and image is not None:
            self._decoded += 1
            return as_bgr_uint8(image)
        if self._stopped_early():
            decoded, self._decoded = self._decoded, 0
            self._release()
            raise SourceLost(
                f"video stopped after {decoded} of its {self._frame_count} frames "
                f"(truncated or damaged file?): {self._path}"
            )
        if self._loop:
            return self._restart()
        self._release()  # ended for good: free the decoder now, not at close()
        return None

    def _stopped_early(self) -> bool:
        # The container's count is sometimes an estimate from the duration: allow a little slack.
        if self._frame_count is None:
            return False
        slack = max(2, round(self._frame_count * 0.01))
        return self._decoded < self._frame_count - slack

    def _restart(self) -> np.ndarray:
        """Back to the first frame by reopening: seeking is unreliable in some containers."""
        self._release()
        self._decoded = 0
        try:
            first, _, _ = self._open()
        except SourceError as exc:
            raise SourceLost(f"video can no longer be read: {exc}") from None
        self._decoded = 1
        return first
