"""Frame -> input tensor: centre crop to the model's aspect (classifiers) or the whole frame, resize,
normalise, quantize.

One Preprocessor per model, reused for every frame: the output buffers are
allocated once and normalisation is a lookup table (figures against the naive
PIL/numpy path: docs/performance.md). The same code serves `classify`, the live pipeline and the
benchmarks, so their numbers describe the same work.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import cv2
import numpy as np

from app.model.segmentation import foreground
from app.model.spec import ModelSpec
from app.model.task import SegmentationLayout


@dataclass(frozen=True)
class CropBox:
    """Region of the frame the model sees, in frame pixels."""

    x: int
    y: int
    width: int
    height: int


def centre_crop_box(frame_width: int, frame_height: int, aspect: float) -> CropBox:
    """Largest centred box with width/height == aspect."""
    if frame_width / frame_height > aspect:
        w, h = max(1, round(frame_height * aspect)), frame_height
    else:
        w, h = frame_width, max(1, round(frame_width / aspect))
    return CropBox((frame_width - w) // 2, (frame_height - h) // 2, w, h)


def letterbox_box(frame_width: int, frame_height: int, aspect: float) -> CropBox:
    """Smallest centred box with width/height == aspect holding the whole frame: its offsets are negative
    where it reaches past the frame (the black bars a letterbox adds)."""
    if frame_width / frame_height > aspect:
        w, h = frame_width, max(1, round(frame_width / aspect))
    else:
        w, h = max(1, round(frame_height * aspect)), frame_height
    return CropBox(-((w - frame_width) // 2), -((h - frame_height) // 2), w, h)


def as_bgr_uint8(frame: np.ndarray) -> np.ndarray:
    """Accept grey, BGR, BGRA and 16-bit frames; anything else is a ValueError."""
    if frame.dtype == np.uint16:
        frame = (frame >> 8).astype(np.uint8)
    if frame.dtype != np.uint8:
        raise ValueError(f"unsupported frame dtype {frame.dtype}; expected 8-bit images")
    if frame.ndim == 2:
        return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    if frame.ndim == 3 and frame.shape[2] == 3:
        return frame
    if frame.ndim == 3 and frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)
    if frame.ndim == 3 and frame.shape[2] == 1:
        return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    raise ValueError(f"unsupported frame shape {frame.shape}; expected HxW, HxWx3 or HxWx4")


def shrink(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize with area averaging when shrinking, bilinear when enlarging.

    cv2.INTER_AREA at ratios that are not whole runs a generic path: 720 -> 224 costs 2.9 ms on two cores,
    1280x720 -> 512x512 (2.5 and 1.41) 4.3 ms, and 7.7 ms on one thread of a 16-core host, which OpenCV
    splits into at most 4 stripes however many cores. Bilinear to twice the target (an enlargement on an
    axis shrunk less than 2x) and then INTER_AREA's whole x2 path costs 0.7 and 1.7 ms and differs from it
    by 0.28 and 0.22 grey levels on average (benchmarks/suite/preprocess.py). It is taken wherever an
    axis shrinks more than 2x, whole ratios too: there INTER_AREA reads every pixel of the frame (1280x720 to
    a face detector's 128x72 letterbox: 0.75 ms against 0.21; to 16x16: 1.25 against 0.02). A smaller image (a photo
    of 300-500 px to 224) keeps INTER_AREA, exact. Plain bilinear would alias.
    """
    h, w = image.shape[:2]
    if w <= width or h <= height:
        return cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR)
    if w > 2 * width or h > 2 * height:
        image = cv2.resize(image, (2 * width, 2 * height), interpolation=cv2.INTER_LINEAR)
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)


_CONVERSIONS = {3: cv2.COLOR_BGR2RGB, 1: cv2.COLOR_BGR2GRAY, 4: cv2.COLOR_BGR2RGBA}


class Preprocessor:
    """Turns BGR uint8 frames into the model's image input (1, H, W, C) of its dtype: C = 3 (RGB), 1 (grey,
    BT.601 luma as OpenCV computes it) or 4 (RGB and an opaque alpha of 255, normalised like the others; for a
    segmenter that takes its previous mask there, an empty mask: `PreviousMask` puts the last one in)."""

    def __init__(self, spec: ModelSpec) -> None:
        self.height, self.width = spec.input_height, spec.input_width
        self.dtype = spec.input_dtype
        self.channels = spec.channels
        self.crops = spec.crops  # classification: centre crop; other tasks: the whole frame, resized
        self.letterboxes = spec.letterboxes  # ... or scaled to fit, aspect kept, in black bars (MediaPipe's)
        self._lut = self.lookup_table(spec)
        if spec.previous_mask:  # every alpha read as 0: the tensor (cached, shared) carries an empty mask
            self._lut[0, :, 3] = self._lut[0, 0, 3]
        shape = (self.height, self.width, self.channels) if self.channels != 1 else (self.height, self.width)
        self._rgb = np.empty(shape, np.uint8)
        self._out = np.empty((1, self.height, self.width, self.channels), self.dtype)
        self._key = (self.height, self.width, str(self.dtype), self.channels, self.crops, self.letterboxes,
                     hashlib.sha1(self._lut.tobytes()).hexdigest())  # fmt: skip

    @staticmethod
    def lookup_table(spec: ModelSpec) -> np.ndarray:
        """Pixel value -> model input value per channel: normalisation and quantization
        (round, clip) folded into one 256-entry table, applied by cv2.LUT in ~0.2 ms."""
        inp, norm, dtype = spec.input, spec.normalization, spec.input_dtype
        channels = spec.channels
        mean = np.asarray(norm.mean)[[0, 1, 2, 0][:channels] if channels != 3 else [0, 1, 2]]
        std = np.asarray(norm.std)[[0, 1, 2, 0][:channels] if channels != 3 else [0, 1, 2]]
        x = np.arange(256, dtype=np.float64)[:, None].repeat(channels, axis=1)
        if norm.raw:
            values = x - 128.0 if dtype == np.int8 else x
        else:
            values = (x - mean) / std
            if dtype != np.float32:
                assert inp.scale is not None and inp.zero_point is not None
                info = np.iinfo(dtype)
                values = np.clip(np.rint(values / inp.scale + inp.zero_point), info.min, info.max)
        return values.astype(dtype).reshape(1, 256, channels)

    def crop_box(self, frame_width: int, frame_height: int) -> CropBox:
        if self.letterboxes:
            return letterbox_box(frame_width, frame_height, self.width / self.height)
        if not self.crops:
            return CropBox(0, 0, frame_width, frame_height)
        return centre_crop_box(frame_width, frame_height, self.width / self.height)

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        """Return the input tensor. The buffer is reused: copy it to keep it past the next call."""
        return self.from_rgb(self.rgb(frame, self._rgb))

    def rgb(self, frame: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Stage 1, the costly part: centre crop, shrink to the input size, BGR -> RGB (uint8).
        Two models with the same input size share this stage (A/B comparison)."""
        bgr = as_bgr_uint8(frame)
        box = self.crop_box(bgr.shape[1], bgr.shape[0])
        if self.letterboxes:
            return cv2.cvtColor(self._letterboxed(bgr, box), _CONVERSIONS[self.channels], dst=out)
        crop = bgr[box.y : box.y + box.height, box.x : box.x + box.width]
        return cv2.cvtColor(shrink(crop, self.width, self.height), _CONVERSIONS[self.channels], dst=out)

    def _letterboxed(self, bgr: np.ndarray, box: CropBox) -> np.ndarray:
        """The frame shrunk into its share of the input, black around it (`box` reaches past the frame)."""
        h, w = bgr.shape[:2]
        sx, sy = self.width / box.width, self.height / box.height
        left, top = round(-box.x * sx), round(-box.y * sy)
        inner_w, inner_h = max(1, min(self.width - left, round(w * sx))), max(1, min(self.height - top, round(h * sy)))
        canvas = np.zeros((self.height, self.width, 3), np.uint8)
        canvas[top : top + inner_h, left : left + inner_w] = shrink(bgr, inner_w, inner_h)
        return canvas

    def from_rgb(self, rgb: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Stage 2: normalisation and quantization for this model (one table lookup), into
        this preprocessor's reused buffer unless `out` (same shape and dtype) is given."""
        out = self._out if out is None else out
        if self.channels == 1:  # OpenCV drops a single channel's axis: look up into the 2-D view
            cv2.LUT(rgb, self._lut, dst=out[0, :, :, 0])
        else:
            cv2.LUT(rgb, self._lut, dst=out[0])
        return out

    @property
    def output_buffer(self) -> np.ndarray:
        return self._out

    @property
    def key(self) -> tuple:
        """Names this model's preprocessing (size, dtype, table): equal keys give equal tensors."""
        return self._key


class PreviousMask:
    """The 4th channel of a segmenter that takes its previous result's mask there, as MediaPipe's hair
    segmentation does (app/model/task.py says how it is recognised, and the evidence says so): the last
    output's probability of not being class 0 (`segmentation.foreground`), resized to the input and
    normalised as a pixel of that value (`Preprocessor.lookup_table`'s 4th column); empty (the
    Preprocessor's own tensor) until an output is remembered. One per session, so a switch starts empty.

    Applied on the inference thread right before each run, to a copy: the tensor it is given may be cached
    and shared by every frame of that picture (RgbCache), so it must never carry a mask. Its cost (medians
    of 1.1 to 1.6 ms for a 512x512x4 float input and 512x512x2 logits on the loaded 2-core machine, about
    half of it the mask: benchmarks/suite/previous_mask.py) is counted as the frame's preprocessing."""

    def __init__(self, spec: ModelSpec) -> None:
        layout = spec.task.layout
        assert isinstance(layout, SegmentationLayout) and spec.channels == 4
        self._layout = layout
        out = spec.outputs[layout.output]
        self._scale, self._zero_point = out.scale, out.zero_point
        self._size = (spec.input_width, spec.input_height)
        self._table = np.ascontiguousarray(Preprocessor.lookup_table(spec)[:, :, 3])  # (1, 256): pixel -> input
        self._out = np.empty((1, spec.input_height, spec.input_width, 4), spec.input_dtype)
        self._last: np.ndarray | None = None

    @property
    def empty(self) -> bool:
        """No output remembered: the next frame is fed an empty mask."""
        return self._last is None

    def remember(self, outputs: tuple[np.ndarray, ...] | list[np.ndarray]) -> None:
        """After a run: its outputs (read, never written; the mask is made from them before the next run)."""
        self._last = outputs[self._layout.output]

    def mask(self) -> np.ndarray | None:
        """The remembered output's mask at the input's size, (H, W) uint8 (255 = certain); None when empty."""
        if self._last is None:
            return None
        layout = self._layout
        mask = foreground(self._last, layout.class_map, layout.probabilities, self._scale, self._zero_point)
        if (mask.shape[1], mask.shape[0]) != self._size:
            mask = cv2.resize(mask, self._size, interpolation=cv2.INTER_LINEAR)
        return mask

    def fed(self, tensor: np.ndarray) -> np.ndarray:
        """The input to run: `tensor` itself while empty, else a copy in this object's buffer (reused: valid
        until the next call) with the last mask as its 4th channel."""
        mask = self.mask()
        if mask is None:
            return tensor
        np.copyto(self._out, tensor)
        self._out[0, :, :, 3] = cv2.LUT(mask, self._table)
        return self._out
