"""The Numerics view (View → Numerics, off by default): where side A's delegate parts from the reference,
node by node, on the frame the window shows (app/live/numerics.py runs it in a thread of its own, never on
the inference thread). A run starts on the button only: cutting and compiling cost seconds per node
(docs/numerics.md). The first breaking node's row is highlighted, and framed in the node strip."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.live.controller import Side
from app.live.numerics import NumericsOutcome, NumericsRuns
from app.numerics.table import HEAD, cells

REFRESH_MS = 500
BREAK_COLOUR = "#ffcdd2"


class NumericsView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runs: NumericsRuns | None = None
        self._mark: Callable[[int | None], None] | None = None
        self._shown: NumericsOutcome | None = None
        self._what = ""  # the frame a run was asked for, when not the window's current one (A/B: a disagreement)
        layout = QVBoxLayout(self)
        head = QHBoxLayout()
        self.run_button = QPushButton("Check numerics")
        self.run_button.setToolTip("cut side A's model after its nodes and compare its delegate with the CPU")
        self.run_button.clicked.connect(self._start)
        self.every_node = QCheckBox("every node")
        self.every_node.setToolTip("one cut per node (slow) instead of a bisection for the first that breaks")
        head.addWidget(self.run_button)
        head.addWidget(self.every_node)
        head.addStretch(1)
        layout.addLayout(head)
        self.status = QLabel("Not run: a run cuts the model after its nodes and compiles each cut on the delegate.")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.table = QTableWidget(0, len(HEAD))
        self.table.setHorizontalHeaderLabels(HEAD)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        layout.addWidget(self.table, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

    def attach(self, runs: NumericsRuns, mark: Callable[[int | None], None] | None = None) -> None:
        """`mark`: called with the first breaking node (None: none) after each run (the node strip frames it)."""
        self._runs = runs
        self._mark = mark

    def _start(self) -> None:
        self.start()

    def start(self, side: Side = "a", frame_bgr: np.ndarray | None = None, what: str = "") -> None:
        """A run for `side` on `frame_bgr` (default: the window's frame); `what` names that frame in the status."""
        if self._runs is None:
            return
        if self._runs.start(every_node=self.every_node.isChecked(), side=side, frame_bgr=frame_bgr):
            self._what = what
            self._timer.start()
        self.refresh()

    def refresh(self) -> None:
        outcome = self._runs.latest() if self._runs is not None else None
        running = self._runs is not None and self._runs.running
        self.run_button.setEnabled(not running)
        if outcome is None:
            return
        if outcome.seconds is None:
            self.status.setText(f"Checking {outcome.asked}…")
            return
        self._timer.stop()
        if outcome is self._shown:
            return
        self._shown = outcome
        if outcome.error is not None or outcome.result is None:
            self.status.setText(f"{outcome.asked}: {outcome.error}")
            self.table.setRowCount(0)
            if self._mark is not None:
                self._mark(None)
            return
        self.show_result(outcome)

    def show_result(self, outcome: NumericsOutcome) -> None:
        result = outcome.result
        assert result is not None  # refresh shows an error instead
        scan = result.scan
        first = f"first breaking node {scan.first_breaking}" if scan.first_breaking is not None else "no breaking node"
        _, _, cosine, snr = result.end_to_end.cells()
        what = f", {self._what}" if self._what else ""
        self.status.setText(
            f"{outcome.asked} ({result.precision}, {result.inputs.description}{what}): {first}; end to end cosine "
            f"{cosine}, SNR {snr} dB; {scan.cost.cuts_compiled} cuts in {outcome.seconds or 0:.1f} s"
        )
        self.table.setRowCount(len(scan.rows))
        for r, row in enumerate(scan.rows):
            for c, text in enumerate(cells(row)):
                item = QTableWidgetItem(text)
                if row.node == scan.first_breaking:
                    item.setBackground(QColor(BREAK_COLOUR))
                if row.why or row.not_run:
                    item.setToolTip(row.why or row.not_run or "")
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        if self._mark is not None:
            self._mark(scan.first_breaking)
        if scan.first_breaking is not None:
            index = next(i for i, row in enumerate(scan.rows) if row.node == scan.first_breaking)
            first_item = self.table.item(index, 0)
            if first_item is not None:
                self.table.scrollToItem(first_item)

    def stop(self) -> None:
        """The window closes: stop polling and give a run in flight a moment (its thread is a daemon)."""
        self._timer.stop()
        if self._runs is not None:
            self._runs.join(timeout=2.0)

    def row_colour(self, row: int) -> str:
        """The background of a table row (tests read the highlight)."""
        item = self.table.item(row, 0)
        return item.background().color().name() if item is not None else ""
