"""Build resources/demo.mp4: the clip the `demo` source plays.

20 s at 30 fps, 1280x720, MPEG-4 Part 2 (`mp4v`, the MP4 encoder every opencv-python wheel
has) at 1.2 Mbit/s. Slow pans and zooms over five public-domain / CC0 photos with short
cross-fades, so a classifier's live labels change over time (EfficientNet-Lite0: espresso,
military uniform, Egyptian Mau / tabby, missile, ...). The timeline is circular: the last
cross-fade leads into the first photo, so the clip loops without a jump.

The photos come from the wheels of scikit-image and matplotlib (the `convert` extra); see
resources/README.md for their licences. Deterministic: the same package versions give the
same bytes.

    python resources/make_demo_clip.py            # writes resources/demo.mp4
    python resources/make_demo_clip.py --out DIR
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

WIDTH, HEIGHT, FPS = 1280, 720, 30
SECONDS_PER_PHOTO = 4.0
FADE_SECONDS = 0.6
BITRATE = 1_200_000  # bit/s: ~3 MB for 20 s, and the soft, upscaled photos still look clean
KEY_INTERVAL = 60  # frames between key frames: longer groups spend fewer bits on key frames
DEMO_NAMES = ("demo.mp4", "demo.avi")  # what app/sources.py looks for, in this order
SKIMAGE_PHOTOS = ("coffee", "chelsea", "rocket", "astronaut")


@dataclass(frozen=True)
class View:
    """A 16:9 window on the photo: its centre and its height, in photo pixels."""

    cx: float
    cy: float
    height: float


@dataclass(frozen=True)
class Shot:
    name: str
    start: View
    end: View


# Order and camera moves, chosen by eye on each photo. The model sees the frame's centre
# square, i.e. a `height`-sized square of the photo around the view's centre.
SHOTS = (
    Shot("coffee", View(300, 200, 400), View(290, 185, 290)),
    Shot("grace_hopper", View(256, 300, 600), View(256, 330, 540)),
    Shot("chelsea", View(210, 150, 300), View(245, 150, 230)),
    Shot("rocket", View(320, 220, 360), View(320, 213, 427)),
    Shot("astronaut", View(256, 256, 512), View(235, 190, 340)),
)


def load_photos() -> dict[str, np.ndarray]:
    """The photos as BGR uint8, straight from the packages that ship them."""
    import skimage.data
    from matplotlib import cbook

    photos = {name: np.ascontiguousarray(getattr(skimage.data, name)()[..., ::-1]) for name in SKIMAGE_PHOTOS}
    grace = cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)
    photos["grace_hopper"] = cv2.imdecode(np.fromfile(grace, np.uint8), cv2.IMREAD_COLOR)
    return photos


def smoothstep(u: float) -> float:
    u = min(1.0, max(0.0, u))
    return u * u * (3 - 2 * u)


def backdrop(photo: np.ndarray) -> np.ndarray:
    """The photo scaled to cover the frame, blurred and dimmed: fills the sides of views wider
    than the photo (portrait photos, wide zooms) instead of black bars."""
    h, w = photo.shape[:2]
    scale = max(WIDTH / w, HEIGHT / h)
    big = cv2.resize(photo, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_LINEAR)
    y, x = (big.shape[0] - HEIGHT) // 2, (big.shape[1] - WIDTH) // 2
    cover = big[y : y + HEIGHT, x : x + WIDTH]
    return (cv2.GaussianBlur(cover, (0, 0), 25).astype(np.float32) * 0.45).astype(np.float32)


def render_view(photo: np.ndarray, back: np.ndarray, view: View) -> np.ndarray:
    """The frame a camera pointed at `view` sees (float32 BGR)."""
    s = HEIGHT / view.height
    m = np.float32([[s, 0, WIDTH / 2 - view.cx * s], [0, s, HEIGHT / 2 - view.cy * s]])
    size = (WIDTH, HEIGHT)
    fg = cv2.warpAffine(photo, m, size, flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_CONSTANT).astype(np.float32)
    ones = np.ones(photo.shape[:2], np.float32)
    mask = cv2.warpAffine(ones, m, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)[..., None]
    return fg * mask + back * (1 - mask)


def lerp_view(a: View, b: View, u: float) -> View:
    # Zoom geometrically (constant apparent speed), move linearly.
    return View(a.cx + (b.cx - a.cx) * u, a.cy + (b.cy - a.cy) * u, a.height * (b.height / a.height) ** u)


def render_frame(i: int, photos: dict[str, np.ndarray], backs: dict[str, np.ndarray]) -> np.ndarray:
    total = SECONDS_PER_PHOTO * len(SHOTS)
    # Offset by half a fade so frame 0 shows the first photo alone, not mid-fade.
    t = i / FPS + FADE_SECONDS / 2
    window = SECONDS_PER_PHOTO + FADE_SECONDS
    out = np.zeros((HEIGHT, WIDTH, 3), np.float32)
    for k, shot in enumerate(SHOTS):
        local = (t - (k * SECONDS_PER_PHOTO - FADE_SECONDS / 2)) % total  # circular: the end fades into the start
        if local >= window:
            continue
        weight = min(1.0, local / FADE_SECONDS, (window - local) / FADE_SECONDS)
        view = lerp_view(shot.start, shot.end, smoothstep(local / window))
        out += weight * render_view(photos[shot.name], backs[shot.name], view)
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def open_writer(out_dir: Path) -> tuple[cv2.VideoWriter, Path]:
    """MP4 (mp4v) where the wheel can write it, else AVI (MJPG), which every build has."""
    params = [cv2.VIDEOWRITER_PROP_BITRATE, BITRATE, cv2.VIDEOWRITER_PROP_KEY_INTERVAL, KEY_INTERVAL]
    for name, fourcc in (("demo.mp4", "mp4v"), ("demo.avi", "MJPG")):
        path = out_dir / name
        writer = cv2.VideoWriter(
            str(path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*fourcc), FPS, (WIDTH, HEIGHT), params
        )
        if writer.isOpened():
            return writer, path
        writer.release()
    raise SystemExit("OpenCV can write neither MP4 (mp4v) nor AVI (MJPG) here")


def build(out_dir: Path) -> Path:
    photos = load_photos()
    backs = {name: backdrop(photo) for name, photo in photos.items()}
    frames = round(SECONDS_PER_PHOTO * len(SHOTS) * FPS)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in DEMO_NAMES:  # the app plays the first it finds: never leave an old one behind
        (out_dir / stale).unlink(missing_ok=True)
    writer, path = open_writer(out_dir)
    try:
        for i in range(frames):
            writer.write(render_frame(i, photos, backs))
    finally:
        writer.release()
    check(path, frames)
    return path


def check(path: Path, frames: int) -> None:
    """Read the file back: a clip that does not decode must not be committed."""
    cap = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG)
    try:
        size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        count, fps = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), cap.get(cv2.CAP_PROP_FPS)
        decoded = 0
        while cap.read()[0]:
            decoded += 1
    finally:
        cap.release()
    if size != (WIDTH, HEIGHT) or count != frames or decoded != frames or abs(fps - FPS) > 0.01:
        raise SystemExit(f"{path} reads back wrong: {size}, {count} frames ({decoded} decoded), {fps} fps")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder")
    args = parser.parse_args(argv)
    path = build(args.out)
    data = path.read_bytes()
    print(f"{path}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
