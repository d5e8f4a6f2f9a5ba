"""Core ML requested: the window's "What really runs" shows the pieces a Mac runs the model in, as inspect does."""

from __future__ import annotations

import importlib.util
import sys

import pytest

pytest.importorskip("pytestqt")

THREE_PIECES = "Core ML nodes 0–57 → CPU node 58 (MEAN) → Core ML nodes 59–60"


def _request_core_ml(qtbot, window) -> None:
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    combo = window.controls.delegate
    combo.setCurrentIndex(combo.findData("coreml"))
    combo.activated.emit(combo.currentIndex())  # what a click on the entry sends


@pytest.mark.skipif(sys.platform == "darwin", reason="off macOS Core ML falls back to the CPU; on macOS it runs")
def test_core_ml_request_shows_the_pieces_a_mac_runs(qtbot, make_window):
    window = make_window(model="efficientnet_lite0")
    _request_core_ml(qtbot, window)
    qtbot.waitUntil(lambda: "runs it in 3 pieces" in window.delegation.text(), timeout=30_000)
    text = window.delegation.text()
    assert "requested Core ML" in text  # the fallback to the CPU, as before
    assert f"Core ML on a Mac runs it in 3 pieces: {THREE_PIECES}" in text, text
    assert "per piece" not in text  # nothing ran in pieces here: no times to show
    tip = window.delegation.pieces.toolTip().splitlines()
    assert tip == [
        "Core ML on a Mac runs it in 3 pieces, in order:",
        "1. Core ML nodes 0–57",
        "2. CPU node 58 (MEAN)",
        "3. Core ML nodes 59–60",
    ]
    assert window.delegation.pieces.isVisible()
    # Back on the CPU: no pieces line.
    combo = window.controls.delegate
    combo.setCurrentIndex(combo.findData("cpu"))
    combo.activated.emit(combo.currentIndex())
    qtbot.waitUntil(lambda: "runs it in" not in window.delegation.text(), timeout=30_000)
    assert not window.delegation.pieces.isVisible()


def test_the_int8_model_shows_no_pieces(qtbot, make_window):
    """The delegate takes no integer-quantized node: nothing runs in Core ML pieces, and the panel says
    so once, in the coverage sentence, without a pieces line."""
    window = make_window(model="efficientnet_lite0_int8")
    _request_core_ml(qtbot, window)
    qtbot.waitUntil(lambda: getattr(window.delegation.report, "requested", "") == "coreml", timeout=30_000)
    text = window.delegation.text()
    assert "runs it in" not in text and not window.delegation.pieces.isVisible(), text


def test_pieces_without_reported_times_say_so(qtbot):
    """A partitioned Core ML session whose report has no per-piece times: "not reported", never a guess."""
    from app.backends.base import CoreMLMode, DelegationReport
    from app.coreml_mil.split import CoreMLPieces, PieceSummary
    from app.ui.panels.delegation import DelegationPanel

    panel = DelegationPanel()
    qtbot.addWidget(panel)
    pieces = (PieceSummary(0, "coreml", tuple(range(58)), ("CONV_2D",)), PieceSummary(1, "cpu", (58,), ("MEAN",)))
    report = DelegationReport("coreml", "coreml", "Core ML (compute units: all)", coreml_mode=CoreMLMode.PARTITIONED,
                              coreml_pieces=CoreMLPieces(pieces))  # fmt: skip
    panel.set_report(report, "m")
    assert "Core ML runs it in 2 pieces: Core ML nodes 0–57 → CPU node 58 (MEAN)" in panel.text()
    assert "First inference, per piece: not reported" in panel.text()
    assert "2. CPU node 58 (MEAN): not reported" in panel.pieces.toolTip()
    # A model Core ML does not split (side effects): one line says why, on a Linux fallback too.
    why = "the model has ops with side effects (variables, control flow)"
    fallback = DelegationReport("coreml", "cpu", "XNNPACK (CPU, 1 thread)", coreml_pieces=CoreMLPieces(not_split=why))
    panel.set_report(fallback, "m")
    assert f"Core ML on a Mac does not split it into pieces: {why}" in panel.text()
    assert "per piece" not in panel.text()


@pytest.mark.skipif(sys.platform != "darwin", reason="Core ML predictions need macOS")
@pytest.mark.skipif(importlib.util.find_spec("coremltools") is None, reason="coremltools is not installed")
def test_core_ml_on_a_mac_shows_each_pieces_first_inference_time(qtbot, make_window):
    window = make_window(model="efficientnet_lite0")
    _request_core_ml(qtbot, window)
    qtbot.waitUntil(lambda: "First inference, per piece" in window.delegation.text(), timeout=120_000)
    text = window.delegation.text()
    assert f"Core ML runs it in 3 pieces: {THREE_PIECES}" in text, text
    line = next(line for line in text.splitlines() if line.startswith("First inference, per piece: "))
    times = line.removeprefix("First inference, per piece: ").split(" → ")
    assert len(times) == 3 and all(t.endswith(" ms") and float(t.removesuffix(" ms")) > 0 for t in times), line
    report = window.delegation.report
    assert report is not None and report.used == "coreml"
    assert [round(t, 2) for t in report.coreml_pieces.first_inference_ms] == [float(t[:-3]) for t in times]
