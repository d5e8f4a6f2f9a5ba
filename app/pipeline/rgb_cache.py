"""Preprocessed frames, computed once per frame and shared by every worker that needs them."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from app.model.preprocess import Preprocessor
from app.sources import Frame


class RgbCache:
    """Preprocessed inputs per frame, computed once and reused.

    Stage 1 (crop, shrink, RGB) is keyed by frame and input size, so the sides of an A/B
    comparison share the very same pixels. The capture thread fills it as frames arrive
    (`prepare`), so preprocessing overlaps the previous inference instead of adding to the
    inference thread's cycle; the full input tensor is kept too for the model in use. Each
    entry carries the milliseconds it cost, so recorded preprocessing times stay complete.

    Frames that repeat a source's image (`Frame.content_id`: the synthetic cycle) are
    preprocessed once per image and model: the synthetic source exists so that nothing but the
    delegate bounds the rate, and on a fast GPU preprocessing every frame again (0.6 ms, 1.8 ms
    while LiteRT's Python wrapper held the GIL) held the pipeline to ~0.6 of the raw GPU loop. The
    reused entries keep what computing them cost, so preprocess figures still say what
    preprocessing a frame costs; `repeats_reused` counts the frames that skipped it.

    `computed_again` counts stage 1 done a second time for a frame whose pixels had already been
    dropped from the cache: the one way sharing can fail (a side more than `keep` frames behind).
    """

    def __init__(self, keep: int = 8, repeat_bytes: int = 64 * 1024 * 1024) -> None:
        self._lock = threading.Lock()
        self._rgb: dict[tuple[int, int, int], tuple[np.ndarray, float]] = {}
        self._tensors: dict[tuple[int, tuple[object, ...]], tuple[np.ndarray, float]] = {}  # (frame, Preprocessor.key)
        # Preprocessor.key -> content_id -> (rgb, rgb ms, tensor, total ms); least recently used key first.
        self._repeats: OrderedDict[tuple[object, ...], dict[int, tuple[np.ndarray, float, np.ndarray, float]]] = (
            OrderedDict()
        )
        self._repeat_bytes = repeat_bytes
        self._keep = keep
        self.computed = 0
        self.reused = 0
        self.computed_again = 0
        self._evicted: OrderedDict[tuple[int, int, int], None] = OrderedDict()  # the latest keys gone from _rgb
        self.repeats_reused = 0

    def peek(self, frame_index: int) -> np.ndarray | None:
        """The shared pixels of a recent frame (any input size), if still kept."""
        with self._lock:
            return next((v for (i, _, _), (v, _) in self._rgb.items() if i == frame_index), None)

    def prepare(self, frame: Frame, pre: Preprocessor) -> None:
        """Capture thread: stage 1 and 2 for `pre`'s model, ahead of the inference thread."""
        repeat = self._repeat(frame, pre)
        if repeat is not None:
            tensor, ms, _ = repeat
        else:
            tensor, ms = self._both_stages(frame, pre, out=np.empty_like(pre.output_buffer))
        # Left writeable on purpose: handed to one consumer only (tensor() pops it), and the
        # Interpreter's set_tensor copies a read-only array first, dropping the GIL for that
        # copy; taking it back cost the inference thread a sleep and a wake-up per inference.
        with self._lock:
            self._tensors[(frame.index, pre.key)] = (tensor, ms)
            _trim(self._tensors, self._keep)

    def tensor(self, frame: Frame, pre: Preprocessor) -> tuple[np.ndarray, float, bool]:
        """Inference thread: the input tensor, what it cost (ms), and whether it was prepared
        ahead (False: computed now, on the calling thread)."""
        with self._lock:
            hit = self._tensors.pop((frame.index, pre.key), None)
        if hit is not None:
            return (*hit, True)
        repeat = self._repeat(frame, pre)
        if repeat is not None:
            tensor, ms, computed_now = repeat
            return tensor, ms, not computed_now
        return (*self._both_stages(frame, pre), False)

    def _repeat(self, frame: Frame, pre: Preprocessor) -> tuple[np.ndarray, float, bool] | None:
        """The tensor of a repeated image (computed on first sight), whether it was computed now;
        None for a frame with its own pixels, or when the budget is spent."""
        if frame.content_id is None:
            return None
        looked_up = time.perf_counter()
        with self._lock:
            group = self._repeats.get(pre.key)
            entry = None if group is None else group.get(frame.content_id)
            if entry is not None:
                self._repeats.move_to_end(pre.key)
                self._rgb[(frame.index, pre.height, pre.width)] = entry[:2]  # for peek(): A/B thumbnails
                _trim(self._rgb, self._keep)
                self.repeats_reused += 1
                return entry[2], (time.perf_counter() - looked_up) * 1e3, False
        # Shared by every later frame with this image, so never written to: set_tensor and the GPU
        # buffer write only read it, and it stays writeable for the reason given in prepare().
        rgb, rgb_ms, tensor, ms = self._stages(frame, pre, out=np.empty_like(pre.output_buffer))
        with self._lock:
            group = self._repeats.setdefault(pre.key, {})
            self._repeats.move_to_end(pre.key)
            group.setdefault(frame.content_id, (rgb, rgb_ms, tensor, ms))
            while self._repeated_bytes() > self._repeat_bytes:
                if len(self._repeats) > 1:  # another model's images: the least recently used go
                    self._repeats.popitem(last=False)
                else:  # this model's alone exceed the budget: stop keeping more
                    group.pop(frame.content_id)
                    break
        return tensor, ms, True

    def _repeated_bytes(self) -> int:
        return sum(rgb.nbytes + tensor.nbytes for g in self._repeats.values() for rgb, _, tensor, _ in g.values())

    def _both_stages(self, frame: Frame, pre: Preprocessor, out: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        _, _, tensor, ms = self._stages(frame, pre, out)
        return tensor, ms

    def _stages(
        self, frame: Frame, pre: Preprocessor, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, float, np.ndarray, float]:
        """Stage 1's pixels and ms, then the tensor and the ms of both stages."""
        rgb, rgb_ms = self._stage1(frame, pre)
        started = time.perf_counter()
        tensor = pre.from_rgb(rgb, out=out)
        return rgb, rgb_ms, tensor, rgb_ms + (time.perf_counter() - started) * 1e3

    def _stage1(self, frame: Frame, pre: Preprocessor) -> tuple[np.ndarray, float]:
        key = (frame.index, pre.height, pre.width)
        with self._lock:
            cached = self._rgb.get(key)
            if cached is not None:
                self.reused += 1
                return cached
        started = time.perf_counter()
        rgb = pre.rgb(frame.image)  # outside the lock: the other side keeps running meanwhile
        rgb.setflags(write=False)
        entry = (rgb, (time.perf_counter() - started) * 1e3)
        with self._lock:
            cached = self._rgb.setdefault(key, entry)  # the other side may have raced us here
            if cached is entry:
                self.computed += 1
                if key in self._evicted:
                    del self._evicted[key]
                    self.computed_again += 1
                for gone in _trim(self._rgb, self._keep):
                    self._evicted[gone] = None
                _trim(self._evicted, 4 * self._keep)
            else:
                self.reused += 1
            return cached


def _trim(entries: dict[Any, Any], keep: int) -> list[Any]:
    """Drop the oldest entries beyond `keep`; their keys."""
    gone = []
    while len(entries) > keep:
        gone.append(next(iter(entries)))
        entries.pop(gone[-1])
    return gone
