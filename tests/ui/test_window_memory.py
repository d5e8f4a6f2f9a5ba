"""Memory in the window: the memory plot's series (resident set, GPU memory or why not), each session's init
footprint labelled on it at every open and switch, the Memory line of "What really runs" (both sides in
A/B), and the footprint in a recording's session facts."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

pytest.importorskip("pytestqt")

INIT = re.compile(r"init (\d+(\.\d)?|\d+) MB")


def test_the_memory_plot_has_the_resident_set_and_says_why_gpu_memory_is_missing(qtbot, make_window):
    from app.metrics.memory import gpu_mb

    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 5 and window.plots.updates >= 5,
                    timeout=30_000)  # fmt: skip
    plots = window.plots
    rss = plots.series("rss_mb")
    assert np.isfinite(rss).any() and np.nanmax(rss) > 10, rss  # the process holds its model, runtime and Qt
    assert plots.plots["memory"].isVisible(), "the memory plot sits right of CPU % at the default size"
    assert plots.plots["memory"].viewRange()[1][1] >= np.nanmax(rss)  # the axis holds the figure
    _, reason = gpu_mb()
    shown, tip = plots.memory_note()
    if reason is not None:  # no NVML or no GPU context here: a gap, and the plot says why
        assert all(math.isnan(v) for v in plots.series("gpu_mem_mb"))
        assert shown == "GPU memory not readable here" and reason.split(":")[0] in tip, (shown, tip)
    else:
        assert shown == "" and np.isfinite(plots.series("gpu_mem_mb")).any()
    # The first open's footprint is labelled on the memory plot and said in the panel.
    qtbot.waitUntil(lambda: bool(plots.memory_labels()), timeout=10_000)
    assert INIT.fullmatch(plots.memory_labels()[0]), plots.memory_labels()
    text = window.delegation.text()
    assert re.search(r"Memory: init [\d.]+ MB \([\d.-]+ MB weights, arena and runtime copies\); the process's "
                     r"resident set now \d+ MB", text), text  # fmt: skip


def test_a_switch_labels_its_init_and_the_recording_keeps_it(qtbot, make_window, tmp_path):
    from app.recording.segments import delegate_facts, split_segments
    from app.recording.writer import read_recording

    window = make_window()
    qtbot.waitUntil(lambda: window.plots.memory_labels() != [], timeout=30_000)
    path = tmp_path / "memory.csv"
    assert window.start_recording(path)
    before = len(window.plots.memory_labels())
    window.request_delegate("coreml")  # not macOS: a new session, fallen back to the CPU
    qtbot.waitUntil(lambda: len(window.plots.memory_labels()) > before, timeout=30_000)
    label = window.plots.memory_labels()[-1]
    # "init not measured" where the old session's memory, freed meanwhile, outweighed the open's
    assert INIT.fullmatch(label) or label == "init not measured", label

    # The label sits on the switch's marker line, in view on the memory plot.
    def placed() -> list[str]:
        items = window.plots.plots["memory"].items
        return [item.label.toolTip() for item in items if getattr(item, "label", None) is not None]

    qtbot.waitUntil(lambda: label in placed(), timeout=5_000)  # placed at the next redraw
    # Inferences of the new session in the recording: a segment without any joins the one before it, whose
    # facts are the earlier open's.
    done = window.live.snapshot().inferences_total
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= done + 3, timeout=30_000)
    window.stop_recording()
    recording = read_recording(path)
    opened = recording.metadata["opened"]
    inits = [entry["delegate"]["init_mb"] for entry in opened]
    segments = split_segments(recording.rows, recording.metadata)
    facts = dict(delegate_facts(segments[-1].facts, segments[-1].rows))
    if label == "init not measured":  # the recording says the same, not a number
        assert inits[-1] is None and facts["init memory"] == "not measured", (inits, facts)
        return
    assert inits and all(isinstance(v, float) and v > 0 for v in inits), inits
    # The label says the open's figure in whole MB (36.53 -> "37 MB"); the sidecar keeps it to 0.1 MB (36.5).
    shown = float(label.removeprefix("init ").removesuffix(" MB"))
    assert abs(shown - inits[-1]) <= 0.55, (inits, label)
    assert facts["init memory"] == f"{inits[-1]:.1f} MB", facts


@pytest.mark.slow
def test_ab_shows_both_sides_init(qtbot, make_window):
    window = make_window(compare_model="efficientnet_lite0_int8")
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.delegation.report_b is not None, timeout=60_000)
    # Each side's open is shown as it lands: on a loaded machine B's can come first ("No model open yet" for A).
    qtbot.waitUntil(lambda: "A init" in window.delegation.text() and "B init" in window.delegation.text(),
                    timeout=30_000)  # fmt: skip
    text = window.delegation.text()
    assert re.search(r"A init [\d.]+ MB \(.*\); B init [\d.]+ MB \(.*\); the process's resident set now", text), text
    qtbot.waitUntil(lambda: any(t.startswith("B init") for t in window.plots.memory_labels()), timeout=10_000)
    labels = window.plots.memory_labels()
    assert any(re.fullmatch(r"A init [\d.]+ MB", t) for t in labels), labels
    # B's label is the memory plot's own: no extra marker on the other plots.
    assert all("init" not in t for t in window.plots.marker_texts())


def test_a_narrow_plot_area_gives_the_resident_set_in_the_cpu_title(qtbot):
    from app.ui.views.plots import KEYS, LivePlots

    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(700, 300)  # room for three plots: the memory plot is left out
    plots.show()
    qtbot.waitUntil(lambda: not plots.plots["memory"].isVisible(), timeout=5_000)
    plots.add_point({k: float("nan") for k in KEYS} | {"rss_mb": 172.4, "gpu_mem_mb": 96.0}, t=0.0)
    assert "172 MB, GPU 96 MB" in plots.plots["cpu"].titleLabel.text
    plots.set_memory_note("NVML not available: no NVIDIA driver here")
    assert "GPU memory not readable here: NVML not available" in plots.plots["cpu"].titleLabel.toolTip()
    plots.resize(1000, 300)
    qtbot.waitUntil(lambda: plots.plots["memory"].isVisible(), timeout=5_000)
    plots.add_point({k: float("nan") for k in KEYS} | {"rss_mb": 180.0}, t=0.5)
    assert "MB" not in plots.plots["cpu"].titleLabel.text  # the memory plot shows it now
    tip = "GPU memory not readable here: NVML not available: no NVIDIA driver here"
    assert plots.memory_note() == ("GPU memory not readable here", tip)
