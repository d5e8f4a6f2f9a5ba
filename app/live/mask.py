"""A segmentation result's overlay pixels, built off the GUI thread: the class map becomes
premultiplied ARGB pixels through a colour per class, with the box around its coloured part, resized
(nearest) to the size the window last drew the mask at. `MaskPreparer` does it on each side's results
thread as the result is published (LiveController's result callback), so the GUI thread only wraps
ready pixels in an image and blits them (app/ui/views/overlay.py); it does nothing until a window
enables it, so `bench`, `sweep` and any controller without a window never pay for it, and only once
the window has read the last one built: results come faster than a window paints (200 /s from a GPU
against a 60 Hz display), and a mask nobody draws is work the results thread has no time for. Built in the
paint, a new mask each paint cost the GUI thread 1.18 ms of CPU (p50) against 0.83 ms ready-built
(docs/performance-costs.md, "The window's paint with each task's overlay").

The palette lives here, Qt-free, for the mask and the legend alike (overlay.py turns it into QColors).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

import cv2
import numpy as np

from app.model.decode import TaskResult
from app.model.task import Task
from app.pipeline import Result

MASK_ALPHA = 140  # of 255: the class reads at a glance and the frame stays readable under it
# Class 0 is the background in every segmenter's convention here (DeepLab, PASCAL, one-channel masks).
BACKGROUND_CLASS = 0
LEGEND_BACKGROUND = (160, 160, 160)  # the background's legend colour (its mask is clear)

Box = tuple[int, int, int, int]  # x, y, width, height in mask pixels
# Masks kept per side: the window may paint a result after newer ones were published (it read the
# newest, then the results thread added another before the paint); one was not enough in a scripted
# window (tests/ui/test_window_tasks.py), the GUI thread then built that mask itself.
KEPT = 3


def _hsv_rgb(hue: float, saturation: float, value: float) -> tuple[int, int, int]:
    """RGB bytes of `QColor.fromHsvF(hue, saturation, value)`, Qt's steps included (hue kept in
    hundredths of a degree, the rest in 16 bits, 16 -> 8 bits rounded as `QColor.red()` does), so the
    palette is the one the window drew before it moved here (tests/ui/test_window_tasks.py checks all 256)."""
    hue_steps = int(hue * 36000 + 0.5)
    h = 0.0 if hue_steps == 36000 else hue_steps / 6000
    s, v = int(saturation * 65535 + 0.5) / 65535, int(value * 65535 + 0.5) / 65535
    sector, f = int(h), h - int(h)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    r, g, b = ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))[sector]
    out = []
    for c in (r, g, b):
        wide = int(c * 65535 + 0.5)
        out.append((wide + 128 - ((wide + 128) >> 8)) >> 8)
    return out[0], out[1], out[2]


def class_palette(n: int = 256) -> np.ndarray:
    """(n, 3) uint8 RGB: saturated hues a golden angle apart, so neighbouring class numbers differ
    (PASCAL VOC's own colour map is too dull to read through a translucent mask: person is 192,128,128)."""
    return np.array([_hsv_rgb((index * 0.618034) % 1.0, 0.85, 1.0) for index in range(n)], np.uint8).reshape(n, 3)


PALETTE = class_palette()


def legend_rgb(index: int) -> tuple[int, int, int]:
    """The legend's colour of a class: the mask's colour, opaque (the background: grey)."""
    if index == BACKGROUND_CLASS:
        return LEGEND_BACKGROUND
    r, g, b = (int(v) for v in PALETTE[index % len(PALETTE)])
    return r, g, b


def _mask_lut() -> np.ndarray:
    """(256, 4) uint8 in QImage's ARGB32_Premultiplied byte order (B, G, R, A in memory: a 32-bit
    0xAARRGGBB on a little-endian machine, which every platform the app ships for is)."""
    lut = np.zeros((256, 4), np.uint8)
    rgb = PALETTE.astype(np.uint16) * MASK_ALPHA // 255  # premultiplied
    lut[:, 0], lut[:, 1], lut[:, 2] = rgb[:, 2], rgb[:, 1], rgb[:, 0]
    lut[:, 3] = MASK_ALPHA
    lut[BACKGROUND_CLASS] = 0  # transparent: the frame shows through
    return lut


_LUT = _mask_lut().view(np.uint32).reshape(256)  # one 32-bit pixel per class: one gather per mask


def mask_pixels(class_map: np.ndarray) -> np.ndarray:
    """A class map (h, w) -> (h, w) uint32 premultiplied ARGB pixels through the lookup table (classes
    past 255 wrap, negative ones are transparent). 0.07-0.14 ms for DeepLab's 257x257 here, against 2.2 ms
    for an (h, w, 4) fancy index after a modulo (benchmarks/investigations/overlay_paint.py)."""
    classes = np.asarray(class_map)
    if classes.size and (int(classes.min()) < 0 or int(classes.max()) > 255):
        classes = np.where(classes < 0, 0, classes % 256)
    return np.ascontiguousarray(np.take(_LUT, classes))


def coloured_box(pixels: np.ndarray) -> Box | None:
    """The box around the pixels that are not transparent; None when all are. Only that part is drawn:
    Qt blends every pixel it draws, clear or not, so a frame with no object in it costs no mask."""
    opaque = pixels != 0
    rows, cols = np.flatnonzero(opaque.any(axis=1)), np.flatnonzero(opaque.any(axis=0))
    if not rows.size:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


def resize_pixels(pixels: np.ndarray, width: int, height: int) -> np.ndarray:
    """(height, width) uint32 pixels, nearest (the class map's blocks stay sharp): 0.11 ms for DeepLab's
    257x257 to 458x537 here, against 1.0 ms for QImage.scaled."""
    h, w = pixels.shape
    quad = pixels.view(np.uint8).reshape(h, w, 4)  # cv2 resizes 4 channels of bytes, not uint32
    big = cv2.resize(quad, (width, height), interpolation=cv2.INTER_NEAREST)
    return np.ascontiguousarray(big).view(np.uint32).reshape(height, width)


def has_mask(task: TaskResult | None) -> bool:
    """A segmentation result with a class map to draw."""
    return (
        task is not None
        and task.task == Task.SEGMENTATION
        and task.class_map is not None
        and task.class_map.ndim == 2
        and task.class_map.size > 0
    )


@dataclass(frozen=True)
class ClassMask:
    """One result's mask: its pixels at the model's resolution, the box of their coloured part, and,
    when the size it will be drawn at was known, the pixels at that size."""

    pixels: np.ndarray  # (h, w) uint32 premultiplied ARGB
    coloured: Box | None  # None: nothing to draw
    scaled: np.ndarray | None = None  # (height, width) uint32: `pixels` at the size last drawn at

    @classmethod
    def build(cls, class_map: np.ndarray, size: tuple[int, int] | None = None) -> ClassMask:
        """`size` (width, height): also resize to it (nothing to resize when nothing is coloured)."""
        pixels = mask_pixels(class_map)
        coloured = coloured_box(pixels)
        scaled = None
        if size is not None and coloured is not None and min(size) >= 1:
            scaled = resize_pixels(pixels, *size)
        return cls(pixels, coloured, scaled)


@dataclass(frozen=True)
class _Seen:
    result: Result
    mask: ClassMask | None  # None: not a segmentation result


class MaskPreparer:
    """Each side's newest result and its mask, built on that side's results thread (`add`, from the
    controller's result callback: never the inference thread) once a window `enable`s it; the window
    reads them on the GUI thread (`shown`, `mask_for`) and says the size it draws at (`draw_at`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._enabled = False  # a window shows masks: until then, results pass untouched
        self._sizes: dict[str, tuple[int, int]] = {}  # side -> (width, height) its mask was last drawn at
        self._seen: dict[str, deque[_Seen]] = {}  # side -> its newest results passed through `add`, oldest first
        self._read: dict[str, bool] = {}  # side -> the window took a mask since the last built (`mask_for`)
        self.built = 0  # masks built here (tests: once per result)
        self.skipped = 0  # results with a mask not built: the window had not read the last one yet

    def enable(self) -> None:
        self._enabled = True

    @property
    def enabled(self) -> bool:
        return self._enabled

    def reset(self) -> None:
        """A new pipeline (its frames and sessions numbered from 0 again): forget the old one's results."""
        with self._lock:
            self._seen.clear()
            self._read.clear()

    def draw_at(self, side: str, width: int, height: int) -> None:
        """The size the side's mask is drawn at now: later masks come resized to it."""
        with self._lock:
            self._sizes[side] = (width, height)

    def add(self, side: str, result: Result) -> None:
        """A side's new result (its results thread): its mask built, if it has one and the window read the
        last one built; else passed over (the window shows the last one built until it reads it)."""
        if not self._enabled:
            return
        mask = None
        if result.task is not None and result.task.class_map is not None and has_mask(result.task):
            with self._lock:
                size, wanted = self._sizes.get(side), self._read.get(side, True)
                self.skipped += not wanted
            if not wanted:
                return
            mask = ClassMask.build(result.task.class_map, size)
        with self._lock:
            self._seen.setdefault(side, deque(maxlen=KEPT)).append(_Seen(result, mask))
            self.built += mask is not None
            if mask is not None:
                self._read[side] = False

    def mask_for(self, side: str, task: TaskResult) -> ClassMask | None:
        """The mask built for this result (None: not built here, or no longer kept). The window's read, at
        its paint: the side's next result gets its mask built."""
        with self._lock:
            self._read[side] = True
            kept = list(self._seen.get(side, ()))
        return next((seen.mask for seen in reversed(kept) if seen.result.task is task), None)

    def shown(self, side: str, newest: Result | None) -> Result | None:
        """What the window shows of a side: `newest` once its mask is built, else the newest result whose mask
        is (the pipeline publishes a result just before its callback runs, and passes results over until
        the window has taken the last mask), None before a first."""
        if not self._enabled or newest is None or not has_mask(newest.task):
            return newest
        with self._lock:
            kept = self._seen.get(side)
            return kept[-1].result if kept else None
