"""Still images: one file or a folder of them, played as a slow slideshow."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from app.errors import ImageError, SourceError, SourceLost
from app.model.image_files import read_image
from app.sources.base import SourceInfo, _Source

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})
IMAGES_DEFAULT_FPS = 15.0
IMAGES_SECONDS_PER_IMAGE = 2.0


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
