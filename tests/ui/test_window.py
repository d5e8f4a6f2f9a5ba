"""The window, offscreen, on real sources and the real LiteRT runtime (pytest-qt)."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest

from app.recording.writer import read_recording, sidecar_path
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import TEST_MODELS
from tests.helpers.wait import wait_for_results

pytest.importorskip("pytestqt")


def test_starts_on_the_demo_clip_and_shows_live_results(qtbot, make_window):
    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: window.plots.updates >= 5 and window.probes.frames_displayed >= 10, timeout=10_000)
    result = window.live.latest_result()
    assert result is not None and result.backend == "cpu" and result.top
    # The delegation panel shows what really runs, as the runtime reported it.
    text = window.delegation.text()
    assert "Backend" in text and "CPU" in text and "Nodes delegated" in text and "Offload" in text
    # Beside the counts, TFLite's own line for XNNPACK, computed (this LiteRT build does not print it).
    assert "Log line" in text and "Replacing 61 out of 61 node(s) with delegate (TfLiteXNNPackDelegate) node" in text
    assert "(computed: this LiteRT build does not print it)" in text
    # The panel says what sets the rate beside what inference alone allows. Which sentence depends on the machine's load
    # (paced at the clip's 30 fps when it keeps up): each sentence is tested on recorded figures in
    # tests/test_bottleneck.py.
    rate = [line for line in text.splitlines() if line.startswith("Rate: ")]
    assert len(rate) == 1 and "inference alone:" in rate[0], text
    # Plots hold real numbers, not an empty frame.
    fps = window.plots.series("capture_fps")
    assert np.nanmax(fps) > 5
    assert np.isfinite(window.plots.series("inference_mean")).any()
    # The overlay is drawn over the video: the grabbed view is not one flat colour.
    image = window.video.grab().toImage()
    colours = {image.pixel(x, y) for x in range(0, image.width(), 37) for y in range(0, image.height(), 29)}
    assert len(colours) > 50
    assert window.video.backend_label.startswith("CPU")


def test_unavailable_delegate_keeps_running_and_shows_why(qtbot, make_window):
    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=60_000)
    from PySide6.QtCore import Qt

    combo = window.controls.delegate
    index = combo.findData("coreml")
    # Not macOS: still selectable, marked, the reason as tooltip.
    assert not window.controls.delegate_available("coreml")
    assert combo.itemText(index) == "Core ML (not here)"
    assert combo.model().item(index).isEnabled()
    tip = combo.itemData(index, Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("Not available here:") and "macOS" in tip

    before = window.live.snapshot().inferences_total
    combo.setCurrentIndex(index)
    combo.activated.emit(index)  # what a click on the entry sends
    qtbot.waitUntil(lambda: any(e.kind == "fallback" for e in window.live.events()), timeout=30_000)
    qtbot.waitUntil(lambda: "Fallback" in window.delegation.text(), timeout=5_000)
    text = window.delegation.text()
    assert "requested Core ML" in text and "macOS" in text
    # What a Mac would do with the bundled float32 model: its Mean drops keep_dims, so the delegate
    # refuses it and the fully connected + softmax tail is a second partition.
    assert "on a Mac the TFLite Core ML delegate would take 60 of 61 nodes in 2 partitions" in text
    assert "CoreML delegate: 60 nodes delegated out of 61 nodes, with 2 partitions." in text
    assert "MEAN (node 58): keep_dims is false" in text
    titles = [title for title, _ in window.delegation.strip.rows]
    assert titles == ["Runs now: CPU", "Core ML (predicted)"]
    assert window.delegation.strip.isVisible()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total > before + 5, timeout=30_000)
    # The badge is refreshed on the next stats tick (200 ms); under load that can come after the count.
    qtbot.waitUntil(lambda: "fallback" in window.video.backend_label, timeout=5_000)
    assert window.plots.marker_count() >= 2  # open + fallback, labelled on the plots


def test_switching_model_mid_run(qtbot, make_window):
    window = make_window()
    wait_for_results(qtbot, window)
    assert window.switch_model("efficientnet_lite0_int8")
    qtbot.waitUntil(
        lambda: (r := window.live.latest_result()) is not None and r.model == "efficientnet_lite0_int8",
        timeout=30_000,
    )
    qtbot.waitUntil(lambda: "Last switch" in window.delegation.text(), timeout=5_000)
    assert window.controls.model.currentData() == "efficientnet_lite0_int8"


def test_the_status_bar_counts_frames_not_inferred_in_benchs_words(qtbot, make_window):
    """The paced demo clip at 30 fps and inference held to one start per 300 ms: the slot overwrites
    frames inference never took, and the status bar counts them as bench's "measured" line does."""
    from app.pipeline.frame_slot import NOT_INFERRED, OVERWRITTEN

    window = make_window(throttle_ms=300.0)
    qtbot.waitUntil(lambda: window.live.snapshot("a").dropped_total > 1, timeout=30_000)
    shown = r"·\s+\d+ frames not inferred$"
    qtbot.waitUntil(lambda: bool(re.search(shown, window.status_label.text())), timeout=5_000)
    assert (NOT_INFERRED, OVERWRITTEN) == ("not inferred", "overwritten in the slot")  # bench: "3 not inferred (...)"
    why = "frames not inferred: overwritten in the slot by a newer frame, as bench counts"
    assert window.status_label.toolTip() == why


def test_a_classifier_lists_its_whole_top_k_at_the_default_score_threshold(qtbot, make_window):
    """The threshold starts at 0.5 for detections; a classifier's top-5 sums to at most 100%, so at most one
    class scores 50% or more, yet the panel lists all five, as predict and bench print them."""
    from tests.helpers.paths import PHOTOS

    window = make_window(source=f"images:{PHOTOS / 'grace_hopper.jpg'}")
    assert window.video.score_threshold == 0.5
    qtbot.waitUntil(lambda: (r := window.live.latest_result()) is not None and len(r.top) == 5, timeout=60_000)
    top = window.live.latest_result().top
    qtbot.waitUntil(lambda: bool(window.video.panel_texts) and len(window.video.panel_texts[0]) >= 5, timeout=10_000)
    # The same photo every frame: the rows painted are this result's, top-1 first.
    assert [row.rsplit(" ", 1)[0] for row in window.video.panel_texts[0][:5]] == [p.label for p in top]


def test_a_bad_model_file_is_refused_and_nothing_changes(qtbot, make_window, tmp_path):
    window = make_window()
    wait_for_results(qtbot, window)
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"TFL3" + bytes(100))
    assert not window.switch_model(str(bad))
    assert window.last_error and "broken.tflite" in window.last_error
    # Any model loads (a text model too); one with dynamic dimensions and no --input-shape does not.
    assert not window.switch_model(str(TEST_MODELS / "dynamic_size.tflite"))
    assert window.last_error and "--input-shape" in window.last_error
    before = window.live.snapshot().inferences_total
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total > before + 3, timeout=20_000)
    assert window.live.latest_result().model == "efficientnet_lite0"


def test_record_button_writes_the_bench_csv(qtbot, make_window, tmp_path):
    window = make_window()
    wait_for_results(qtbot, window)
    path = tmp_path / "rec" / "session.csv"
    assert window.start_recording(path)
    assert window.record_action.isChecked()
    qtbot.waitUntil(lambda: (s := window.live.recording_status()) is not None and s.rows >= 20, timeout=30_000)
    qtbot.waitUntil(lambda: "REC" in window.record_label.text(), timeout=5_000)
    status = window.stop_recording()
    assert status is not None and status.error is None and not window.record_action.isChecked()
    session = read_recording(path)
    inferences = [r for r in session.rows if not r["event"]]
    assert len(inferences) >= 19 and session.skipped_lines == 0
    assert session.rows[0]["event"] == "start" and session.rows[-1]["event"] == "stop"
    assert all(r["backend_used"] == "cpu" and r["top1_label"] for r in inferences)
    assert session.metadata["complete"] is True
    assert any(m["name"] == "efficientnet_lite0" for m in session.metadata["models"].values())
    # An existing file is never overwritten: refused with a message, the app runs on.
    assert not window.start_recording(path)
    assert "will not overwrite" in window.last_error


def test_closing_stops_threads_and_finishes_the_recording(qtbot, make_window, tmp_path):
    window = make_window()
    wait_for_results(qtbot, window)
    path = tmp_path / "close.csv"
    assert window.start_recording(path)
    qtbot.waitUntil(lambda: window.live.recording_status().rows >= 5, timeout=30_000)
    window.close()
    assert not any(t.is_alive() for t in window.live.threads())
    assert not [t for t in threading.enumerate() if t.name == "delegate-scope-recorder"]
    session = read_recording(path)
    assert session.rows[-1]["event"] == "stop" and session.metadata["complete"]


def test_settings_are_remembered_and_bad_ones_ignored(qtbot, make_window, tmp_path):
    window = make_window()
    wait_for_results(qtbot, window, 2)
    window.controls.throttle.setValue(120)
    window.controls.top_k.setValue(3)
    window.close()
    from PySide6.QtCore import QSettings

    store = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    assert float(store.value("throttle_ms")) == 120.0 and int(store.value("top_k")) == 3
    store.setValue("model", "/nonexistent/evil.tflite")
    store.setValue("delegate", "npu")
    store.setValue("source", "video:/nonexistent/clip.mp4")
    store.sync()
    second = make_window(source=None, threads=None)
    assert second.live.config().throttle_ms == 120.0 and second.live.config().top_k == 3
    assert second.live.source == "demo" and second.live.config().delegate == "cpu"
    assert str(second.live.config().model) == "efficientnet_lite0"


def test_frames_are_shown_without_a_copy(qtbot):
    from app.ui.views.video import frame_to_qimage

    image = np.zeros((4, 6, 3), np.uint8)
    qimage = frame_to_qimage(image)
    image[1, 2] = (255, 0, 0)  # BGR blue, written after wrapping
    assert qimage.pixelColor(2, 1).blue() == 255  # the QImage sees it: same memory
    with pytest.raises(ValueError):
        frame_to_qimage(np.zeros((4, 6), np.uint8))


@pytest.mark.slow
def test_plots_survive_many_updates_without_growing(qtbot):
    from app.ui.views.plots import KEYS, LivePlots

    plots = LivePlots(history_s=10.0)
    qtbot.addWidget(plots)
    values = {k: 1.0 for k in KEYS}
    for i in range(400):  # 80 s: eight times the history (a million updates: benchmarks.soak.plot_soak)
        plots.add_point(values, t=i * 0.2)
        if i % 40 == 0:
            plots.add_marker(f"switch {i}", at=i * 0.2)
    # 10 s of history at 5 Hz: 51 points kept, markers older than that removed.
    assert len(plots.series("capture_fps")) <= 51
    assert plots.marker_count() <= 1
    assert plots.updates == 400


@pytest.mark.slow
def test_gui_command_scripted_run_writes_screenshot_and_stats(tmp_path):
    shot, stats = tmp_path / "window.png", tmp_path / "stats.json"
    run = run_cli(
        "gui", "--source", "demo", "--threads", "1", "--settings", tmp_path / "s.ini",
        "--exit-after", "6", "--screenshot", shot, "--stats", stats,
        env={"QT_QPA_PLATFORM": "offscreen"}, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    from PySide6.QtGui import QImage

    image = QImage(str(shot))
    assert image.width() >= 800 and image.height() >= 500
    figures = json.loads(stats.read_text())
    assert figures["task"] == "classification" and figures["results"]["frames"] >= 1  # what it found
    assert figures["frames_displayed"] > 30 and figures["plot_updates"] > 10
    assert figures["metrics"]["inferences_total"] > 5
    # What ran, so a scripted run's figures can be read without the window.
    session = figures["session"]
    assert session["model"]["name"] == "efficientnet_lite0" and session["source"] == "demo"
    assert (session["delegate"]["requested"], session["delegate"]["used"]) == ("cpu", "cpu")
    # A scripted run leaves the user's saved settings alone unless asked.
    assert not (tmp_path / "s.ini").exists() or "model" not in (tmp_path / "s.ini").read_text()


@pytest.mark.slow
def test_scripted_runs_say_what_ran_and_fail_like_bench(tmp_path):
    stats = tmp_path / "stats.json"
    ini = tmp_path / "s.ini"
    run = run_cli(
        "gui", "--delegate", "coreml", "--source", "synthetic", "--threads", "1", "--settings", ini,
        "--exit-after", "4", "--stats", stats, env={"QT_QPA_PLATFORM": "offscreen"}, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    delegate = json.loads(stats.read_text())["session"]["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("coreml", "cpu") and "macOS" in delegate["fallback_reason"]
    assert delegate["predicted"]["log"].startswith("CoreML delegate: 60 nodes delegated out of 61")
    assert "coreml" not in (ini.read_text() if ini.exists() else "")  # the next plain start is not on Core ML
    # Asked to, it remembers: saved as the window closes, whatever ran by then.
    run = run_cli("gui", "--delegate", "coreml", "--source", "synthetic", "--threads", "1", "--settings", ini,
                  "--exit-after", "1", "--save-settings", env={"QT_QPA_PLATFORM": "offscreen"},
                  timeout=120)  # fmt: skip
    assert run.returncode == 0 and "coreml" in ini.read_text()
    # A source that never opens exits 6 with one line naming it, as bench does: tests/test_exit_codes.py's
    # row "gui: scripted run whose source never opens".


def test_gui_without_a_display_is_one_clear_line(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    import subprocess
    import sys

    from tests.helpers.cli import CliRun
    from tests.helpers.paths import ROOT

    proc = subprocess.run(
        [sys.executable, "-m", "app", "gui", "--exit-after", "1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert_one_line_error(CliRun(proc.returncode, proc.stdout, proc.stderr), 2, "no display")


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--model", str(TEST_MODELS / "dynamic_size.tflite")], 3, "--input-shape"),  # a model no shape fits yet
        (["--source", "camera:x"], 2, "camera"),  # a source string that names no source: the user's typing
    ],
)
def test_gui_bad_arguments_fail_before_a_window_opens(args, code, fragment, forked_cli: ForkedCli):
    run = forked_cli.run("gui", *args, "--exit-after", "1", env={"QT_QPA_PLATFORM": "offscreen"})
    assert_one_line_error(run, code, fragment)


def test_screenshot_needs_exit_after(tmp_path, forked_cli: ForkedCli):
    run = forked_cli.run("gui", "--screenshot", tmp_path / "x.png", env={"QT_QPA_PLATFORM": "offscreen"})
    assert_one_line_error(run, 2, "--exit-after")


@pytest.mark.slow
@pytest.mark.damages_outputs  # mutated sidecars, on purpose
def test_a_recording_can_be_reviewed_in_the_same_plots(qtbot, make_window, tmp_path):
    window = make_window()
    wait_for_results(qtbot, window)
    path = tmp_path / "review.csv"
    assert window.start_recording(path)
    qtbot.waitUntil(lambda: window.live.recording_status().rows >= 40, timeout=30_000)
    window.switch_model("efficientnet_lite0_int8")
    qtbot.waitUntil(lambda: any(e.kind == "switch" for e in window.live.events()), timeout=30_000)
    qtbot.waitUntil(lambda: window.live.recording_status().rows >= 80, timeout=30_000)
    window.stop_recording()
    review = window.open_review(path)
    assert review is not None
    qtbot.addWidget(review)
    assert review.inferences >= 70
    assert np.nanmax(review.plots.curves["inference_fps"].getData()[1]) > 5
    assert [r["model"] for r in review.segment_rows()][-1] == "efficientnet_lite0_int8"
    # Bad files: one message, no window, the live window runs on.
    junk = tmp_path / "junk.csv"
    junk.write_bytes(b"\x00\xff not a recording")
    assert window.open_review(junk) is None and "junk.csv" in window.last_error
    assert window.open_review(tmp_path / "missing.csv") is None
    # Esc closes a review (and Ctrl+W, the platform's Close key).
    from PySide6.QtCore import Qt

    review.activateWindow()  # a shortcut of the review fires in the review, not in the main window
    qtbot.waitUntil(review.isActiveWindow, timeout=2_000)
    qtbot.keyClick(review.plots, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not review.isVisible(), timeout=2_000)
    # Damaged recordings and sidecars (tests/harness/reader_fuzz.py's mutations): a review window or one
    # message, never an exception out of the window (lost_rows of 1e400 raises no OverflowError).
    import random

    from tests.harness.reader_fuzz import mutate_csv, mutate_json

    text, meta = path.read_text(encoding="utf-8"), json.loads(sidecar_path(path).read_text())
    rng = random.Random(3)
    damaged = tmp_path / "damaged.csv"
    for _ in range(40):
        damaged.write_text(mutate_csv(text, rng), encoding="utf-8")
        sidecar_path(damaged).write_text(mutate_json(meta, rng), encoding="utf-8")
        opened = window.open_review(damaged)
        if opened is not None:
            opened.close()
    damaged.write_text(text, encoding="utf-8")
    sidecar_path(damaged).write_text(json.dumps({**meta, "lost_rows": 1e400}))
    assert window.open_review(damaged) is not None


@pytest.mark.slow
def test_compare_mode_shows_both_sides_and_their_agreement(qtbot, make_window):
    window = make_window()
    wait_for_results(qtbot, window)
    window.set_compare(("efficientnet_lite0_int8", "cpu"))
    assert window.live.comparing and window.compare_dock.isVisibleTo(window)
    qtbot.waitUntil(lambda: window.live.comparison().summary.frames >= 20, timeout=60_000)
    qtbot.waitUntil(lambda: "top-1 agrees on" in window.compare_panel.summary.text(), timeout=5_000)
    assert window.video.titles[1].startswith("B · CPU · efficientnet_lite0_int8")
    assert window.controls.b_model.currentData() == "efficientnet_lite0_int8"
    qtbot.waitUntil(lambda: np.isfinite(window.plots.series("b_inference_fps")).any(), timeout=5_000)
    summary = window.live.comparison().summary
    assert 0.5 < summary.top1_agreement <= 1.0
    window.set_compare(None)
    assert not window.live.comparing and not window.compare_dock.isVisibleTo(window)
    before = window.live.snapshot().inferences_total
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total > before + 5, timeout=30_000)


def test_a_labels_file_that_does_not_fit_is_shown_not_silent(qtbot, make_window, tmp_path):
    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: "Labels" in window.delegation.text(), timeout=10_000)
    assert "Labels sidecar labels imagenet_labels.txt" in window.delegation.text().replace("\n", " ")
    five = tmp_path / "five.txt"
    five.write_text("a\nb\nc\nd\ne\n", encoding="utf-8")
    assert window.load_labels(five)
    assert "five.txt" in window.statusBar().currentMessage() and "1000 outputs" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: "five.txt" in window.delegation.text(), timeout=30_000)
    text = window.delegation.text().replace("\n", " ")
    assert "has 5 labels but the model has 1000 outputs" in text
