"""Review a recorded session in the same plots the live window uses."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMainWindow, QVBoxLayout, QWidget

from app.recording import read_recording
from app.session_series import session_series
from app.ui.plots import LivePlots


class ReviewWindow(QMainWindow):
    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        session = read_recording(path)  # OSError/ValueError: the caller shows the message
        self.setWindowTitle(f"Recording: {path.name} — Delegate Scope")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        t, values, markers = session_series(session)
        inferences = [r for r in session.rows if not r.get("event")]
        meta = session.metadata
        backends = sorted(
            {
                r["backend_used"]
                if r["backend_requested"] == r["backend_used"]
                else f"{r['backend_requested']}→{r['backend_used']}"
                for r in inferences
            }
        )
        models = sorted({r["model"] for r in inferences})
        duration = float(t[-1] - t[0]) if len(t) > 1 else 0.0
        parts = [
            f"<b>{html.escape(path.name)}</b>: {len(inferences)} inferences over {duration:.1f} s",
            "model " + html.escape(", ".join(models) or "?"),
            "backend " + html.escape(", ".join(backends) or "?"),
        ]
        lost = meta.get("lost_rows")
        if isinstance(lost, int) and not isinstance(lost, bool) and lost > 0:  # the sidecar is untrusted
            parts.append(f"<span style='color:#b71c1c'>{lost} rows lost while recording</span>")
        if session.skipped_lines:
            parts.append(f"{session.skipped_lines} incomplete line(s) skipped (the recording was cut short)")
        if meta and meta.get("complete") is False:
            parts.append("<span style='color:#b71c1c'>not stopped cleanly</span>")
        self.summary = QLabel(" · ".join(parts))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.plots = LivePlots()
        self.plots.set_static(t, values, markers)
        self.inferences = len(inferences)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addWidget(self.summary)
        layout.addWidget(self.plots, 1)
        self.setCentralWidget(central)
        self.resize(1200, 420)
        for keys in (QKeySequence(Qt.Key.Key_Escape), QKeySequence(QKeySequence.StandardKey.Close)):
            QShortcut(keys, self, activated=self.close)  # Esc and Ctrl+W (Cmd+W) close a review
