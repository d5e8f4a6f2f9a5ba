"""The delegation panel: what really runs, as the runtime reported it, and what the CPU time says."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.backends.base import SessionReport
from app.describe import delegation_facts, offload_sentence
from app.metrics import MetricsSnapshot

_COLOURS = {"ok": "#1b5e20", "info": "#555555", "warn": "#b71c1c"}


class DelegationPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.facts = QLabel("No model open yet.")
        self.offload = QLabel("")
        self.switch = QLabel("")
        for label in (self.facts, self.offload, self.switch):
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(label)
        layout.addStretch(1)
        self.report: SessionReport | None = None

    def set_report(self, report: SessionReport | None, model_label: str = "") -> None:
        self.report = report
        if report is None:
            self.facts.setText("No model open yet.")
            return
        rows = [f"<tr><td><b>Model</b></td><td>{html.escape(model_label)}</td></tr>"] if model_label else []
        for fact in delegation_facts(report):
            colour = _COLOURS[fact.level]
            rows.append(
                f"<tr><td valign='top'><b>{html.escape(fact.label)}</b>&nbsp;</td>"
                f"<td style='color:{colour}'>{html.escape(fact.value)}</td></tr>"
            )
        self.facts.setText("<table cellspacing='2'>" + "".join(rows) + "</table>")

    def set_switch_cost(self, text: str) -> None:
        self.switch.setText(f"<i>{html.escape(text)}</i>" if text else "")

    def set_metrics(self, snap: MetricsSnapshot, backend: str, shared: bool = False) -> None:
        stats = snap.latency.get("inference")
        if not stats or not stats.count:
            self.offload.setText("")
            return
        sentence = offload_sentence(snap.cpu_per_wall, backend, snap.cpu_ms_per_inference, stats.mean)
        if shared:  # A/B: the CPU figure is this side's thread, and the two sides queue for cores
            sentence += " (A/B running: two sides share the CPU, so wall time includes waiting for a core.)"
        self.offload.setText(f"<b>Offload</b>: {html.escape(sentence)}")

    def text(self) -> str:
        """Everything shown, as plain text (tests and the clipboard)."""
        doc = QTextDocument()
        doc.setHtml(self.facts.text() + "<br>" + self.offload.text() + "<br>" + self.switch.text())
        return doc.toPlainText()
