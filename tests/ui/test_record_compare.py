"""Recording during an A/B comparison, in the real window: Record (Ctrl+R) with "Run B on the same
frames" on records both sides and their per-frame comparison, as `bench --compare-* --csv` does."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from app.recording.writer import read_recording

pytestmark = pytest.mark.slow

pytest.importorskip("pytestqt")


def rows_of(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open(encoding="utf-8")))


def test_record_during_a_b_records_both_sides_and_the_comparison(qtbot, make_window, tmp_path):
    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=60_000)  # the probe's thread is done
    controls = window.controls
    controls.b_model.setCurrentIndex(controls.b_model.findData("efficientnet_lite0_int8"))
    controls.compare.setChecked(True)  # "Run B on the same frames"
    qtbot.waitUntil(lambda: window.live.comparing and window.live.comparison().summary.frames >= 3, timeout=60_000)
    window.saved.recordings_dir = str(tmp_path)
    window.record_action.trigger()  # Ctrl+R
    assert window.live.recording
    assert "both sides" in window.statusBar().currentMessage(), window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: window.live.recording_status().compared >= 40, timeout=60_000)
    qtbot.waitUntil(lambda: "REC A+B" in window.record_label.text(), timeout=5_000)
    assert "frames compared" in window.record_label.text()
    window.record_action.trigger()  # Ctrl+R again: stop
    message = window.statusBar().currentMessage()
    status = window.last_recording
    assert status is not None and status.error is None and status.both_sides
    assert "both sides" in message and status.b_path.name in message and status.comparison_path.name in message
    a_path, b_path, c_path = status.path, status.b_path, status.comparison_path
    assert a_path.parent == b_path.parent == c_path.parent == tmp_path
    assert b_path.name == a_path.stem + "-b.csv" and c_path.name == a_path.stem + "-compare.csv"

    # Side A and side B: each a full recording in the bench format, each with its own model.
    a, b = read_recording(a_path), read_recording(b_path)
    a_rows = {r["frame_id"]: r for r in a.rows if not r["event"]}
    b_rows = {r["frame_id"]: r for r in b.rows if not r["event"]}
    assert len(a_rows) >= 40 and len(b_rows) >= 40
    assert {r["model"] for r in a_rows.values()} == {"efficientnet_lite0"}
    assert {r["model"] for r in b_rows.values()} == {"efficientnet_lite0_int8"}
    assert all(r["inference_ms"] for r in b_rows.values())
    assert a.metadata["complete"] and b.metadata["complete"]
    assert a.metadata["compare"] == {"b": b_path.name, "comparison": c_path.name}
    assert b.metadata["settings"]["compare_side"] == "b"
    assert any(m["name"] == "efficientnet_lite0_int8" for m in b.metadata["models"].values())
    assert 0.5 < a.metadata["agreement"]["top1_agreement"] <= 1.0

    # The per-frame comparison, in bench's columns, agrees with what each side recorded for that frame. The
    # task columns are always there (either side may switch to another task while recording), empty here.
    from app.pipeline.compare import COMPARISON_COLUMNS, COMPARISON_TASK_COLUMNS

    compared = rows_of(c_path)
    assert list(compared[0]) == COMPARISON_COLUMNS + COMPARISON_TASK_COLUMNS and len(compared) >= 40
    assert not any(row[c] for row in compared for c in COMPARISON_TASK_COLUMNS)
    for row in compared:  # every compared frame is in both sides' recordings (a side's result that came
        # before its recording opened once left one comparison row naming a frame X-b.csv lacked)
        assert row["frame_id"] in a_rows and row["frame_id"] in b_rows, row["frame_id"]
        assert row["a_top1"] == a_rows[row["frame_id"]]["top1_label"]
        assert row["b_top1"] == b_rows[row["frame_id"]]["top1_label"]
        assert row["top1_agree"] == str(int(row["a_top1"] == row["b_top1"]))
        assert float(row["b_inference_ms"]) == pytest.approx(float(b_rows[row["frame_id"]]["inference_ms"]))


def test_a_b_started_while_recording_adds_side_b(qtbot, make_window, tmp_path):
    """A/B switched on after Record: side B and the comparison are recorded from then on, and both
    sides' recordings mark where the comparison started and ended."""
    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=60_000)  # the probe's thread is done
    path = tmp_path / "rec.csv"
    assert window.start_recording(path)
    qtbot.waitUntil(lambda: window.live.recording_status().rows >= 10, timeout=30_000)
    assert not window.live.recording_status().both_sides
    window.set_compare(("efficientnet_lite0_int8", "cpu"))
    qtbot.waitUntil(lambda: window.live.recording_status().compared >= 15, timeout=60_000)
    window.set_compare(None)
    status = window.stop_recording()
    assert status is not None and status.both_sides and status.compared >= 15 and status.b_rows >= 15
    a_events = [r["event"] for r in rows_of(path) if r["event"]]
    b_events = [r["event"] for r in rows_of(status.b_path) if r["event"]]
    assert a_events.count("compare") == 2 and b_events.count("compare") == 1  # B's file starts with A/B on
    assert b_events[0] == "start" and "open" in b_events and b_events[-1] == "stop"
