"""The live plots in the real window: switch labels that neither overlap nor run off the plot, and
legends that stay off the data in readable text (issue 24, item 7)."""

from __future__ import annotations

import itertools

import pyqtgraph as pg
import pytest

pytest.importorskip("pytestqt")


def _fps_labels(window) -> list[tuple[str, object]]:
    """(text, scene rectangle) of every switch label shown on the fps plot."""
    shown = []
    for item in window.plots.plots["fps"].items:
        label = getattr(item, "label", None)
        if isinstance(item, pg.InfiniteLine) and label is not None and label.isVisible():
            text = label.textItem.toPlainText()
            if text:
                shown.append((text, label.sceneBoundingRect()))
    return shown


def test_switch_labels_neither_overlap_nor_run_off_the_plot(qtbot, make_window):
    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.plots.updates >= 3, timeout=30_000)
    now = window.plots.now()
    # What a user saw: a fallback and the session it opened at the same moment, and older ones
    # scrolling towards the left edge.
    window.plots.add_marker("GPU→CPU fallback", at=now)
    window.plots.add_marker("CPU · efficientnet_lite0", at=now)
    window.plots.add_marker("COREML→CPU fallback", at=now - 58.5)
    window.plots.add_marker("CPU · threads 2→1", at=now - 30)
    window.plots.add_marker("CPU · model efficientnet_lite0→efficientnet_lite0_int8", at=now - 29.5)
    updates = window.plots.updates
    qtbot.waitUntil(lambda: window.plots.updates >= updates + 2, timeout=10_000)
    labels = _fps_labels(window)
    texts = [text for text, _ in labels]
    assert len(labels) >= 4, texts  # room for all but one at this size (elided at worst)
    for (a, ra), (b, rb) in itertools.combinations(labels, 2):
        assert not ra.intersects(rb), f"{a!r} overlaps {b!r}"
    view = window.plots.plots["fps"].getViewBox().sceneBoundingRect().adjusted(-1, -1, 1, 1)
    for text, rect in labels:
        assert view.contains(rect), f"{text!r} runs off the plot: {rect} outside {view}"
    # The two that came together are both readable in full.
    assert "GPU→CPU fallback" in texts and "CPU · efficientnet_lite0" in texts


def test_legends_sit_off_the_data_in_readable_text(qtbot, make_window):
    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.plots.updates >= 3, timeout=30_000)
    legends = [item for item in window.plots.scene().items() if isinstance(item, pg.LegendItem)]
    assert len(legends) == 3
    views = [plot.getViewBox().sceneBoundingRect() for plot in window.plots.plots.values()]
    for legend in legends:
        rect = legend.sceneBoundingRect()
        assert rect.height() > 0 and not any(rect.intersects(view) for view in views), "a legend covers the data"
        for _, label in legend.items:
            assert label.isVisible()
            size = label.opts.get("size", "9pt")
            assert float(size.removesuffix("pt")) >= 8, size
            colour = pg.mkColor(label.opts.get("color") or pg.getConfigOption("foreground"))
            assert colour.lightness() < 80, colour.name()  # dark text on the white background
