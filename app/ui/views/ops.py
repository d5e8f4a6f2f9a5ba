"""The Ops view: the running session's per-op profile, refreshed while profiling is on (off by default).

Profiles come from app/live/ops.py (app.profile.background.LiveProfiler: a runner of its own in a background
thread at a low rate; the live inference thread keeps its session and its timing); this view renders them.
Rows are coloured by where each op ran, in the node strip's colours (views/coverage.py): a delegated
partition's colour, red for the ops off the accelerator. In A/B, side B's table stands beside side A's.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.live.ops import OpsProfiles
from app.profile.background import INTERVAL_S, LiveProfile
from app.profile.text import CONTENDED_SHARE
from app.profile.types import OpTime, Placement, Profile

REFRESH_MS = 500
COLUMNS = ("#", "node", "op", "kernel", "where", "least ms", "median ms", "mean ms", "share %")
COLUMN_WIDTHS = (30, 38, 118, 180, 48, 64, 74, 64, 58)
KERNEL = 3
PARTITION_COLOURS = ("#2e7d32", "#1565c0", "#00838f", "#6a1b9a")  # as views/coverage.py's node strip
CPU_COLOUR = "#c62828"


def op_colour(op: OpTime) -> QColor:
    if op.placement is Placement.CPU:
        return QColor(CPU_COLOUR)
    return QColor(PARTITION_COLOURS[(op.partition or 0) % len(PARTITION_COLOURS)])


def _item(value: str | float) -> QTableWidgetItem:
    item = QTableWidgetItem()
    item.setData(Qt.ItemDataRole.DisplayRole, value)  # numbers sort as numbers
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    return item


def _ms_item(value: float | None) -> QTableWidgetItem:
    return _item("-" if value is None else round(value, 3))


class SideTable(QWidget):
    """One side's profile: a summary and the op table in run order (click a header to sort)."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel(f"<b>{html.escape(title)}</b>")
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        header = self.table.horizontalHeader()
        for column, width in enumerate(COLUMN_WIDTHS):
            header.resizeSection(column, width)
        header.setSectionResizeMode(KERNEL, QHeaderView.ResizeMode.Stretch)  # the runtime's kernel name
        header.setStretchLastSection(True)  # when the kernel column is hidden (A/B)
        share = self.table.horizontalHeaderItem(7)
        assert share is not None  # set by setHorizontalHeaderLabels above
        share.setToolTip("share of the ops' time, by median per run")
        layout.addWidget(self.title)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)

    def show_profile(self, live: LiveProfile | None, now: float) -> None:
        if live is None:
            self.summary.setText("waiting for the first profile…")
            self.table.setRowCount(0)
            return
        name = f"{live.target.model} on {live.target.delegate}"
        if live.profile is None:
            self.summary.setText(f"{html.escape(name)}: no profile ({html.escape(live.error or 'unknown error')})")
            self.table.setRowCount(0)
            return
        p = live.profile
        self.summary.setText(_summary(p, now - live.taken_at))
        medians = [op.median_ms if op.median_ms is not None else op.ms for op in p.ops]
        total = sum(medians) or 1.0  # shares by median: a few runs on a busy machine make means jumpy
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(p.ops))
        for row, op in enumerate(p.ops):
            least, mean = p.least_and_mean(op)  # as `profile` prints them (app/profile/cpu.py run_statistics)
            node = (
                f"{min(op.nodes)}-{max(op.nodes)}" if len(op.nodes) > 1 else ("-" if op.node is None else str(op.node))
            )
            where = "CPU" if op.placement is Placement.CPU else f"part {op.partition}"
            cells = (
                _item(op.order),
                _item(node),
                _item(op.op),
                _item(op.kernel),
                _item(where),
                _ms_item(least),
                _ms_item(op.median_ms),
                _ms_item(mean),
                _item(round(100 * medians[row] / total, 1)),
            )
            colour = op_colour(op)
            tint = QColor(colour)
            tint.setAlpha(45)
            for column, cell in enumerate(cells):
                cell.setBackground(tint)
                cell.setToolTip(f"{op.op}: {op.kernel}; {where}; time from the {op.source.value}")
                self.table.setItem(row, column, cell)
            cells[4].setBackground(colour)
            cells[4].setForeground(QColor("white"))
        self.table.setSortingEnabled(True)


def _summary(p: Profile, age_s: float) -> str:
    whole = f"run {p.wall_ms:.2f} ms" if p.invoke_ms is None else f"Invoke {p.invoke_ms:.2f} ms"
    off = p.off_accelerator()
    share = 100 * p.off_accelerator_ms / p.ops_ms if p.ops_ms > 0 else 0.0
    colour = CPU_COLOUR if off else PARTITION_COLOURS[0]
    text = (
        f"{html.escape(p.model)} on <b>{html.escape(p.used)}</b> ({html.escape(p.accelerator)}) · "
        f"ops {p.ops_ms:.2f} ms of {whole}, {p.runs} runs, {age_s:.0f} s ago · "
        f"<span style='color:{colour}'>off the accelerator: {len(off)} op(s), {share:.1f}%</span>"
    )
    if p.least_disturbed:
        text += f"<br>op times: each op's least-disturbed of the {p.runs} runs, as <code>profile</code> gives them"
        if p.ops_mean_ms is not None:
            text += f" (means: ops {p.ops_mean_ms:.2f} ms)"
    if p.cpu_share is not None and p.cpu_share < CONTENDED_SHARE:
        # On a busy machine the profiler (nice +10) waits for the CPU; its wall-time events count the wait.
        text += (
            f"<br><span style='color:{CPU_COLOUR}'>taken under contention: the runs had the CPU "
            f"{100 * p.cpu_share:.0f}% of their wall time; Invoke includes waiting</span>"
        )
    if p.fallback_reason:
        text += f"<br>fell back to CPU: {html.escape(p.fallback_reason)}"
    for line in p.not_reported:
        text += f"<br><span style='color:#757575'>not reported: {html.escape(line)}</span>"
    return text


class OpsView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.profiler: OpsProfiles | None = None
        self.latest: Mapping[str, LiveProfile] = {}
        layout = QVBoxLayout(self)
        self.enable = QCheckBox(f"Profile ops every {INTERVAL_S:.0f} s (a separate runner, low priority)")
        self.enable.setToolTip(
            "Off by default. While on, a background thread profiles the session's model and delegate with "
            "LiteRT's own profiler on a runner of its own (docs/profile.md)."
        )
        self.enable.toggled.connect(self.set_profiling)
        self.status = QLabel("profiling is off")
        tables = QHBoxLayout()
        self.side_a = SideTable("A")
        self.side_b = SideTable("B")
        self.side_b.hide()
        tables.addWidget(self.side_a, 1)
        tables.addWidget(self.side_b, 1)
        layout.addWidget(self.enable)
        layout.addWidget(self.status)
        layout.addLayout(tables, 1)
        self._timer = QTimer(self, interval=REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

    def attach(self, profiler: OpsProfiles) -> None:
        self.profiler = profiler

    def set_profiling(self, on: bool) -> None:
        if self.profiler is None:
            return
        if self.enable.isChecked() != on:
            self.enable.setChecked(on)  # toggled() calls back here
            return
        if on:
            self.profiler.start()
            self._timer.start()
            self.status.setText("profiling: the first profile takes a few seconds…")
        else:
            self.profiler.stop()
            self._timer.stop()
            self.status.setText("profiling is off (the tables show the last profile)")

    def refresh(self) -> None:
        if self.profiler is None:
            return
        latest = self.latest = self.profiler.latest()
        now = time.monotonic()
        comparing = self.profiler.comparing
        self.side_b.setVisible(comparing)
        for table in (self.side_a, self.side_b):  # two tables share the width: the kernel name goes to the tooltip
            table.table.setColumnHidden(KERNEL, comparing)
        self.side_a.title.setText("<b>A</b>" if comparing else "")
        for side, table in (("a", self.side_a), ("b", self.side_b)):
            if side == "b" and not comparing:
                continue
            entry = latest.get(side)
            table.show_profile(entry, now)
        if self.profiler.running:
            self.status.setText(f"profiling every {INTERVAL_S:.0f} s on a separate runner")

    def stop(self) -> None:
        self._timer.stop()
        if self.profiler is not None:
            self.profiler.stop()
