"""The segmentation overlay's pixels off the GUI thread (app/live/mask.py), headless: the pixels and the
box of a known class map, built once per result on the thread that adds it, and only once the window
read the last one, handed to the window only once built, resized to the size the window said; and a
controller without a window builds none."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from app.live.controller import LiveController
from app.live.mask import KEPT, MASK_ALPHA, PALETTE, ClassMask, MaskPreparer, legend_rgb
from app.metrics.window import InferenceTiming
from app.model.decode import TaskResult
from app.model.preprocess import CropBox
from app.model.task import Task
from app.pipeline import InferenceConfig, Result
from tests.helpers.wait import wait_until

DEEPLAB = "deeplabv3.tflite"


def _argb(cls: int) -> int:
    """The premultiplied 0xAARRGGBB pixel of a class, worked out here from the palette."""
    r, g, b = (int(v) * MASK_ALPHA // 255 for v in PALETTE[cls])
    return (MASK_ALPHA << 24) | (r << 16) | (g << 8) | b


def _segmentation(class_map: np.ndarray, frame_index: int = 0) -> Result:
    task = TaskResult(Task.SEGMENTATION, (), class_map=class_map, crop=CropBox(0, 0, 96, 128))
    timing = InferenceTiming(frame_index, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return Result(frame_index, 0.0, 0.0, [], np.empty(0, np.float32), timing, "seg", "0" * 12, "cpu", 1,
                  CropBox(0, 0, 96, 128), (96, 128), task)  # fmt: skip


def _block() -> np.ndarray:
    block = np.zeros((64, 48), np.int32)
    block[10:20, 5:9] = 3
    block[30, 40] = 300  # past 255: wraps to class 44, still coloured
    block[40, 1] = -2  # negative: transparent
    return block


def test_a_class_map_becomes_premultiplied_pixels_and_the_box_of_its_coloured_part():
    mask = ClassMask.build(_block())
    assert mask.pixels.dtype == np.uint32 and mask.pixels.shape == (64, 48)
    assert mask.pixels[0, 0] == 0 and mask.pixels[40, 1] == 0  # background and negative classes: clear
    assert mask.pixels[15, 6] == _argb(3) and mask.pixels[30, 40] == _argb(44)
    assert mask.coloured == (5, 10, 36, 21)  # x 5..40, y 10..30
    assert mask.scaled is None  # no size asked for
    # Bytes in memory B, G, R, A: what QImage's ARGB32_Premultiplied reads on a little-endian machine.
    b, g, r, a = mask.pixels[15:16, 6:7].view(np.uint8).reshape(4)
    assert a == MASK_ALPHA and (r, g, b) == tuple(int(v) * MASK_ALPHA // 255 for v in PALETTE[3])
    # The legend: the mask's colour opaque, the background grey.
    assert legend_rgb(3) == tuple(int(v) for v in PALETTE[3]) and legend_rgb(0) == (160, 160, 160)

    big = ClassMask.build(_block(), (96, 128))
    assert big.scaled is not None and big.scaled.shape == (128, 96)
    assert big.scaled[31, 13] == _argb(3) and big.scaled[0, 0] == 0  # nearest: each class pixel a 2x2 block
    nothing = ClassMask.build(np.zeros((64, 48), np.int32), (96, 128))
    assert nothing.coloured is None and nothing.scaled is None  # nothing coloured: nothing resized


def test_each_result_is_built_once_on_the_thread_that_adds_it_and_shown_only_once_built():
    prep = MaskPreparer()
    first, second = _segmentation(_block(), 1), _segmentation(_block(), 2)
    prep.add("a", first)
    assert prep.built == 0 and prep.shown("a", first) is first  # no window enabled it: results pass untouched

    prep.enable()
    assert prep.shown("a", first) is None  # its mask is not built: nothing to show yet
    builders: list[str] = []

    def results_thread() -> None:
        builders.append(threading.current_thread().name)
        prep.add("a", first)

    thread = threading.Thread(target=results_thread, name="results")
    thread.start()
    thread.join()
    assert prep.built == 1 and builders == ["results"]
    assert prep.shown("a", first) is first
    mask = prep.mask_for("a", first.task)
    assert mask is not None and mask.pixels[15, 6] == _argb(3) and mask.scaled is None
    assert prep.mask_for("b", first.task) is None and prep.mask_for("a", second.task) is None

    # A newer result published before its mask is built: the window keeps showing the one before.
    assert prep.shown("a", second) is first
    prep.draw_at("a", 96, 128)  # the window drew side A's mask at 96x128
    prep.add("a", second)
    assert prep.built == 2 and prep.shown("a", second) is second
    scaled = prep.mask_for("a", second.task).scaled
    assert scaled is not None and scaled.shape == (128, 96)
    assert prep.mask_for("a", first.task) is mask  # still kept: the window may paint it after newer ones came
    for n in range(KEPT):
        prep.mask_for("a", second.task)  # the window took a mask: the next is built
        prep.add("a", _segmentation(_block(), 3 + n))
    assert prep.mask_for("a", first.task) is None and prep.mask_for("a", second.task) is None  # KEPT only

    prep.reset()  # a new pipeline
    assert prep.shown("a", second) is None and prep.mask_for("a", second.task) is None


def test_a_mask_is_built_only_once_the_window_read_the_last_one():
    prep = MaskPreparer()
    prep.enable()
    results = [_segmentation(_block(), n) for n in range(5)]
    prep.add("a", results[0])  # nothing built yet: built
    prep.add("a", results[1])  # the window never read the first: passed over
    prep.add("a", results[2])
    assert (prep.built, prep.skipped) == (1, 2)
    assert prep.shown("a", results[2]) is results[0]  # the last built, until the window takes it
    assert prep.mask_for("a", results[0].task) is not None  # the window paints it: the next is built
    prep.add("a", results[3])
    prep.add("a", results[4])
    assert (prep.built, prep.skipped) == (2, 3)
    assert prep.shown("a", results[4]) is results[3] and prep.mask_for("a", results[3].task) is not None
    prep.add("b", results[4])  # each side reads its own
    assert prep.built == 3


@pytest.mark.timeout(120)
def test_the_controller_builds_masks_on_its_results_thread_only_for_a_window(vision, coral):
    photo = f"images:{coral / 'grace_hopper.bmp'}"
    config = InferenceConfig(model=str(vision / DEEPLAB), options={"threads": 1})
    bench_like = LiveController(photo, config)  # no window: nothing enables the masks
    bench_like.start()
    try:
        assert wait_until(lambda: bench_like.snapshot().inferences_total >= 2, 60)
    finally:
        bench_like.stop()
    assert bench_like.masks.built == 0

    live = LiveController(photo, config)
    live.masks.enable()  # what the window's VideoView.take_masks_from does
    live.start()
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        # Every result the controller hands out has its mask built, whenever it is read (polled as the
        # window's display timer does).
        while len(seen) < 3 and time.monotonic() < deadline:
            result = live.latest_result()
            if result is not None:
                assert live.masks.mask_for("a", result.task) is not None
                seen.add(result.frame_index)
            time.sleep(0.002)
        assert len(seen) == 3
    finally:
        live.stop()
    assert live.masks.built >= 3
