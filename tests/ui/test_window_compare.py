"""A/B in the real window (issue 24, item 8): any .tflite and labels file for B, B's delegation
facts beside A's, and a speed ratio that says what it is computed over."""

from __future__ import annotations

import itertools
import re
import shutil

import pytest

pytest.importorskip("pytestqt")


def _choose(combo, data) -> None:
    """Pick an entry the way a user does: the box changes, then `activated` fires."""
    index = combo.findData(data)
    assert index >= 0, data
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


@pytest.mark.timeout(180)
def test_b_can_be_any_tflite_with_its_labels_and_shows_its_facts(qtbot, make_window, coral, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    model = tmp_path / "mobilenet_v1_0.25_128_quant.tflite"  # no labels beside it: they come from a file
    shutil.copy(coral / "mobilenet_v1_0.25_128_quant.tflite", model)
    labels = tmp_path / "b_labels.txt"
    shutil.copy(coral / "imagenet_labels.txt", labels)
    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    controls = window.controls
    controls.compare.setChecked(True)  # as a click does: A/B starts with the default B
    assert window.live.comparing

    # B → "Open .tflite…": the file dialog answers with a third-party model.
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(model), ""))
    _choose(controls.b_model, "__open__")
    assert window.live.comparing and str(window.live.config("b").model) == str(model)
    assert controls.b_model.currentData() == str(model)
    # B → a labels file for that model.
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(labels), ""))
    controls.b_labels.click()
    assert window.live.config("b").labels == labels
    assert controls.b_labels.text() == "b_labels.txt"
    qtbot.waitUntil(lambda: window.live.comparison().summary.frames >= 10, timeout=60_000)
    result_b = window.live.latest_result("b")
    assert result_b is not None and result_b.top[0].label and not result_b.top[0].label.startswith("class ")

    # "What really runs" shows B's facts beside A's.
    qtbot.waitUntil(lambda: "mobilenet_v1_0.25_128_quant" in window.delegation.text(), timeout=10_000)
    text = window.delegation.text()
    assert "efficientnet_lite0" in text and "b_labels.txt" in text
    assert text.count("XNNPACK") >= 2, text  # both sides' accelerator

    # The speed ratio says what it is computed over: medians of the same recent frames, counted.
    qtbot.waitUntil(lambda: "frames both inferred" in window.compare_panel.summary.text(), timeout=10_000)
    summary = window.compare_panel.summary.text()
    match = re.search(r"over the last ([\d,]+) frames both inferred, (\d+) s", summary)
    assert match, summary
    assert 1 <= int(match.group(1).replace(",", "")) <= 300


@pytest.mark.timeout(180)
def test_the_speed_ratio_is_steady_over_its_window(qtbot, make_window):
    """Ratio of medians over up to 300 paired frames: read a second apart, it does not jump, unlike the ratio
    of the two sides' 5 s p50s it replaced (those swung 1.5x-1.9x within seconds). A real change of load
    (the suite's other worker starting a heavy test) moves it too, as a trend: 1.67 -> 2.45 in 12 s once,
    and in a fresh clone 1.60, 1.64, 1.65, 1.65, 1.65, 1.72 ... 1.93 while the p50s' ratio read 1.63-1.79.
    So what is held is each second's step: under 10%, or no larger than the p50s' own largest step."""
    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    window.set_compare(("efficientnet_lite0_int8", "cpu"))
    qtbot.waitUntil(lambda: window.live.comparison().summary.frames >= 150, timeout=90_000)
    ratios, p50_ratios = [], []
    for _ in range(12):  # what the panel says, read once a second
        text = window.compare_panel.summary.text()
        match = re.search(r"B is ([\d.]+)× (faster|slower) than A|same speed", text)
        assert match, text
        ratio = 1.0 if match.group(1) is None else float(match.group(1))
        ratios.append(ratio if match.group(2) != "slower" else 1 / ratio)
        a, b = (window.live.snapshot(side).latency.get("inference") for side in ("a", "b"))
        if a is not None and b is not None and a.count and b.count and b.p50 > 0:
            p50_ratios.append(a.p50 / b.p50)
        qtbot.wait(1000)
    def largest_step(values: list[float]) -> float:
        return max((max(a, b) / min(a, b) for a, b in itertools.pairwise(values)), default=1.0)

    assert largest_step(ratios) < max(1.1, largest_step(p50_ratios)), (ratios, p50_ratios)
