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
Event). A source that stops delivering raises `SourceLost`; calling `read()` again on the
same object tries to recover (a camera or stream reopens itself, a looping video restarts
from its first frame) and frame indices keep counting. The source reopens itself; the
capture thread decides when to try again: it waits (back-off) and calls `read()` again,
so its retry needs no special case per kind. Live sources (`LIVE_KINDS`: cameras and
streams) are retried with back-off when lost; a file that fails mid-way fails the same
way again, so it ends instead.

This package's modules, by job: `spec` (parsing a source string, `open_source`), `base`
(Frame, SourceInfo, the read/close protocol, pacing), `capture` (what the OpenCV-read
sources share, self-reopening included), `video`, `camera`, `stream`, `images`, `synthetic`,
`replay` (frames captured once and replayed: the delegate sweep's input).
"""

from app.sources.base import MAX_FPS, Frame, FrameSource, SourceInfo
from app.sources.camera import CameraInfo, CameraSource, list_cameras
from app.sources.replay import CapturedFrames, ReplaySource, capture_frames
from app.sources.spec import (
    KINDS,
    LIVE_KINDS,
    SPEC_HELP,
    STREAM_SCHEMES,
    kind_of,
    open_source,
    parse_source_spec,
    reads_on_demand,
)
from app.sources.still_images import IMAGE_SUFFIXES, ImageSource
from app.sources.stream import STREAM_TIMEOUT_MS, StreamSource
from app.sources.synthetic import SyntheticSource
from app.sources.video import VideoSource, demo_clip_path

__all__ = [
    "IMAGE_SUFFIXES",
    "KINDS",
    "LIVE_KINDS",
    "MAX_FPS",
    "SPEC_HELP",
    "STREAM_SCHEMES",
    "STREAM_TIMEOUT_MS",
    "CameraInfo",
    "CameraSource",
    "CapturedFrames",
    "Frame",
    "FrameSource",
    "ImageSource",
    "ReplaySource",
    "SourceInfo",
    "StreamSource",
    "SyntheticSource",
    "VideoSource",
    "capture_frames",
    "demo_clip_path",
    "kind_of",
    "list_cameras",
    "open_source",
    "parse_source_spec",
    "reads_on_demand",
]
