"""Review (File → Review a recording…) on a real recording made across a threads change and a model
switch: the segments in recorded order with their delegation facts, the figures as recorded."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")



def settled(qtbot, window) -> None:
    """The window has run and its background probe (a child process) has answered: closing it at the
    end of the test then joins nothing still starting (a loaded machine left the probe's thread running)."""
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 1, timeout=60_000)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=60_000)


def recorded(path: Path, column: str) -> tuple[np.ndarray, np.ndarray]:
    rows = [r for r in csv.DictReader(path.open(encoding="utf-8")) if not r["event"]]
    rows.sort(key=lambda r: float(r["t_s"]))
    value = [float(r[column]) if r[column] else math.nan for r in rows]
    return np.array([float(r["t_s"]) for r in rows]), np.array(value)


@pytest.mark.slow
def test_review_lists_the_segments_in_recorded_order_with_their_facts(qtbot, make_window, across_switches):
    window = make_window()
    settled(qtbot, window)
    review = window.open_review(across_switches)
    assert review is not None
    qtbot.addWidget(review)
    rows = review.segment_rows()
    assert [r["changed at its start"] for r in rows] == [
        "–",
        "threads 2→1",
        "model efficientnet_lite0→efficientnet_lite0_int8",
    ]
    assert [r["model"] for r in rows] == ["efficientnet_lite0", "efficientnet_lite0", "efficientnet_lite0_int8"]
    assert [r["threads"] for r in rows] == ["2", "1", "1"]
    assert [r["part"] for r in rows] == ["①", "②", "③"]
    assert all("of 61 in 1 partition" in r["nodes delegated"] for r in rows)
    assert rows[0]["backend: runs on"] == "cpu: XNNPACK (CPU, 2 threads)" and rows[2]["ops left on CPU"] == "SOFTMAX"
    assert all(r["labels file"] not in ("", "not recorded") and r["top-1 labels"] != "–" for r in rows)
    # One marker per change of segment, numbered as in the table.
    assert [(round(t, 3), text) for t, text in review.markers if text in ("②", "③")] == [
        (round(review.segments[1].start_s, 3), "②"),
        (round(review.segments[2].start_s, 3), "③"),
    ]


@pytest.mark.slow
def test_review_draws_the_recorded_figures_not_a_resampled_window(qtbot, make_window, across_switches):
    """The recording's own inference fps and each inference's latency, point for point: a 5 s window
    resampled on a grid drew a steady clip climbing at the start and dipping at the end, and a step as
    a slope."""
    window = make_window()
    settled(qtbot, window)
    review = window.open_review(across_switches)
    assert review is not None
    qtbot.addWidget(review)
    review.resize(1400, review.height())  # as on a wide screen (it opens within the offscreen 800-px one)
    for key, column in (("inference_fps", "inference_fps"), ("inference_mean", "inference_ms")):
        t, y = recorded(across_switches, column)
        drawn_t, drawn_y = review.plots.curves[key].getData()
        assert np.array_equal(drawn_t, t), key
        assert np.array_equal(drawn_y, y, equal_nan=True), key
    # The step from float32 to int8 is a step: the first int8 inference is drawn at its own latency.
    switch = review.segments[2].start_s
    t, y = recorded(across_switches, "inference_ms")
    after = y[t > switch]
    drawn_t, drawn_y = review.plots.curves["inference_mean"].getData()
    assert drawn_y[np.searchsorted(drawn_t, switch, side="right") + 1] == after[1]
    # What is drawn is named for what it is.
    assert "as recorded" in review.plots.plots["fps"].titleLabel.text
    assert "each inference" in review.plots.plots["latency"].titleLabel.text
    assert "nothing smoothed" in review.note.text()
    names = review.legend_names()
    assert "inference (each)" in names and "inference fps (as recorded)" in names
    assert not any("p95" in n or "mean" in n or "displayed" in n for n in names), names
    # The power columns (format 3), recorded here where no counter is readable: the plots say so.
    for key, column in (("gpu_sm_clock", "gpu_sm_clock_mhz"), ("cpu_mhz", "cpu_mhz"), ("gpu_power", "gpu_power_w")):
        _, y = recorded(across_switches, column)
        drawn_y = review.plots.curves[key].getData()[1]
        assert np.array_equal(drawn_y, y, equal_nan=True), key
        if np.isnan(y).all():
            notes = review.plots.note_texts()
            assert "not in this recording" in (notes["power"] if key == "gpu_power" else notes["clock"]), notes


def test_review_fits_the_screen_it_opens_on(qtbot):
    """1400 px wide went past the right edge of a 1400-px screen once framed; the offscreen screen is smaller."""
    from app.ui.panels.review import ReviewWindow
    from tests.helpers.paths import ROOT

    review = ReviewWindow(ROOT / "tests" / "data" / "golden" / "input" / "cpu_fp32.csv")
    qtbot.addWidget(review)
    review.show()
    qtbot.waitExposed(review)
    free = review.screen().availableGeometry()
    assert free.contains(review.frameGeometry()), (free, review.frameGeometry())
