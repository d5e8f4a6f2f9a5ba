"""The window's A/B recording, headless: a comparison is recorded only for a frame both sides' recordings
hold (app/live/recording.py). Real pipelines, real LiteRT, real files."""

from __future__ import annotations

import csv
import random
import re
import time
from pathlib import Path

import pytest

from app.live.controller import LiveController
from app.live.recording import RecordingSession, new_sink
from app.metrics.window import Metrics
from app.pipeline import InferenceConfig, Result
from app.pipeline.compare import ComparePipeline, FrameComparison
from app.pipeline.plan import FeedPlan
from app.recording.ab import ComparisonWriter, b_recording, comparison_recording
from app.recording.rows import RowSink
from app.recording.writer import read_recording
from app.sources.replay import capture_frames
from tests.helpers.wait import wait_until

A = InferenceConfig(options={"threads": 1})
B = InferenceConfig(model="efficientnet_lite0_int8", options={"threads": 1})


def frames_of(path: Path) -> set[str]:
    return {r["frame_id"] for r in read_recording(path).rows if not r["event"]}


def compared_frames(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as f:
        return [r["frame_id"] for r in csv.DictReader(f)]


def test_a_comparison_is_recorded_only_for_frames_both_sides_recorded(tmp_path: Path):
    """The interleaving that failed tests/ui/test_record_compare.py, made deterministic with a real A/B run's
    results: B's result for a frame came before B's recording opened, A's came after A's had opened, and
    A's completed the comparison. The old rule (the frame at or after the first frame of *either* side's
    recording) recorded that comparison, naming a frame X-b.csv lacks."""
    results: list[tuple[str, Result]] = []
    comparisons: dict[int, FrameComparison] = {}
    feed = ComparePipeline(
        FeedPlan(capture_frames("demo", 6), pace=False, loop=False),
        A,
        B,
        on_result=lambda side, r: results.append((side, r)),
        on_comparison=lambda c: comparisons.setdefault(c.frame_index, c),
    )
    feed.start()
    try:
        assert wait_until(feed.finished, timeout=60), "the replayed frames never finished"
    finally:
        assert feed.stop()
    by_side = {side: {r.frame_index: r for s, r in results if s == side} for side in ("a", "b")}
    both = sorted(set(by_side["a"]) & set(by_side["b"]) & set(comparisons))
    assert len(both) >= 4, both  # unpaced replay: each side infers every frame
    first, second, third = both[:3]

    path = tmp_path / "rec.csv"

    def sink(p: Path, side: str) -> RowSink:
        return new_sink(p, side, A if side == "a" else B, source=lambda: "demo", worker=lambda: feed.workers[side],
                        metrics=Metrics(), comparing=True, open_session=None)  # fmt: skip

    session = RecordingSession(path, sink(path, "a"))
    session.on_result(0, "a", by_side["a"][first])  # A's recording holds `first` on
    session.on_result(0, "b", by_side["b"][second])  # B has no recording yet: in no file
    session.add_side_b(sink(b_recording(path), "b"),
                       ComparisonWriter(comparison_recording(path), path, b_recording(path)))  # fmt: skip
    session.on_result(0, "a", by_side["a"][second])
    session.on_comparison(0, comparisons[second])  # A completed it: B's side of it is in no file
    session.on_result(0, "b", by_side["b"][third])
    session.on_result(0, "a", by_side["a"][third])
    session.on_comparison(0, comparisons[third])  # both sides hold it
    session.on_comparison(1, comparisons[third])  # the same number from the next pipeline: not this frame
    status = session.close({"a": {}, "b": {}}, None)
    session.on_result(0, "a", by_side["a"][third])  # after close: nothing more is written
    session.on_comparison(0, comparisons[third])

    assert status.error is None and status.compared == 1
    assert frames_of(path) == {str(first), str(second), str(third)}
    assert frames_of(b_recording(path)) == {str(third)}
    assert compared_frames(comparison_recording(path)) == [str(third)]


@pytest.mark.slow
def test_recordings_started_and_stopped_during_a_b_hold_every_frame_they_compare(tmp_path: Path):
    """The race itself, through the controller: recordings opened and closed at random moments of a real
    unpaced A/B run; every comparison row names a frame both sides' files hold."""
    live = LiveController("demo", A, pace=False)
    live.start()
    rng = random.Random(31)
    sets = []
    try:
        live.set_compare(B)
        assert wait_until(lambda: (c := live.comparison()) is not None and c.summary.frames >= 2, timeout=60)
        for n in range(16):
            path = tmp_path / f"rec{n}.csv"
            live.start_recording(path)
            time.sleep(rng.uniform(0.0, 0.25))
            status = live.stop_recording()
            assert status is not None and status.both_sides and status.error is None
            sets.append(status)
    finally:
        ended, _ = live.stop()
    assert ended
    compared_total = 0
    for status in sets:
        assert status.b_path is not None and status.comparison_path is not None
        a, b = frames_of(status.path), frames_of(status.b_path)
        compared = compared_frames(status.comparison_path)
        assert len(compared) == status.compared
        missing = [f for f in compared if f not in a or f not in b]
        assert not missing, (status.path.name, missing, sorted(a, key=int)[:5], sorted(b, key=int)[:5])
        compared_total += len(compared)
    assert compared_total >= 10  # the recordings did compare frames: the check above checked something


def test_a_b_recording_of_segmenters_carries_the_task_columns(tmp_path: Path):
    """The window's X-compare.csv of two models that are not classifiers holds bench's task columns (the
    same cells, app/pipeline/compare.py `comparison_row`), and each row says what both side files say of
    that frame. Two class-map segmenters that answer one class each whatever the picture: A's every pixel
    class 2, B's class 1, so the figures are known exactly."""
    from app.pipeline.compare import COMPARISON_COLUMNS, COMPARISON_TASK_COLUMNS
    from tests.builders import any_models

    a_model, b_model = tmp_path / "seg_a.tflite", tmp_path / "seg_b.tflite"
    a_model.write_bytes(any_models.class_map("int64", winner=2))
    b_model.write_bytes(any_models.class_map("int32", winner=1))
    live = LiveController("demo", InferenceConfig(model=a_model, options={"threads": 1}), pace=False)
    live.start()
    path = tmp_path / "rec.csv"
    try:
        live.set_compare(InferenceConfig(model=b_model, options={"threads": 1}))
        assert wait_until(lambda: (c := live.comparison()) is not None and c.summary.frames >= 2, timeout=60)
        live.start_recording(path)
        assert wait_until(lambda: live.recording_status().compared >= 10, timeout=60)
        status = live.stop_recording()
    finally:
        ended, _ = live.stop()
    assert ended and status is not None and status.error is None and status.comparison_path is not None
    a_rows = {r["frame_id"]: r for r in read_recording(path).rows if not r["event"]}
    b_rows = {r["frame_id"]: r for r in read_recording(status.b_path).rows if not r["event"]}
    with status.comparison_path.open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COMPARISON_COLUMNS + COMPARISON_TASK_COLUMNS
        rows = list(reader)
    assert len(rows) >= 10
    for row in rows:
        frame = row["frame_id"]
        assert row["a_top1"] == a_rows[frame]["result"] and row["b_top1"] == b_rows[frame]["result"]
        assert a_rows[frame]["result_labels"] == "class 2" and b_rows[frame]["result_labels"] == "class 1"
        assert row["task"] == "segmentation" and row["top1_agree"] == "0"
        assert row["pixel_agreement"] == "0" and row["miou"] == "0"
        assert row["top5_overlap"] == row["a_count"] == row["mean_iou"] == row["cosine_min"] == ""


@pytest.mark.slow
def test_a_recording_that_switches_from_a_classifier_to_a_segmenter_reports_each_task(tmp_path: Path):
    """Record on the classifier, switch the model to a segmenter while recording: the segmenter's rows
    carry their task cells (the window's recording always has the task columns), the switch starts a
    segment, and `report` gives each segment its own task and results."""
    from app.recording.writer import COLUMNS_TASKS
    from tests.builders import any_models
    from tests.helpers.cli import run_cli

    segmenter = tmp_path / "seg.tflite"
    segmenter.write_bytes(any_models.class_map("int64", winner=2))
    live = LiveController("demo", A, pace=False)
    live.start()
    path = tmp_path / "rec.csv"
    try:
        assert wait_until(lambda: live.snapshot().inferences_total >= 3, timeout=60)
        live.start_recording(path)
        assert wait_until(lambda: live.recording_status().rows >= 15, timeout=60)
        live.reconfigure(model=segmenter)
        rows_then = live.recording_status().rows
        assert wait_until(lambda: live.recording_status().rows >= rows_then + 30, timeout=60)
    finally:
        ended, status = live.stop()
    assert ended and status is not None and status.error is None
    with path.open(encoding="utf-8") as f:
        assert next(csv.reader(f)) == COLUMNS_TASKS
    inferences = [r for r in read_recording(path).rows if not r["event"]]
    classified = [r for r in inferences if r["model"] == "efficientnet_lite0"]
    segmented = [r for r in inferences if r["model"] == "seg"]
    assert len(classified) >= 10 and len(segmented) >= 10
    assert all(r["top1_label"] and not r["task"] for r in classified)
    assert all(r["task"] == "segmentation" and r["result_labels"] == "class 2" and not r["top1_label"]
               for r in segmented)  # fmt: skip

    out = tmp_path / "rec.html"
    run = run_cli("report", path, "--out", out, timeout=180)
    assert run.returncode == 0, run.stderr
    page = out.read_text(encoding="utf-8")
    assert re.search(r"<th>task</th><td[^>]*>classification</td><td[^>]*>segmentation</td>", page), page
    assert re.search(r"<th>results</th><td[^>]*>–</td><td[^>]*>1\.0 classes present per frame", page)
    assert "class 2 in 100% of frames (mean share 100%)" in page
