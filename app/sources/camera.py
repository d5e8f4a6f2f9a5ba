"""OpenCV cameras: opening with the requested size and rate, what the device really delivers,
and listing the cameras present. A lost camera reopens itself on the next read (capture.py)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from app.errors import SourceError
from app.model.preprocess import as_bgr_uint8
from app.sources.base import SourceInfo
from app.sources.opencv import _LiveCapture, _open_capture, _valid_fps
from app.system.native_log import capture_stderr

# Measuring a camera's real rate when it reports 0: frames after the first (which carries
# the start-up latency), for at most this long.
FPS_PROBE_FRAMES = 8
FPS_PROBE_SECONDS = 1.0


@dataclass(frozen=True)
class CameraInfo:
    index: int
    name: str | None  # None where the platform gives no name without extra packages
    width: int
    height: int

    @property
    def spec(self) -> str:
        return f"camera:{self.index}"


class CameraSource(_LiveCapture):
    """An OpenCV camera. The device paces the frames; what it really delivers is reported."""

    def __init__(
        self,
        index: int,
        *,
        spec: str,
        width: int | None = None,
        height: int | None = None,
        fps: float | None = None,
    ) -> None:
        super().__init__()
        self._camera = index
        self._request = (width, height, fps)
        first = self._open()
        warnings: list[str] = []
        rate, self._pending = self._delivered_fps(first, warnings)
        actual_h, actual_w = self._pending.shape[:2]
        if (width and width != actual_w) or (height and height != actual_h):
            warnings.append(f"requested {width or '?'}x{height or '?'}, the camera delivers {actual_w}x{actual_h}")
        if fps and abs(rate - fps) > 0.1 * fps:
            warnings.append(f"requested {fps:g} fps, the camera delivers {rate:.1f} fps")
        assert self._cap is not None
        backend = self._cap.getBackendName()
        self.info = SourceInfo(
            spec=spec,
            kind="camera",
            width=actual_w,
            height=actual_h,
            fps=rate,
            frame_count=None,
            description=f"camera {index} ({backend}): {actual_w}x{actual_h} @ {rate:.3g} fps",
            warnings=warnings,
        )

    def _open(self) -> np.ndarray:
        self._cap, first = _open_capture(
            self._configured_capture,
            f"camera {self._camera}",
            not_opened=f"camera {self._camera} did not open (no such device?)",
            no_frame=f"camera {self._camera} opened but delivered no frame (in use by another program?)",
        )
        return first

    def _configured_capture(self) -> cv2.VideoCapture:
        width, height, fps = self._request
        cap = cv2.VideoCapture(self._camera)
        if cap.isOpened():
            cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # newest frame, not a stale queue; ignored where unsupported
            if width:
                cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
            if height:
                cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
            if fps:
                cap.set(cv2.CAP_PROP_FPS, fps)
        return cap

    def _delivered_fps(self, first: np.ndarray, warnings: list[str]) -> tuple[float, np.ndarray]:
        """The property when the backend knows it; else measured from the first frames.
        Returns the rate and the newest frame read (delivered first, so nothing is skipped
        twice)."""
        assert self._cap is not None
        reported = self._cap.get(cv2.CAP_PROP_FPS)
        if _valid_fps(reported):
            return reported, first
        stamps: list[float] = []
        newest = first
        deadline = time.monotonic() + FPS_PROBE_SECONDS
        while len(stamps) < FPS_PROBE_FRAMES and time.monotonic() < deadline:
            ok, image = self._cap.read()
            if not ok or image is None:
                break
            stamps.append(time.monotonic())
            newest = as_bgr_uint8(image)
        if len(stamps) >= 3 and stamps[-1] > stamps[0]:
            measured = (len(stamps) - 1) / (stamps[-1] - stamps[0])
            warnings.append(f"the camera reports no frame rate; measured {measured:.1f} fps from its first frames")
            return measured, newest
        fallback = self._request[2] or 30.0
        warnings.append(f"the camera reports no frame rate and too few frames to measure it; assuming {fallback:g}")
        return fallback, newest

    def _lost_message(self) -> str:
        return f"camera {self._camera} stopped delivering frames (unplugged or taken by another program?)"

    def _unavailable_message(self, exc: SourceError) -> str:
        return f"camera {self._camera} is still unavailable: {exc}"


def list_cameras(max_index: int = 8, first_index: int = 0) -> list[CameraInfo]:
    """Cameras that open, with their default resolution. Quick and silent when there are none.

    `first_index` skips indices already probed (the window's start-up look at camera 0): opening a
    camera is slow and some drivers dislike being opened twice in a row."""
    found = []
    for index in (i for i in _camera_candidates(max_index) if i >= first_index):
        with capture_stderr():  # OpenCV and FFmpeg warn on fd 2 for every absent index
            cap = cv2.VideoCapture(index)
            try:
                opened = cap.isOpened()
                size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
            finally:
                cap.release()
        if opened:
            found.append(CameraInfo(index, _camera_name(index), *size))
    return found


def _camera_candidates(max_index: int) -> list[int]:
    if sys.platform.startswith("linux"):  # V4L2 index N is /dev/videoN: skip the ones absent
        return [i for i in range(max_index) if Path(f"/dev/video{i}").exists()]
    return list(range(max_index))


def _camera_name(index: int) -> str | None:
    try:
        return Path(f"/sys/class/video4linux/video{index}/name").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
