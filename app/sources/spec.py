"""Source strings: parsing and checking one (`parse_source_spec`), and opening the source it
names (`open_source`). The grammar is in this package's docstring."""

from __future__ import annotations

import re
from pathlib import Path

from app.errors import SourceSpecError
from app.sources.base import MAX_FPS, FrameSource
from app.sources.camera import CameraSource
from app.sources.still_images import IMAGE_SUFFIXES, IMAGES_DEFAULT_FPS, ImageSource
from app.sources.stream import StreamSource
from app.sources.synthetic import SYNTHETIC_DEFAULT, SyntheticSource
from app.sources.video import VideoSource, demo_clip_path

KINDS = ("camera", "video", "images", "demo", "synthetic", "stream")
LIVE_KINDS = frozenset({"camera", "stream"})  # paced by the device, reconnected when lost
SPEC_HELP = "camera:N, video:PATH, images:PATH, stream:URL, demo or synthetic[:WxH@FPS]"
# Network protocols only: FFmpeg also knows "file:", "concat:", "subfile:", "pipe:"..., which
# would turn a stream spec into a way to read arbitrary local files or descriptors.
STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "http", "https", "tcp", "udp", "srt")
MAX_SIDE = 16384

_SYNTHETIC_ARG = re.compile(r"(\d+)x(\d+)(?:@(\d+(?:\.\d+)?))?")
_WINDOWS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def parse_source_spec(spec: str) -> tuple[str, str]:
    """(kind, argument) for a source string; SourceError says what is wrong with a bad one."""
    text = spec.strip()
    if not text:
        raise SourceSpecError(f"empty source; expected {SPEC_HELP}")
    kind, sep, arg = text.partition(":")
    kind = kind.lower()
    if not sep or _WINDOWS_DRIVE.match(text):
        return _parse_bare(text)
    if kind not in KINDS:
        if Path(text).exists():  # a file whose name contains a colon
            return _parse_bare(text)
        raise SourceSpecError(f"unknown source kind {kind!r} in {spec!r}; expected {SPEC_HELP}")
    if kind == "camera":
        return kind, str(_camera_index(arg, spec))
    if kind in ("video", "images"):
        if not arg.strip():
            raise SourceSpecError(f"{kind}: needs a path, e.g. {kind}:/path/to/file")
        return kind, arg
    if kind == "demo":
        raise SourceSpecError(f"demo takes no argument: {spec!r}")
    if kind == "stream":
        return kind, _stream_url(arg)
    _parse_synthetic(arg, spec)  # synthetic: validate now, not when the thread opens it
    return kind, arg


def kind_of(spec: str) -> str | None:
    """The kind of source a spec names; None for one that does not parse (opening it says why)."""
    try:
        return parse_source_spec(spec)[0]
    except SourceSpecError:
        return None


def reads_on_demand(kind: str, pace: bool) -> bool:
    """Whether frames are read as inference takes them (a file, a folder or the synthetic source, unpaced)
    rather than as the source delivers them: a camera or stream is paced by its device whatever `pace` says."""
    return not pace and kind not in LIVE_KINDS


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
        raise SourceSpecError(f"stream: needs a URL such as rtsp://host/path or tcp://host:port, not {url!r}")
    if scheme.lower() not in STREAM_SCHEMES:
        raise SourceSpecError(
            f"stream: protocol {scheme!r} is not a network stream; use one of {', '.join(STREAM_SCHEMES)}"
        )
    if any(ord(c) < 32 for c in url):
        raise SourceSpecError(f"stream: the URL contains control characters: {url!r}")
    return url


def _camera_index(arg: str, spec: str) -> int:
    arg = arg.strip()
    if not arg.isdecimal() or len(arg) > 4:
        raise SourceSpecError(f"camera index must be a number from 0 to 9999 (camera:0), not {spec!r}")
    return int(arg)


def _parse_synthetic(arg: str, spec: str) -> tuple[int | None, int | None, float | None]:
    """(width, height, fps) given in the spec; None where the spec leaves it to the options."""
    if not arg:
        return None, None, None
    match = _SYNTHETIC_ARG.fullmatch(arg.strip())
    if not match:
        raise SourceSpecError(f"synthetic options must look like synthetic:640x480@30, not {spec!r}")
    width, height = int(match[1]), int(match[2])
    fps = float(match[3]) if match[3] else None
    _check_size(width, height, spec)
    if fps is not None:
        _check_fps(fps, spec)
    return width, height, fps


def _check_size(width: int, height: int, spec: str) -> None:
    if not (8 <= width <= MAX_SIDE and 8 <= height <= MAX_SIDE):
        raise SourceSpecError(f"frame size {width}x{height} out of range (8..{MAX_SIDE} per side) in {spec!r}")


def _check_fps(fps: float, spec: str) -> None:
    if not (0 < fps <= MAX_FPS):
        raise SourceSpecError(f"frame rate {fps:g} out of range (0..{MAX_FPS:g}] in {spec!r}")


def open_source(
    spec: str,
    *,
    pace: bool = True,
    loop: bool = True,
    width: int | None = None,
    height: int | None = None,
    fps: float | None = None,
    decode_threads: int | None = None,
) -> FrameSource:
    """Open the source a spec names. `width`/`height` are requests for cameras and the size of
    synthetic frames; `fps` is the request for cameras and the delivery rate for the others
    (a video's own rate when None); `decode_threads` is FFmpeg's for video files (None: by the
    machine, `default_decode_threads`). Raises SourceError with one line when it cannot open."""
    kind, arg = parse_source_spec(spec)
    if fps is not None:
        _check_fps(fps, spec)
    spec = spec.strip()
    if kind == "camera":
        return CameraSource(int(arg), spec=spec, width=width, height=height, fps=fps)
    if kind == "video":
        return VideoSource(
            Path(arg).expanduser(), spec=spec, pace=pace, loop=loop, fps=fps, decode_threads=decode_threads
        )
    if kind == "demo":
        return VideoSource(
            demo_clip_path(), spec=spec, kind="demo", pace=pace, loop=loop, fps=fps, decode_threads=decode_threads
        )
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
