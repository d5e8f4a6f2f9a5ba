"""The live plots in the real window: switch labels that neither overlap nor run off the plot, and
legends that stay off the data in readable text."""

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


@pytest.mark.slow
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
    # Room for all but two at this size (elided at worst): the fps plot shares the row with the memory plot.
    assert len(labels) >= 3, texts
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
    legends = [legend for legend in legends if legend.isVisible()]
    assert len(legends) == 4  # fps, latency, CPU, memory (the clock and power plots: in a wider plot area)
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


def test_the_clock_and_power_row_says_what_is_not_readable_here(qtbot, make_window):
    """The power state's plots: clock and power right of CPU % in a wide window; on this VM (no
    NVML, no cpufreq) each plot says "not readable here" with the counters' own reason, and no curve."""
    import math

    from app.system.power_counters import PowerCounters

    window = make_window()
    window.resize(1700, 900)
    qtbot.waitUntil(lambda: window.plots.updates >= 3 and window.plots.width() >= 1100, timeout=30_000)
    plots = window.plots
    for name in ("clock", "power"):
        view = plots.plots[name].getViewBox()
        assert plots.plots[name].isVisible() and view.height() >= 40 and view.width() >= 100, (name, view.width())
    counters = PowerCounters(gpu=True)
    here = counters.read(0.0)
    counters.close()
    notes = plots.note_texts()
    if here.gpu is None:
        assert f"GPU clock: not readable here ({here.gpu_reason})" in notes["clock"], notes
        assert f"GPU power: not readable here ({here.gpu_reason})" in notes["power"], notes
        assert all(math.isnan(v) for v in plots.series("gpu_sm_clock")), "a GPU clock without a GPU counter"
    if here.cpu_mhz is None:
        assert f"CPU clock: not readable here ({here.cpu_mhz_reason})" in notes["clock"], notes
    else:
        assert any(v > 0 for v in plots.series("cpu_mhz"))
    shown = plots.note_shown()["clock"]
    assert "not readable here" in shown and "(pip install" not in shown, shown  # the aside: in the tooltip
    # The notes stay inside their plot (wrapped to its width).
    view = plots.plots["clock"].getViewBox().sceneBoundingRect().adjusted(-1, -1, 1, 1)
    note = plots.notes["clock"].sceneBoundingRect()
    assert note.width() <= view.width() + 2, (note, view)


def test_readable_clocks_are_drawn_and_the_note_goes(qtbot):
    """Recorded counter values (an H200's SM clock and power) fed as a snapshot: curves, no note."""
    from app.metrics.energy import PowerNotes
    from app.system.power_counters import GpuPower, PowerReading
    from app.ui.views.plots import KEYS, LivePlots

    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(1200, 500)
    plots.show()
    values = {k: float("nan") for k in KEYS} | {"gpu_sm_clock": 1980.0, "gpu_power": 135.0, "cpu_mhz": 2400.0}
    plots.add_point(values, t=0.0)
    reading = PowerReading(0.0, GpuPower("0: NVIDIA H200", 1980, 3201, 135.0, 1.0), cpu_mhz=(2400.0, 2400.0))
    plots.set_power_notes(PowerNotes.of(reading))
    assert plots.note_texts() == {"clock": "", "power": ""}
    assert plots.series("gpu_sm_clock")[-1] == 1980.0 and plots.series("gpu_power")[-1] == 135.0
    assert plots.plots["clock"].viewRange()[1][1] >= 1980.0  # the axis holds the figure
    plots.resize(900, 250)  # too narrow for five: the clock and power plots are left out first
    qtbot.waitUntil(lambda: not plots.plots["power"].isVisible(), timeout=5_000)
    assert plots.plots["fps"].isVisible() and plots.plots["latency"].isVisible()


def test_a_narrower_plot_area_gives_the_clocks_in_the_cpu_title(qtbot, make_window):
    """At the default size the clock and power plots are left out; the CPU plot's title says the newest
    figures, or that they are not readable here, and the fps plot keeps its room."""
    from app.system.power_counters import PowerCounters

    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.plots.updates >= 3, timeout=30_000)
    plots = window.plots
    assert not plots.plots["clock"].isVisible() and plots.width() < 1100
    counters = PowerCounters(gpu=True)
    here = counters.read(0.0)
    counters.close()
    title = plots.plots["cpu"].titleLabel.text
    if here.gpu is None and here.cpu_mhz is None:
        assert "CPU %" in title and " · clocks not readable here" in title, title
        tip = plots.plots["cpu"].titleLabel.toolTip()
        assert f"({here.gpu_reason})" in tip and f"({here.cpu_mhz_reason})" in tip, tip
    else:
        assert "MHz" in title, title
    assert plots.plots["fps"].getViewBox().width() > 200
