"""The window's delegate sweep and unpaced mode, offscreen, on the demo clip and the real runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.pipeline import State
from tests.helpers.wait import wait_for_results

pytest.importorskip("pytestqt")


@pytest.mark.slow
def test_sweep_button_runs_the_sweep_off_the_gui_thread_and_shows_the_table(qtbot, make_window, tmp_path: Path):
    from PySide6.QtCore import Qt

    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=60_000)
    panel = window.sweep.panel
    panel.frames.setValue(10)
    window.sweep.action.trigger()  # Benchmark → Sweep delegates…
    assert window.sweep.running and window.sweep.dock.isVisible()
    # The live pipeline waits meanwhile, and the video says why.
    assert window.live.paused and window.live.status().state == State.STOPPED
    qtbot.waitUntil(lambda: window.video.banner.startswith("Paused"), timeout=2_000)
    assert not panel.run_button.isEnabled() and panel.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: "Configuration" in panel.status.text(), timeout=30_000)  # progress shown
    qtbot.waitUntil(lambda: not window.sweep.running, timeout=90_000)
    assert window.sweep.error is None
    result = window.sweep.result
    assert result is not None and result.frames == 10 and result.source == "demo"
    # The model running now, on every configuration: CPU measured, the rest listed with the reason.
    assert {r.model_ref for r in result.rows} == {"efficientnet_lite0"}
    assert panel.table.rowCount() == len(result.rows)
    texts = [[panel.table.item(r, c).text() for c in range(panel.table.columnCount())] for r in range(len(result.rows))]
    from app.report.sweep import COLUMNS

    agree = COLUMNS.index("top-1 agree")
    assert texts[0][0] == "EfficientNet-Lite0 (float32) · CPU 1 thread" and texts[0][agree] == "100.0% of 10"
    # The power state's columns: a figure, or "—" with the reason in the status lines (this VM: none readable).
    gpu_mhz = COLUMNS.index("GPU MHz")
    power = result.rows[0].power
    assert power is not None and (texts[0][gpu_mhz] == "—") == (power.sm_clock_mhz is None)
    if power.gpu_reason:
        assert f"not readable here ({power.gpu_reason})" in panel.status.text()
    assert float(texts[0][1]) > 0  # inferences/s
    coreml = next(row for row in texts if "Core ML" in row[0])
    assert coreml[1] == "—" and "unavailable: Core ML needs macOS" in coreml[-1]
    assert panel.tabs.count() == 2 and panel.tabs.tabText(1) == "Plots"
    # Live inference resumes where it was.
    assert not window.live.paused
    before = window.live.snapshot().inferences_total
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total > before + 3, timeout=30_000)
    qtbot.waitUntil(lambda: window.video.banner == "", timeout=2_000)
    # Save report… writes the HTML page.
    assert panel.save_button.isEnabled()
    page = tmp_path / "sweep.html"
    assert window.sweep.save_report(page)
    assert "<table>" in page.read_text() and "sweep.html" in window.statusBar().currentMessage()
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()
    qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)  # runs again from the tab's own button
    assert window.sweep.running
    window.sweep.cancel()
    qtbot.waitUntil(lambda: not window.sweep.running, timeout=60_000)
    assert window.sweep.result.cancelled or len(window.sweep.result.measured()) == len(result.measured())


def test_unpaced_mode_is_labelled_as_a_benchmark_and_reads_the_clip_unpaced(qtbot, make_window):
    window = make_window()
    wait_for_results(qtbot, window)
    assert window.live.pace and ", paced" in window.live.source_info().description
    assert not window.unpaced.label.isVisible()
    window.unpaced.action.trigger()  # Benchmark → Unpaced: as fast as possible
    assert not window.live.pace
    qtbot.waitUntil(lambda: "UNPACED" in window.video.backend_label, timeout=5_000)
    assert window.unpaced.label.isVisible() and window.unpaced.label.text().startswith("UNPACED BENCHMARK")
    qtbot.waitUntil(lambda: (info := window.live.source_info()) is not None and ", unpaced" in info.description,
                    timeout=10_000)  # fmt: skip
    window.unpaced.action.trigger()  # and back
    assert window.live.pace
    qtbot.waitUntil(lambda: "UNPACED" not in window.video.backend_label, timeout=5_000)
    assert not window.unpaced.label.isVisible()
