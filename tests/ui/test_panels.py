"""The control panel and the live plots alone (no pipeline): what the wheel may change, what the axes show."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QScrollArea

from app.ui.panels.controls import ControlPanel


def _wheel(widget, steps: int) -> None:
    """A real wheel event over the middle of `widget`, `steps` notches down."""
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0), QPoint(0, -120 * steps),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_panel_instead_of_changing_an_unfocused_control(qtbot):
    panel = ControlPanel()
    area = QScrollArea()
    area.setWidget(panel)
    area.setWidgetResizable(True)
    area.resize(300, 200)  # smaller than the panel: it scrolls
    qtbot.addWidget(area)
    area.show()
    panel.threads.setValue(2)
    changed = []
    panel.options_changed.connect(changed.append)
    scrollbar = area.verticalScrollBar()
    assert scrollbar.maximum() > 0 and scrollbar.value() == 0
    _wheel(panel.threads, 1)
    assert panel.threads.value() == 2 and changed == []  # a stray wheel rebuilds no model mid-run
    assert scrollbar.value() > 0  # the panel scrolled instead
    before = panel.delegate.currentIndex()
    _wheel(panel.delegate, 1)
    assert panel.delegate.currentIndex() == before
    panel.threads.setFocus()  # a control the user clicked into still takes the wheel
    qtbot.waitUntil(panel.threads.hasFocus, timeout=2_000)
    _wheel(panel.threads, 1)
    assert panel.threads.value() == 1 and changed


def test_more_threads_than_cores_is_flagged_not_silent(qtbot):
    import os

    panel = ControlPanel()
    qtbot.addWidget(panel)
    cores = os.cpu_count() or 1
    panel.threads.setValue(cores)
    assert "share cores" not in panel.threads.toolTip()
    panel.threads.setValue(cores + 1)
    assert f"{cores + 1} threads on {cores} cores" in panel.threads.toolTip()
    assert "b71c1c" in panel.threads.styleSheet()


def test_fps_and_latency_axes_start_at_zero_so_noise_looks_like_noise(qtbot):
    import math

    from app.ui.views.plots import KEYS, LivePlots

    plots = LivePlots()
    qtbot.addWidget(plots)
    for i in range(20):  # a steady 30 fps with +-0.3 of noise
        plots.add_point({"capture_fps": 30 + 0.3 * math.sin(i), "inference_fps": 29.8, "inference_mean": 12.0}, t=i)
    low, high = plots.plots["fps"].viewRange()[1]
    assert low == 0 and 30.3 < high < 35
    assert plots.plots["latency"].viewRange()[1][0] == 0
    empty = LivePlots()  # a source that failed: no numbers at all
    qtbot.addWidget(empty)
    empty.add_point({k: float("nan") for k in KEYS}, t=0)
    assert empty.plots["fps"].viewRange()[1] == [0, 1.0]


def test_a_switch_marker_says_what_changed():
    import time

    from app.backends import DelegationReport
    from app.live.events import marker_text
    from app.model.spec import ModelFacts
    from app.pipeline import Event, EventKind

    report = DelegationReport(requested="cpu", used="cpu", accelerator="XNNPACK")
    m = ModelFacts("m", "0" * 12, "0" * 64, "m.tflite", (1, 224, 224, 3), "float32", 1000, "the model's own", ())
    switch = Event(EventKind.SWITCH, time.monotonic(), time.time(), "threads 2→1: m on cpu", report=report,
                   model=m, changes="threads 2→1")  # fmt: skip
    assert marker_text(switch) == "CPU · threads 2→1"
    opened = Event(EventKind.OPEN, time.monotonic(), time.time(), "m on cpu", report=report, model=m)
    assert marker_text(opened) == "CPU · m"
