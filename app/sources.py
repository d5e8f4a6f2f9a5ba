"""Frame sources: camera, video file, still images, the bundled demo clip, synthetic frames.

One string picks a source everywhere (CLI, settings, window):

    camera:N            OpenCV camera N ("camera" alone is camera 0)
    video:PATH          a video file, paced at its frame rate (a bare path works too)
    images:PATH         one image or a folder of images, as a slow slideshow
    demo                the clip in resources/, played like a video
    stream:URL          a live network stream (rtsp://, http://, tcp://, udp://, ...): an IP camera
    synthetic[:WxH@FPS] generated frames (default 640x480@30)

Every source is read from one capture thread; `close()` may come from another thread at
any time and makes a blocked `read()` return None at once (the pacing sleep waits on an
Event). A source that stops delivering raises `SourceLost`; calling `read()` again tries
to recover (a camera is reopened, a looping video restarts from its first frame) and frame
indices keep counting, so the pipeline's retry-with-back-off needs no special case.
Live sources (`LIVE_KINDS`: cameras and streams) are reconnected with back-off when lost;
a file that fails mid-way fails the same way again, so it ends instead.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Self

import cv2
import numpy as np

from app.errors import ImageError, SourceError, SourceLost
from app.images import read_image
from app.native_log import capture_stderr
from app.paths import resource_dir
from app.preprocess import as_bgr_uint8
from app.redact import redact_credentials

log = logging.getLogger(__name__)

# OpenCV's own warnings ("Stream timeout triggered...", "can't be used to capture by name")
# would reach the user's terminal beside the one line this module raises for the same event.
cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)

KINDS = ("camera", "video", "images", "demo", "synthetic", "stream")
LIVE_KINDS = frozenset({"camera", "stream"})  # paced by the device, reconnected when lost
SPEC_HELP = "camera:N, video:PATH, images:PATH, stream:URL, demo or synthetic[:WxH@FPS]"
# Network protocols only: FFmpeg also knows "file:", "concat:", "subfile:", "pipe:"..., which
# would turn a stream spec into a way to read arbitrary local files or descriptors.
STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "http", "https", "tcp", "udp", "srt")
# Opening, and waiting for the next frame. A sender that goes silent is lost after one to two
# of these: FFmpeg hands out the frame it holds when the first wait ends.
STREAM_TIMEOUT_MS = 3000
# How long FFmpeg may study a live stream before it opens: its default (5 s) is spent waiting
# for frames that a camera delivers in real time.
STREAM_PROBE_OPTIONS = "analyzeduration;300000|probesize;262144"
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})
DEMO_CLIP_NAMES = ("demo.mp4", "demo.avi")

SYNTHETIC_DEFAULT = (640, 480, 30.0)
IMAGES_DEFAULT_FPS = 15.0
IMAGES_SECONDS_PER_IMAGE = 2.0
MAX_FPS = 1000.0
MAX_SIDE = 16384

# Measuring a camera's real rate when it reports 0: frames after the first (which carries
# the start-up latency), for at most this long.
FPS_PROBE_FRAMES = 8
FPS_PROBE_SECONDS = 1.0

_SYNTHETIC_ARG = re.compile(r"(\d+)x(\d+)(?:@(\d+(?:\.\d+)?))?")
_WINDOWS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


@dataclass(frozen=True)
class Frame:
    index: int  # 0, 1, 2, ... per source (restarts never; keeps counting across loops/reconnects)
    image: np.ndarray  # BGR uint8 HxWx3, owned by the frame (never a buffer the source reuses)
    captured_at: float  # time.monotonic() when the frame became available
    wall_time: float  # time.time() at the same moment


@dataclass(frozen=True)
class SourceInfo:
    spec: str
    kind: str  # "camera" | "video" | "images" | "demo" | "synthetic"
    width: int
    height: int
    fps: float  # delivered (cameras: what the device really gives)
    frame_count: int | None
    description: str
    warnings: list[str] = field(default_factory=list)  # grows while an image slideshow finds bad files


class FrameSource(Protocol):
    info: SourceInfo

    def read(self) -> Frame | None: ...  # blocks until the next frame is due; None = ended

    def close(self) -> None: ...  # idempotent, quick


@dataclass(frozen=True)
class CameraInfo:
    index: int
    name: str | None  # None where the platform gives no name without extra packages
    width: int
    height: int

    @property
    def spec(self) -> str:
        return f"camera:{self.index}"


# --- spec parsing -------------------------------------------------------------------------


def parse_source_spec(spec: str) -> tuple[str, str]:
    """(kind, argument) for a source string; SourceError says what is wrong with a bad one."""
    text = spec.strip()
    if not text:
        raise SourceError(f"empty source; expected {SPEC_HELP}")
    kind, sep, arg = text.partition(":")
    kind = kind.lower()
    if not sep or _WINDOWS_DRIVE.match(text):
        return _parse_bare(text)
    if kind not in KINDS:
        if Path(text).exists():  # a file whose name contains a colon
            return _parse_bare(text)
        raise SourceError(f"unknown source kind {kind!r} in {spec!r}; expected {SPEC_HELP}")
    if kind == "camera":
        return kind, str(_camera_index(arg, spec))
    if kind in ("video", "images"):
        if not arg.strip():
            raise SourceError(f"{kind}: needs a path, e.g. {kind}:/path/to/file")
        return kind, arg
    if kind == "demo":
        raise SourceError(f"demo takes no argument: {spec!r}")
    if kind == "stream":
        return kind, _stream_url(arg)
    _parse_synthetic(arg, spec)  # synthetic: validate now, not when the thread opens it
    return kind, arg


def _parse_bare(text: str) -> tuple[str, str]:
    lowered = text.lower()
    if lowered in ("camera", "demo", "synthetic"):
        return lowered, "0" if lowered == "camera" else ""
    path = Path(text).expanduser()
    if path.is_dir() or path.suffix.lower() in IMAGE_SUFFIXES:
        return "images", text
    return "video", text


def _stream_url(arg: str) -> str:
    url = arg.strip()
    scheme, sep, rest = url.partition("://")
    if not sep or not rest:
        # The URL alone, as typed: the window's stream dialog never shows the internal "stream:" prefix.
        raise SourceError(f"stream: needs a URL such as rtsp://host/path or tcp://host:port, not {url!r}")
    if scheme.lower() not in STREAM_SCHEMES:
        raise SourceError(
            f"stream: protocol {scheme!r} is not a network stream; use one of {', '.join(STREAM_SCHEMES)}"
        )
    if any(ord(c) < 32 for c in url):
        raise SourceError(f"stream: the URL contains control characters: {url!r}")
    return url


def _camera_index(arg: str, spec: str) -> int:
    arg = arg.strip()
    if not arg.isdecimal() or len(arg) > 4:
        raise SourceError(f"camera index must be a number from 0 to 9999 (camera:0), not {spec!r}")
    return int(arg)


def _parse_synthetic(arg: str, spec: str) -> tuple[int | None, int | None, float | None]:
    """(width, height, fps) given in the spec; None where the spec leaves it to the options."""
    if not arg:
        return None, None, None
    match = _SYNTHETIC_ARG.fullmatch(arg.strip())
    if not match:
        raise SourceError(f"synthetic options must look like synthetic:640x480@30, not {spec!r}")
    width, height = int(match[1]), int(match[2])
    fps = float(match[3]) if match[3] else None
    _check_size(width, height, spec)
    if fps is not None:
        _check_fps(fps, spec)
    return width, height, fps


def _check_size(width: int, height: int, spec: str) -> None:
    if not (8 <= width <= MAX_SIDE and 8 <= height <= MAX_SIDE):
        raise SourceError(f"frame size {width}x{height} out of range (8..{MAX_SIDE} per side) in {spec!r}")


def _check_fps(fps: float, spec: str) -> None:
    if not (0 < fps <= MAX_FPS):
        raise SourceError(f"frame rate {fps:g} out of range (0..{MAX_FPS:g}] in {spec!r}")


# --- opening ------------------------------------------------------------------------------


def open_source(
    spec: str,
    *,
    pace: bool = True,
    loop: bool = True,
    width: int | None = None,
    height: int | None = None,
    fps: float | None = None,
) -> FrameSource:
    """Open the source a spec names. `width`/`height` are requests for cameras and the size of
    synthetic frames; `fps` is the request for cameras and the delivery rate for the others
    (a video's own rate when None). Raises SourceError with one line when it cannot open."""
    kind, arg = parse_source_spec(spec)
    if fps is not None:
        _check_fps(fps, spec)
    spec = spec.strip()
    if kind == "camera":
        return CameraSource(int(arg), spec=spec, width=width, height=height, fps=fps)
    if kind == "video":
        return VideoSource(Path(arg).expanduser(), spec=spec, pace=pace, loop=loop, fps=fps)
    if kind == "demo":
        return VideoSource(demo_clip_path(), spec=spec, kind="demo", pace=pace, loop=loop, fps=fps)
    if kind == "stream":
        return StreamSource(arg, spec=spec)
    if kind == "images":
        rate = fps or IMAGES_DEFAULT_FPS
        return ImageSource(Path(arg).expanduser(), spec=spec, fps=rate, pace=pace, loop=loop)
    w, h, f = _parse_synthetic(arg, spec)
    default_w, default_h, default_fps = SYNTHETIC_DEFAULT
    w, h = w or width or default_w, h or height or default_h
    _check_size(w, h, spec)
    return SyntheticSource(w, h, f or fps or default_fps, spec=spec, pace=pace)


def demo_clip_path() -> Path:
    folder = resource_dir("resources")
    for name in DEMO_CLIP_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise SourceError(f"demo clip not found in {folder} (build it with: python resources/make_demo_clip.py)")


# --- shared machinery ---------------------------------------------------------------------


class _Pacer:
    """Frame k is due at start + k/fps. Scheduling against the start keeps the rate exact over
    hours, where sleeping one period after each frame would drift by the decode time."""

    def __init__(self, fps: float, stop: threading.Event) -> None:
        self._period = 1.0 / fps
        self._stop = stop
        # Behind by more than this (slow decode, a suspended laptop): re-anchor rather than
        # deliver a burst of frames to catch up, as a camera would.
        self._max_lag = max(3 * self._period, 0.1)
        self._start: float | None = None
        self._n = 0

    def wait(self) -> bool:
        """Block until the next frame is due; False when the source was closed meanwhile."""
        now = time.monotonic()
        if self._start is None:
            self._start, self._n = now, 0
        due = self._start + self._n * self._period
        if due > now:
            if self._stop.wait(due - now):
                return False
        elif now - due > self._max_lag:
            self._start, self._n = now, 0
        self._n += 1
        return not self._stop.is_set()

    def reset(self) -> None:
        self._start = None


class _Source:
    """read()/close() protocol shared by all sources; subclasses produce images.

    The capture object is only touched under `_lock`. close() never waits for a read that is
    inside native code (a camera read can block for seconds): it sets `_closed`, and whoever
    holds the lock releases the capture on the way out.
    """

    info: SourceInfo

    def __init__(self, pace_fps: float | None) -> None:
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._index = 0
        self._ended = False
        self._pacer = _Pacer(pace_fps, self._closed) if pace_fps else None

    def read(self) -> Frame | None:
        if self._closed.is_set() or self._ended:
            return None
        with self._lock:
            try:
                image = None if self._closed.is_set() else self._next_image()
            finally:
                if self._closed.is_set():
                    self._release()
        if self._closed.is_set():
            return None
        if image is None:
            self._ended = True
            return None
        if self._pacer is not None and not self._pacer.wait():
            return None
        frame = Frame(self._index, image, time.monotonic(), time.time())
        self._index += 1
        return frame

    def close(self) -> None:
        self._closed.set()
        if self._lock.acquire(blocking=False):
            try:
                self._release()
            finally:
                self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_image(self) -> np.ndarray | None:
        """The next image (a fresh array), None at the end; may raise SourceLost."""
        raise NotImplementedError

    def _release(self) -> None:
        """Free native resources; called under the lock, possibly more than once."""


def _open_video_file(path: Path) -> cv2.VideoCapture:
    """A capture for a video file that decodes on the calling (capture) thread alone.

    FFmpeg's default is one decoding thread per core. Its helper threads then land on the
    core the inference thread is running on and take it from the model: with the demo clip
    and the int8 model here the inference thread waited 0.54 ms per inference for a CPU
    instead of 0.14, and the pipeline ran 164 instead of 178 inferences/s, while one thread
    decodes the clip as fast (2.30 against 2.35 ms a frame; docs/benchmarks.md)."""
    # FFmpeg explicitly: CAP_ANY would hand names like "img%03d.png" to the image-sequence reader.
    if cv2.videoio_registry.hasBackend(cv2.CAP_FFMPEG):
        return cv2.VideoCapture(str(path), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 1])
    return cv2.VideoCapture(str(path), cv2.CAP_ANY)  # another backend may refuse parameters it does not know


def _valid_fps(value: float) -> bool:
    return math.isfinite(value) and 0 < value <= MAX_FPS


def _open_capture(
    make: Callable[[], cv2.VideoCapture], what: str, *, not_opened: str, no_frame: str
) -> tuple[cv2.VideoCapture, np.ndarray]:
    """Open a capture (`make`) and decode its first frame: one that opens but decodes nothing is
    as unusable as one that does not open. OpenCV's and FFmpeg's complaints on fd 2 are logged
    at debug level, not shown. Raises SourceError(not_opened or no_frame)."""
    with capture_stderr() as native:
        cap = make()
        opened = cap.isOpened()
        ok, first = cap.read() if opened else (False, None)
    if native.text:
        log.debug("opening %s: %s", what, native.text.strip())
    if not ok or first is None:
        cap.release()
        raise SourceError(no_frame if opened else not_opened)
    return cap, as_bgr_uint8(first)


class _CaptureSource(_Source):
    """A source read through one cv2.VideoCapture (video file, camera, stream)."""

    _cap: cv2.VideoCapture | None = None  # a class default: VideoSource opens before super().__init__

    def _release(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


class _LiveCapture(_CaptureSource):
    """A camera or stream: paced by the device. A failed read is a loss; the next read tries to
    reopen it (SourceLost again, with the reason, while it stays away)."""

    def __init__(self) -> None:
        super().__init__(None)
        self._lost = False
        self._pending: np.ndarray | None = None  # read while opening; delivered first

    def _open(self) -> np.ndarray:
        """Open the device (setting `_cap`) and return its first frame; SourceError if it cannot."""
        raise NotImplementedError

    def _lost_message(self) -> str:
        raise NotImplementedError

    def _unavailable_message(self, exc: SourceError) -> str:
        return str(exc)

    def _next_image(self) -> np.ndarray | None:
        if self._pending is not None:
            image, self._pending = self._pending, None
            return image
        if self._lost:
            try:
                image = self._open()
            except SourceError as exc:
                raise SourceLost(self._unavailable_message(exc)) from None
            self._lost = False
            return image
        assert self._cap is not None
        ok, image = self._cap.read()
        if ok and image is not None:
            return as_bgr_uint8(image)
        self._release()
        self._lost = True
        raise SourceLost(self._lost_message())


# --- video files and the demo clip --------------------------------------------------------


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
    ) -> None:
        self._path = path
        self._loop = loop
        self._pending, file_fps, count = self._open()
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
            lambda: _open_video_file(path), str(path), not_opened=unreadable, no_frame=unreadable
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


# --- cameras ------------------------------------------------------------------------------


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


# --- network streams ----------------------------------------------------------------------


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


def list_cameras(max_index: int = 8) -> list[CameraInfo]:
    """Cameras that open, with their default resolution. Quick and silent when there are none."""
    found = []
    for index in _camera_candidates(max_index):
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


# --- still images -------------------------------------------------------------------------


class ImageSource(_Source):
    """One image or a folder of them as a slideshow: each image repeated at `fps` for
    `seconds_per_image`. Files are decoded when their turn comes (a folder can be large);
    files that cannot be read are skipped and listed in info.warnings."""

    def __init__(
        self,
        path: Path,
        *,
        spec: str,
        fps: float = IMAGES_DEFAULT_FPS,
        seconds_per_image: float = IMAGES_SECONDS_PER_IMAGE,
        pace: bool = True,
        loop: bool = True,
    ) -> None:
        super().__init__(fps if pace else None)
        self._loop = loop
        self._per_image = max(1, round(fps * seconds_per_image))
        warnings: list[str] = []
        self._playlist = _image_files(path, warnings)
        self._slot = -1
        self._current: np.ndarray | None = None
        self._current = self._advance(warnings, wrap=False)
        if self._current is None:
            if not path.is_dir():  # one file: its own error says why
                raise SourceError(warnings[-1].removeprefix("skipped: "))
            raise SourceError(f"no readable image in folder {path} ({len(warnings)} skipped)")
        self._repeats_left = self._per_image
        height, width = self._current.shape[:2]
        count = len(self._playlist)
        self.info = SourceInfo(
            spec=spec,
            kind="images",
            width=width,
            height=height,
            fps=fps,
            frame_count=count * self._per_image,
            description=f"images {path.name}: {count} image(s), {seconds_per_image:g} s each at {fps:g} fps",
            warnings=warnings,
        )

    def _next_image(self) -> np.ndarray | None:
        if self._repeats_left == 0:
            image = self._advance(self.info.warnings, wrap=self._loop)
            if image is None:
                if self._loop:  # every file failed since it was listed (deleted, replaced)
                    raise SourceLost(f"none of the images can be read any more: {self.info.description}")
                return None
            self._current, self._repeats_left = image, self._per_image
        self._repeats_left -= 1
        assert self._current is not None
        return self._current.copy()  # the frame owns its pixels; the slideshow keeps its copy

    def _advance(self, warnings: list[str], *, wrap: bool) -> np.ndarray | None:
        """Decode the next readable image after the current slot; unreadable ones leave the list.
        None at the end of the list (without `wrap`) or when no file is readable any more."""
        if len(self._playlist) == 1 and self._current is not None:
            return self._current if wrap else None  # one image: no need to decode it again
        while self._playlist:
            slot = self._slot + 1
            if slot >= len(self._playlist):
                if not wrap:
                    return None
                slot = 0
            try:
                image = read_image(self._playlist[slot])
            except ImageError as exc:
                warnings.append(f"skipped: {exc}")
                del self._playlist[slot]
                self._slot = slot - 1
                continue
            self._slot = slot
            return image
        return None


def _image_files(path: Path, warnings: list[str]) -> list[Path]:
    """The image files a path names, sorted naturally; junk is reported in `warnings`."""
    if not path.exists():
        raise SourceError(f"image path not found: {path}")
    if not path.is_dir():
        return [path]  # one file: read_image says what is wrong with it, if anything
    names = sorted(
        (p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")),
        key=_natural_key,
    )
    if not names:
        raise SourceError(f"no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in folder: {path}")
    files = []
    for name in names:
        if _looks_like_image(name):
            files.append(name)
        else:
            warnings.append(f"skipped: not an image (unknown format or empty): {name}")
    if not files:
        raise SourceError(f"no readable image in folder {path} ({len(names)} skipped)")
    return files


def _natural_key(path: Path) -> list[str | int]:
    """frame2 before frame10."""
    return [int(part) if part.isdigit() else part.casefold() for part in re.split(r"(\d+)", path.name)]


def _looks_like_image(path: Path) -> bool:
    """Magic numbers of the accepted formats: catches junk at open without decoding a whole folder."""
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except OSError:
        return False
    return (
        head.startswith(b"\xff\xd8\xff")
        or head.startswith(b"\x89PNG\r\n\x1a\n")
        or head.startswith(b"BM")
        or (head.startswith(b"RIFF") and head[8:12] == b"WEBP")
        or head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
    )


# --- synthetic frames ---------------------------------------------------------------------


class SyntheticSource(_Source):
    """Deterministic generated frames: a gradient that moves with the frame index and the index
    printed on it, so any two frames differ and frame N is the same in every run."""

    def __init__(self, width: int, height: int, fps: float, *, spec: str, pace: bool = True) -> None:
        super().__init__(fps if pace else None)
        self._xs = (np.arange(width) * 256 // width).astype(np.uint8)
        self._ys = (np.arange(height) * 256 // height).astype(np.uint8)
        diagonal = (np.add.outer(np.arange(height) / height, np.arange(width) / width) * 127).astype(np.uint8)
        self._diagonal = diagonal
        self._scale = max(0.4, height / 240)
        self.info = SourceInfo(
            spec=spec,
            kind="synthetic",
            width=width,
            height=height,
            fps=fps,
            frame_count=None,
            description=f"synthetic {width}x{height} @ {fps:g} fps" + ("" if pace else ", unpaced"),
        )

    def _next_image(self) -> np.ndarray:
        n = self._index
        image = np.empty((len(self._ys), len(self._xs), 3), np.uint8)
        image[..., 0] = self._xs[None, :] + np.uint8(3 * n % 256)  # uint8 arithmetic wraps: endless scroll
        image[..., 1] = self._ys[:, None] + np.uint8(2 * n % 256)
        image[..., 2] = self._diagonal
        thickness = max(1, round(2 * self._scale))
        origin = (round(10 * self._scale), round(40 * self._scale))
        cv2.putText(image, f"#{n}", origin, cv2.FONT_HERSHEY_SIMPLEX, self._scale, (255, 255, 255), thickness)
        return image
