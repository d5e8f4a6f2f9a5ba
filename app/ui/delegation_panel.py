"""The delegation panel: what really runs, as the runtime reported it, and what the CPU time says."""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.backends.base import DelegationReport
from app.bottleneck import Bottleneck
from app.coverage.text import left_on_cpu_lines
from app.describe import coreml_prediction_sentence, delegation_panel_facts, offload_sentence
from app.metrics import MetricsSnapshot
from app.ui.coverage_view import CoverageStrip

_COLOURS = {"ok": "#1b5e20", "info": "#555555", "warn": "#b71c1c"}


class DelegationPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.facts = QLabel("No model open yet.")
        self.coverage = QLabel("")
        self.strip = CoverageStrip()
        self.legend = QLabel("")
        self.left_on_cpu = QLabel("")
        self.offload = QLabel("")
        self.bound = QLabel("")  # which stage sets the rate (app/bottleneck.py)
        self.switch = QLabel("")
        labels = (self.coverage, self.strip, self.legend, self.left_on_cpu, self.facts, self.offload, self.bound)
        for label in (*labels, self.switch):
            if isinstance(label, QLabel):
                label.setWordWrap(True)
                # Wrap to the dock's width instead of widening the panel past it (the strip must stay in view).
                label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
                label.setTextFormat(Qt.TextFormat.RichText)
                label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(label)
        self.strip.setVisible(False)
        layout.addStretch(1)
        self.report: DelegationReport | None = None

    def set_report(
        self,
        report: DelegationReport | None,
        model_label: str = "",
        labels: str = "",
        label_warnings: Sequence[str] = (),
    ) -> None:
        self.report = report
        if report is None:
            self.facts.setText("No model open yet.")
            return
        rows = [f"<tr><td><b>Model</b></td><td>{html.escape(model_label)}</td></tr>"] if model_label else []
        if labels:  # which labels are in use, and in red when they do not fit the model's outputs
            text = labels + ("; " + "; ".join(label_warnings) if label_warnings else "")
            colour = _COLOURS["warn" if label_warnings else "ok"]
            rows.append(
                f"<tr><td valign='top'><b>Labels</b></td><td style='color:{colour}'>{html.escape(text)}</td></tr>"
            )
        for fact in delegation_panel_facts(report):
            colour = _COLOURS[fact.level]
            rows.append(
                f"<tr><td valign='top'><b>{html.escape(fact.label)}</b>&nbsp;</td>"
                f"<td style='color:{colour}'>{html.escape(fact.value)}</td></tr>"
            )
        self.facts.setText("<table cellspacing='2'>" + "".join(rows) + "</table>")
        self._show_coverage(report)

    def _show_coverage(self, report: DelegationReport) -> None:
        """The node strip (what runs where, node by node) and, when Core ML was asked for, what the
        TFLite Core ML delegate would take, with the nodes it would leave on the CPU and why."""
        rows = []
        if report.coverage is not None:
            rows.append((f"Runs now: {report.used.upper() if report.used != 'coreml' else 'Core ML'}", report.coverage))
        parts, left_parts = [], []
        sentence = coreml_prediction_sentence(report)
        if sentence and report.predicted is not None:
            rows.append(("Core ML (predicted)", report.predicted))
            parts.append(f"<b>{html.escape(sentence)}</b>")
            if report.predicted.log:
                parts.append(f"<span style='color:{_COLOURS['info']}'>Its log would say: "
                             f"<tt>{html.escape(report.predicted.log)}</tt></span>")  # fmt: skip
            left = left_on_cpu_lines(report.predicted)
            if left:
                left_parts.append("Left on the CPU by the Core ML delegate:<br>" + "<br>".join(
                    f"&nbsp;• {html.escape(line)}" for line in left))  # fmt: skip
        self.coverage.setText("<br>".join(parts))
        self.coverage.setVisible(bool(parts))
        self.left_on_cpu.setText("<br>".join(left_parts))
        self.left_on_cpu.setVisible(bool(left_parts))
        self.strip.set_rows(rows)
        self.legend.setText(
            "<small>Nodes in execution order. <span style='color:#2e7d32'>■</span><span style='color:#1565c0'>■</span> "
            "delegated (a colour change is a partition boundary), <span style='color:#c62828'>■</span> left on the "
            "CPU, <span style='color:#9e9e9e'>■</span> not reported. Hover a node for its op and reason.</small>"
            if self.strip.rows
            else ""
        )

    def set_switch_cost(self, text: str) -> None:
        self.switch.setText(f"<i>{html.escape(text)}</i>" if text else "")

    def set_metrics(
        self, snap: MetricsSnapshot, backend: str, shared: bool = False, bottleneck: Bottleneck | None = None
    ) -> None:
        stats = snap.latency.get("inference")
        if not stats or not stats.count:
            self.offload.setText("")
            self.bound.setText("")
            return
        sentence = offload_sentence(snap.cpu_per_wall, backend, snap.cpu_ms_per_inference, stats.mean)
        if snap.gpu_busy_ms_per_inference:  # the GPU's own evidence: a waiting thread may spin
            sentence += f" NVML: the GPU itself was busy {snap.gpu_busy_ms_per_inference:.2f} ms per inference."
        if shared:  # A/B: the CPU figure is this side's threads, and the two sides queue for cores
            sentence += " (A/B running: two sides share the CPU, so wall time includes waiting for a core.)"
        self.offload.setText(f"<b>Offload</b>: {html.escape(sentence)}")
        self.bound.setText(f"<b>Rate</b>: {html.escape(bottleneck.sentence)}" if bottleneck else "")

    def text(self) -> str:
        """Everything shown, as plain text (tests and the clipboard)."""
        doc = QTextDocument()
        widgets = (self.coverage, self.left_on_cpu, self.facts, self.offload, self.bound, self.switch)
        doc.setHtml("<br>".join(w.text() for w in widgets))
        return doc.toPlainText()
