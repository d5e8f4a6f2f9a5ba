"""Frames captured for a sweep are spread over a source of known length (app/sources/replay.py), and the
sweep says which frames it used in its text, JSON and HTML."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.sources import capture_frames
from app.sources.video import demo_clip_path
from tests.helpers.cli import run_cli


def _demo_frames() -> int:
    cap = cv2.VideoCapture(str(demo_clip_path()))
    try:
        return int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    finally:
        cap.release()


def test_the_default_capture_spans_the_whole_demo_clip():
    length = _demo_frames()
    assert length == 600  # five photos, 20 s at 30 fps (resources/make_demo_clip.py)
    captured = capture_frames("demo", 100)
    selection = captured.selection
    assert selection is not None and selection.length == length
    assert selection.indices == tuple(range(0, 600, 6))
    assert selection.describe() == "every 6th frame of the 600 (frames 0–594), spread over the whole source"
    # The kept images are those frames: the 51st is the clip's frame 300, read on its own.
    cap = cv2.VideoCapture(str(demo_clip_path()))
    try:
        for _ in range(300):
            cap.grab()
        ok, frame_300 = cap.read()
    finally:
        cap.release()
    assert ok and np.array_equal(captured.images[50], frame_300)


def test_a_count_that_does_not_divide_the_length_is_spread_evenly_and_a_longer_one_loops():
    odd = capture_frames("demo", 7).selection
    assert odd is not None and odd.indices == tuple(i * 600 // 7 for i in range(7))
    assert odd.describe().startswith("one frame in 85.7 of the 600 (frames 0–514), spread over the whole source")
    more = capture_frames("images:tests/data/photos", 3).selection  # a slideshow: its length is known too
    assert more is not None and more.length is not None and more.indices[-1] > more.length // 2


def test_a_source_of_unknown_length_is_captured_as_it_comes():
    selection = capture_frames("synthetic", 5).selection
    assert selection is not None and selection.length is None and selection.indices == (0, 1, 2, 3, 4)
    assert selection.describe() == "frames 0–4, as the source gave them (a live or endless source)"


@pytest.mark.slow
def test_the_sweep_says_which_frames_it_used(tmp_path: Path):
    out, page = tmp_path / "s.json", tmp_path / "s.html"
    run = run_cli("sweep", "--model", "efficientnet_lite0_int8", "--frames", "4", "--warmup", "1", "--idle-seconds",
                  "0", "--json", out, "--html", page, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = "every 150th frame of the 600 (frames 0–450), spread over the whole source"
    assert f"frames used: {said}" in run.stdout
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["frame_selection"] == {"length": 600, "indices": [0, 150, 300, 450], "text": said}
    assert f"frames used: {said}" in page.read_text(encoding="utf-8")
