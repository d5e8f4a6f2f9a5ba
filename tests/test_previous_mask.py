"""A segmenter fed its previous mask in the 4th channel of its image input, as MediaPipe's hair segmentation
takes it (app/model/task.py recognises it, app/model/preprocess.py PreviousMask makes the channel, the
inference thread feeds it: app/pipeline/engines.py), through the live pipeline, A/B, bench and predict on
real models and the real LiteRT runtime.

The models answer what their 4th channel carried (tests/builders/any_models.py `rgba_segmenter` says how):
`carry` keeps class 1 wherever the picture is red or the mask fed was, `toggle` flips its whole map from one
inference to the next when fed its own. A black frame after a red-left one then shows, through `carry`, the
mask of the frame before; and the first frame's right half (black, class 0) shows its mask was empty, where
an opaque alpha would have made it class 1."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.pipeline import InferenceConfig, Pipeline, Result
from app.pipeline.compare import ComparePipeline
from app.pipeline.plan import FeedPlan
from app.sources import CapturedFrames, SourceInfo
from tests.builders.any_models import rgba_segmenter
from tests.helpers.cli import run_cli
from tests.helpers.wait import wait_until

SIDE = 64  # the `carry` and `toggle` models' input; their map is 32x32


def _red_left(side: int = SIDE) -> np.ndarray:
    image = np.zeros((side, side, 3), np.uint8)
    image[:, : side // 2, 2] = 255  # BGR: red on the left half
    return image


def _frames(*images: np.ndarray) -> CapturedFrames:
    h, w = images[0].shape[:2]
    info = SourceInfo("frames", "replay", w, h, 0.0, len(images), "frames made by the test")
    return CapturedFrames("frames", tuple(images), info)


def _class_map(r: Result) -> np.ndarray:
    assert r.task is not None and r.task.class_map is not None
    return r.task.class_map


def _left_only(class_map: np.ndarray) -> bool:
    half = class_map.shape[1] // 2
    return bool(class_map[:, :half].all() and not class_map[:, half:].any())


def _run_to_the_end(feed: FeedPlan, config: InferenceConfig) -> list[Result]:
    results: list[Result] = []
    p = Pipeline(feed, config, on_result=results.append)
    p.start()
    try:
        assert wait_until(p.finished, 60), p.status()
    finally:
        assert p.stop(timeout=10)
    assert p.status().exit_code in (None, 0), p.status()
    return results


def test_frame_two_is_fed_frame_one_s_mask_and_frame_one_an_empty_one(tmp_path: Path):
    """Through the pipeline on a 16x16 model (8x8 out: the mask is resized)."""
    model = tmp_path / "rgba_segmenter.tflite"
    model.write_bytes(rgba_segmenter(16, 8))
    black = np.zeros((16, 16, 3), np.uint8)
    results = _run_to_the_end(FeedPlan(_frames(_red_left(16), black, black), pace=False, loop=False),
                              InferenceConfig(model=model, options={"threads": 1}))  # fmt: skip
    assert [r.frame_index for r in results] == [0, 1, 2]
    maps = [_class_map(r) for r in results]
    assert all(_left_only(m) for m in maps), [m.mean() for m in maps]  # the black frames: the mask alone


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FOLDER/carry.tflite and FOLDER/toggle.tflite (tests/builders/any_models.py `rgba_segmenter`)."""
    folder = tmp_path_factory.mktemp("previous_mask")
    (folder / "carry.tflite").write_bytes(rgba_segmenter(SIDE, SIDE // 2))
    (folder / "toggle.tflite").write_bytes(rgba_segmenter(SIDE, SIDE // 2, toggle=True))
    return folder


def test_the_pipeline_feeds_each_frame_the_last_frame_s_mask(models: Path):
    black = np.zeros((SIDE, SIDE, 3), np.uint8)
    feed = FeedPlan(_frames(_red_left(), black, black), pace=False, loop=False)
    results = _run_to_the_end(feed, InferenceConfig(model=models / "carry.tflite", options={"threads": 1}))
    assert [r.frame_index for r in results] == [0, 1, 2]
    maps = [_class_map(r) for r in results]
    # Frame 0: class 1 on the red half only, so its mask was empty (an opaque alpha: class 1 everywhere);
    # frames 1 and 2 are black: class 1 on the left only through the mask of the frame before.
    assert all(m.shape == (32, 32) and _left_only(m) for m in maps), [m.mean() for m in maps]
    assert all(r.timing.preprocess_ms > 0 for r in results)  # the mask's cost is the frame's preprocessing


def test_a_switch_starts_again_from_an_empty_mask(models: Path):
    """After a switch (the same model on 2 threads: a new session), the first black frame has no mask to
    carry: class 0 everywhere, where the running session carried the red frame's left half."""
    images = [_red_left()] + [np.zeros((SIDE, SIDE, 3), np.uint8)] * 40
    results: list[Result] = []
    p = Pipeline(FeedPlan(_frames(*images), pace=False), InferenceConfig(model=models / "carry.tflite",
                 options={"threads": 1}, throttle_ms=5), on_result=results.append)  # fmt: skip
    p.start()
    try:
        assert wait_until(lambda: len(results) >= 5, 60), p.status()
        first = results[0].session_id
        p.reconfigure(options={"threads": 2})
        assert wait_until(lambda: any(r.session_id != first for r in results), 60), p.status()
        time.sleep(0.2)
    finally:
        assert p.stop(timeout=10)
    before = [r for r in results if r.session_id == first]
    after = [r for r in results if r.session_id != first]
    assert all(_left_only(_class_map(r)) for r in before)  # the red frame's half, carried all along
    opening = after[0]
    if opening.frame_index % len(images) == 0:  # the new session began on the red frame: its half only
        assert _left_only(_class_map(opening))
    else:
        assert not _class_map(opening).any(), (opening.frame_index, _class_map(opening).mean())


def test_each_side_of_an_ab_comparison_feeds_its_own_mask(models: Path):
    """Side A (`carry`) and side B (`toggle`) share the preprocessed frames (one input size and range): each
    is fed its own last mask, never the other's, nor one left in the shared tensor."""
    black = np.zeros((SIDE, SIDE, 3), np.uint8)
    seen: dict[str, list[Result]] = {"a": [], "b": []}
    a = InferenceConfig(model=models / "carry.tflite", options={"threads": 1})
    b = InferenceConfig(model=models / "toggle.tflite", options={"threads": 1})
    cp = ComparePipeline(FeedPlan(_frames(_red_left(), black, black, black), pace=False, loop=False), a, b,
                         on_result=lambda side, r: seen[side].append(r))  # fmt: skip
    cp.start()
    try:
        assert wait_until(cp.finished, 60), cp.status()
    finally:
        assert cp.stop(timeout=10)
    assert [r.frame_index for r in seen["a"]] == [r.frame_index for r in seen["b"]] == [0, 1, 2, 3]
    assert all(_left_only(_class_map(r)) for r in seen["a"])
    # B alone flips: all class 1 on its empty first mask, then none, all, none. Fed A's left half it would
    # give the right half.
    assert [float(_class_map(r).mean()) for r in seen["b"]] == [1.0, 0.0, 1.0, 0.0]


def test_bench_feeds_every_inference_the_mask_of_the_one_before(models: Path, tmp_path: Path):
    rows_csv, summary = tmp_path / "toggle.csv", tmp_path / "toggle.json"
    run = run_cli("bench", "--model", models / "toggle.tflite", "--source", "demo", "--frames", "6", "--warmup", "0",
                  "--no-pace", "--idle-seconds", "0", "--csv", rows_csv, "--json", summary)  # fmt: skip
    assert run.returncode == 0, run.stderr
    with rows_csv.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["frame_id"]]  # inferences; events have no frame
    assert [r["result"] for r in rows] == ["class 1 100%", "class 0 100%"] * 3, [r["result"] for r in rows]


def test_predict_feeds_each_image_an_empty_mask_and_says_so(models: Path, tmp_path: Path):
    red, black = tmp_path / "red_left.png", tmp_path / "black.png"
    cv2.imwrite(str(red), _red_left())
    cv2.imwrite(str(black), np.zeros((SIDE, SIDE, 3), np.uint8))
    run = run_cli("predict", "--model", models / "carry.tflite", "--json", red, black)
    assert run.returncode == 0, run.stderr
    out = run.json()
    shares = [r["segmentation"]["classes"] for r in out["results"]]
    # Each image alone: the black one after the red one carries nothing (an opaque alpha: class 1 everywhere).
    assert shares == [{"class 0": 0.5, "class 1": 0.5}, {"class 0": 1.0}], shares
    evidence = out["model"]["task"]["evidence"]
    assert "4th channel is fed the previous frame's mask" in evidence and "for each image predict reads" in evidence
    text = run_cli("predict", "--model", models / "carry.tflite", black)
    assert "empty on the first frame" in text.stdout and "hair_segmentation" in text.stdout


def test_a_segmenter_fed_its_last_mask_never_has_frames_queued_ahead():
    """A queued child session (the GPU process) takes frames before the last output is back: a segmenter fed
    its previous mask runs one frame at a time there, any other model keeps the queue."""
    from types import SimpleNamespace

    from app.pipeline.engines import queues

    session = SimpleNamespace(depth=2, submit=lambda *a: None)
    config = SimpleNamespace(throttle_ms=0)
    plain = SimpleNamespace(session=session, feed=None, pre=object(), mask=None, config=config)
    assert queues(plain)  # type: ignore[arg-type]
    masked = SimpleNamespace(session=session, feed=None, pre=object(), mask=object(), config=config)
    assert not queues(masked)  # type: ignore[arg-type]
