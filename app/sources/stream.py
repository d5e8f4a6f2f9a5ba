"""Live network streams (an IP camera, a relay) read through FFmpeg, with open and read timeouts.
A lost stream reopens itself on the next read (capture.py)."""

from __future__ import annotations

import os
import threading

import cv2
import numpy as np

from app.sources.base import SourceInfo
from app.sources.opencv import _LiveCapture, _open_capture, _valid_fps
from app.system.redact import redact_credentials

# Opening, and waiting for the next frame. A sender that goes silent is lost after one to two
# of these: FFmpeg hands out the frame it holds when the first wait ends.
STREAM_TIMEOUT_MS = 3000
# How long FFmpeg may study a live stream before it opens: its default (5 s) is spent waiting
# for frames that a camera delivers in real time.
STREAM_PROBE_OPTIONS = "analyzeduration;300000|probesize;262144"

_ffmpeg_options_lock = threading.Lock()  # OpenCV reads its FFmpeg options from the environment


class StreamSource(_LiveCapture):
    """A live network stream (an IP camera, a relay): paced by its sender, like a camera.
    Opening and each read give up after STREAM_TIMEOUT_MS, so a sender that goes silent is
    a lost source (reconnected with back-off), never a capture thread stuck in FFmpeg."""

    def __init__(self, url: str, *, spec: str) -> None:
        super().__init__()
        self._url = url
        self._pending = self._open()
        assert self._cap is not None
        reported = self._cap.get(cv2.CAP_PROP_FPS)
        rate = reported if _valid_fps(reported) else 30.0
        height, width = self._pending.shape[:2]
        self.info = SourceInfo(
            spec=redact_credentials(spec),
            kind="stream",
            width=width,
            height=height,
            fps=rate,
            frame_count=None,
            description=f"stream {redact_credentials(url)}: {width}x{height}, as the sender delivers",
            warnings=[] if _valid_fps(reported) else ["the stream reports no frame rate"],
        )

    def _open(self) -> np.ndarray:
        shown = redact_credentials(self._url)
        failed = f"stream {shown} did not open or sent no frame within {STREAM_TIMEOUT_MS / 1000:g} s"
        self._cap, first = _open_capture(self._timed_capture, shown, not_opened=failed, no_frame=failed)
        return first

    def _timed_capture(self) -> cv2.VideoCapture:
        timeouts = [
            cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
            STREAM_TIMEOUT_MS,
            cv2.CAP_PROP_READ_TIMEOUT_MSEC,
            STREAM_TIMEOUT_MS,
        ]
        with _ffmpeg_options_lock:
            previous = os.environ.get("OPENCV_FFMPEG_CAPTURE_OPTIONS")
            os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = STREAM_PROBE_OPTIONS
            try:
                return cv2.VideoCapture(self._url, cv2.CAP_FFMPEG, timeouts)
            finally:
                if previous is None:
                    os.environ.pop("OPENCV_FFMPEG_CAPTURE_OPTIONS", None)
                else:
                    os.environ["OPENCV_FFMPEG_CAPTURE_OPTIONS"] = previous

    def _lost_message(self) -> str:
        return f"stream {redact_credentials(self._url)} stopped delivering frames"
