"""The window's layout at the default and at a small size, and its naming."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtGui import QTextDocument, QTextOption
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QPushButton, QStyle, QStyleOptionComboBox

pytest.importorskip("pytestqt")


def _fits_across(widget, viewport) -> bool:
    left = widget.mapTo(viewport, QPoint(0, 0)).x()
    return left >= 0 and left + widget.width() <= viewport.width()


def _shown_text_width(combo: QComboBox) -> int:
    """Pixels the closed combo has for its text (the box less its arrow and frame)."""
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    field = combo.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                         QStyle.SubControl.SC_ComboBoxEditField, combo)  # fmt: skip
    return field.width()


def _lines_of(label, name: str) -> int:
    """How many lines `name` takes in the rich-text label at the label's width."""
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    doc.setHtml(label.text())
    doc.setTextWidth(label.contentsRect().width())
    doc.documentLayout()  # lays the document out
    block = doc.begin()
    while block.isValid():
        if block.text().replace("\xa0", " ").strip() == name:
            return block.layout().lineCount()
        block = block.next()
    raise AssertionError(f"{name!r} not in the panel")


@pytest.mark.slow
def test_at_the_default_size_controls_and_facts_fit(qtbot, make_window):
    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=30_000)  # "(not here)" labels in
    qtbot.waitUntil(lambda: "Nodes delegated" in window.delegation.text(), timeout=30_000)
    qtbot.wait(300)
    area = window.controls_dock.widget()
    viewport = area.viewport()
    assert area.horizontalScrollBar().maximum() == 0, "the Controls scroll sideways"
    assert area.verticalScrollBar().maximum() == 0, "the Controls need a vertical scrollbar"
    controls = window.controls
    fields = controls.findChildren(QComboBox) + controls.findChildren(QAbstractSpinBox)
    for widget in [w for w in fields if w.isVisible()]:
        assert _fits_across(widget, viewport), f"{widget.objectName() or type(widget).__name__} is cut off"
    # A/B on: B's rows appear, "B runs on" whole.
    controls.compare.setChecked(True)
    qtbot.wait(300)
    for widget in (controls.b_model, controls.b_delegate, *controls.findChildren(QPushButton)):
        assert widget.isVisible() and _fits_across(widget, viewport), widget.toolTip()
    assert area.horizontalScrollBar().maximum() == 0
    controls.compare.setChecked(False)
    # The model box shows the whole name of the longest bundled model.
    assert window.switch_model("efficientnet_lite0_int8")
    combo = controls.model
    assert combo.fontMetrics().horizontalAdvance(combo.currentText()) <= _shown_text_width(combo)
    # Fact names are one line each ("Nodes / delegated" read as two rows).
    qtbot.waitUntil(lambda: "efficientnet_lite0_int8" in window.delegation.text(), timeout=30_000)
    # (a CPU run's XNNPACK row stands for "Fully accelerated" and "Ops left on CPU": the CPU either way)
    for name in ("Nodes delegated", "XNNPACK", "First inference"):
        assert _lines_of(window.delegation.facts, name) == 1, name


def test_a_small_window_keeps_the_badge_and_the_plots(qtbot, make_window):
    window = make_window()
    window.resize(360, 260)
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 5, timeout=30_000)
    qtbot.waitUntil(lambda: window.video.backend_label != "", timeout=10_000)
    qtbot.wait(500)
    fps = window.plots.plots["fps"]
    assert window.plots.isVisible() and window.plots.height() >= 100
    assert fps.isVisible() and fps.getViewBox().height() >= 40, fps.getViewBox().height()
    video = window.video
    video.repaint()
    assert video.rect().toRectF().contains(video.badge_rect)
    assert video.panel_rects and not any(panel.intersects(video.badge_rect) for panel in video.panel_rects)


def test_core_ml_is_named_one_way_and_unknown_cpu_ops_are_not_green(qtbot, make_window):
    from app.backends.base import DelegationReport

    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    combo = window.controls.delegate
    combo.setCurrentIndex(combo.findData("coreml"))
    combo.activated.emit(combo.currentIndex())
    qtbot.waitUntil(lambda: "requested" in window.delegation.text(), timeout=30_000)
    qtbot.waitUntil(lambda: window.plots.marker_count() >= 2, timeout=10_000)
    qtbot.wait(400)  # a stats tick: badge and markers follow the report
    markers = [item.label.textItem.toPlainText() for item in window.plots.plots["fps"].items
               if getattr(item, "label", None) is not None]  # fmt: skip
    shown = [window.delegation.text(), window.video.backend_label, window.statusBar().currentMessage(),
             combo.currentText(), *markers]  # fmt: skip
    assert not [text for text in shown if "COREML" in text], shown
    assert "requested Core ML" in window.delegation.text()
    assert any("Core ML→CPU" in text for text in markers), markers
    # A partly accelerated model whose runtime does not name the ops left on the CPU (LiteRT's GPU):
    # "Ops left on CPU" must not read as a green "none" under a red "Fully accelerated: no".
    partly = DelegationReport("gpu", "gpu", "LiteRT GPU", fully_accelerated=False, nodes_total=64)
    window.delegation.set_report(partly, "m")
    row = next(r for r in window.delegation.facts.text().split("<tr>") if "Ops&nbsp;left" in r or "Ops left" in r)
    assert "#1b5e20" not in row and "none" not in row, row


def _scene_right(item) -> float:
    return item.mapRectToScene(item.boundingRect()).right()


def test_with_ab_on_every_plot_legend_and_fact_is_whole_at_1280x860(qtbot, make_window):
    """A/B's 'B inference mean' widened the latency legend, and hidden clock and power plots kept their
    width: the CPU % plot ran past the right edge ("not readable he", "syste"). B's facts column was cut
    at the dock's edge by long words ('(TfLiteXNNPackDelegate)')."""
    window = make_window(compare_model="efficientnet_lite0_int8")
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.delegation.report_b is not None, timeout=60_000)
    qtbot.wait(400)
    plots = window.plots
    room = plots.viewport().width()
    shown = [name for name, plot in plots.plots.items() if plot.isVisible()]
    assert shown[:3] == ["fps", "latency", "cpu"], shown
    for name in shown:
        assert _scene_right(plots.plots[name]) <= room, f"the {name} plot runs past the right edge"
        assert _scene_right(plots.legends[name]) <= room, f"the {name} legend runs past the right edge"
    assert plots.plots["cpu"].width() > 200  # not squeezed to nothing either
    label = window.delegation.facts
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    option = doc.defaultTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)  # as a QLabel wraps: at word boundaries only
    doc.setDefaultTextOption(option)
    doc.setHtml(label.text())
    width = label.contentsRect().width()
    doc.setTextWidth(width)
    for table in doc.rootFrame().childFrames():  # the facts table, no wider than the dock's label
        right = doc.documentLayout().frameBoundingRect(table).right()
        assert right <= width + 1, f"the facts table is {right:.0f} px wide in {width} px"


def test_a_model_the_runtime_refuses_says_why_not_waiting(qtbot, make_window, tmp_path):
    """A model whose custom op this runtime lacks (as PoseNet's decoder): the label panel said "waiting for
    the first result…" under the Stopped banner, and the panel "No model open yet"."""
    from app.pipeline import State
    from tests.builders.tflite_builder import GraphBuilder

    g = GraphBuilder()
    image = g.input((1, 8, 8, 3))
    relu = g.tensor((1, 8, 8, 3))
    g.op("RELU", [image], [relu])
    scores = g.tensor((1, 10))
    g.custom("PosenetDecoderOp", [relu], [scores])
    model = tmp_path / "custom_op.tflite"
    model.write_bytes(g.build([scores]))
    window = make_window(model=str(model))
    qtbot.waitUntil(lambda: window.live.status().state == State.ERROR, timeout=30_000)
    qtbot.waitUntil(lambda: "PosenetDecoderOp" in window.video.no_result, timeout=10_000)
    qtbot.waitUntil(lambda: bool(window.video.panel_texts), timeout=10_000)
    window.video.repaint()
    shown = " ".join(" ".join(rows) for rows in window.video.panel_texts)
    assert "PosenetDecoderOp" in shown and "waiting for the first result" not in shown, shown
    text = window.delegation.text()
    assert "custom_op.tflite did not open" in text and "PosenetDecoderOp" in text, text
    assert window.status_label.text().startswith("error") and "PosenetDecoderOp" in window.status_label.toolTip()


def test_a_file_name_in_the_facts_wraps_between_its_parts_never_before_its_extension(qtbot, make_window):
    """At the default 1280x860 the Labels row read "sidecar labels imagenet_labels." over "txt": a name
    may wrap after '_' or '/', a dot inside a name; never at the dot of its extension or a number's. The
    panel's own rich text is laid out at every width from a narrow dock's to a wide one's."""
    from app.ui.panels.delegation import _BREAK, _breakable

    assert _breakable("imagenet_labels.txt").replace(_BREAK, "|") == "imagenet_|labels.txt"
    assert _breakable("/m/a.b/x.tflite 5.8 ms").replace(_BREAK, "|") == "/|m/|a.b/|x.tflite 5.8 ms"
    assert _breakable("litert.tools.run_model").replace(_BREAK, "|") == "litert.|tools.|run_|model"
    assert _breakable("mobilenetv2labels.tflite").replace(_BREAK, "|") == "mobile|netv2l|abels.tflite"  # long
    window = make_window()
    qtbot.waitUntil(lambda: "sidecar labels imagenet_labels.txt" in window.delegation.text(), timeout=30_000)
    label = window.delegation.facts
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    option = doc.defaultTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)  # as a QLabel wraps
    doc.setDefaultTextOption(option)
    doc.setHtml(label.text())
    wrapped = 0
    for width in range(150, 500, 2):
        doc.setTextWidth(width)
        doc.documentLayout()
        block = doc.begin()
        while block.isValid() and not block.text().startswith("sidecar labels"):
            block = block.next()
        assert block.isValid(), label.text()
        layout, text = block.layout(), block.text()
        spans = [(layout.lineAt(i).textStart(), layout.lineAt(i).textLength()) for i in range(layout.lineCount())]
        lines = [text[start : start + length].replace(_BREAK, "").strip() for start, length in spans]
        assert not any(line.endswith(".") for line in lines), (width, lines)
        wrapped += len(lines) > 1
    assert wrapped, "the row never wrapped: the widths tried say nothing"
