"""The Ops view: the running session's per-op profile, refreshed while profiling is on (off by default).

Profiles come from app/live/ops.py (app.profile.background.LiveProfiler: a runner of its own in a background
thread at a low rate; the live inference thread keeps its session and its timing); this view renders them.
Rows are coloured by where each op ran, in the node strip's colours (views/coverage.py): a delegated
partition's colour, red for the ops off the accelerator. In A/B, side B's table goes under side A's while the
dock is narrow (its default) and beside it once the view is wide enough for two.

The dock is narrow and short at 1280×860 (a tab above the Controls), so the tables come first: each side's
summary is one line (the whole of it behind the ▸ button and in the line's tooltip), the contention warning
one line, the columns as wide as their contents and the op name elided (whole in the row's tooltip).
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.live.ops import OpsProfiles
from app.profile.background import INTERVAL_S, LiveProfile
from app.profile.text import CONTENDED_SHARE
from app.profile.types import OpTime, Placement, Profile
from app.ui.views.elided_line import ElidedLine, Part

REFRESH_MS = 500
COLUMNS = ("#", "node", "op", "kernel", "where", "least", "median", "mean", "%")
COLUMN_TIPS = (
    "the op's place in the run (click to sort back to run order)",
    "the graph node(s) it runs",
    "the op (the whole name in the row's tooltip)",
    "the runtime's kernel (in the row's tooltip while the column is hidden)",
    "where it ran: a delegated partition, or CPU (off the accelerator)",
    "ms per run: the op's least-disturbed time over the profiled runs (their minimum), as the profile command gives it",
    "ms per run: the median over the profiled runs",
    "ms per run: the mean over the profiled runs",
    "% of the ops' time, by median per run",
)
OP, KERNEL, WHERE = 2, 3, 4
PAD = 8  # a column's width beyond its title: the header's margins
OP_ROOM = "DEPTHWISE_CONV_2D"  # the kernel column shows once the op column has this much and the kernel 2×
WIDE = 720  # the view's width from which A/B's two tables stand side by side (each about a default dock's)
PARTITION_COLOURS = ("#2e7d32", "#1565c0", "#00838f", "#6a1b9a")  # as views/coverage.py's node strip
CPU_COLOUR = "#c62828"
NOTE_COLOUR = "#757575"


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
    """One side's profile: a one-line summary (▸ opens the whole) and the op table in run order (click a
    header to sort)."""

    def __init__(self, side: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.side = side
        self.comparing = False  # the side's letter leads its summary in A/B
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        head = QHBoxLayout()
        head.setSpacing(2)
        self.more = QToolButton()
        self.more.setArrowType(Qt.ArrowType.RightArrow)
        self.more.setAutoRaise(True)
        self.more.setCheckable(True)
        self.more.setFixedSize(self.fontMetrics().height() + 2, self.fontMetrics().height() + 2)
        self.more.setToolTip("the whole summary")
        self.more.toggled.connect(self._show_details)
        self.summary = ElidedLine()
        head.addWidget(self.more)
        head.addWidget(self.summary, 1)
        self.details = QLabel("")  # the whole summary, under ▸
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.hide()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for column, tip in enumerate(COLUMN_TIPS):
            header_item = self.table.horizontalHeaderItem(column)
            assert header_item is not None  # set by setHorizontalHeaderLabels above
            header_item.setToolTip(tip)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        row_height = self.fontMetrics().height() + 4
        self.table.verticalHeader().setDefaultSectionSize(row_height)
        self.table.verticalHeader().setMinimumSectionSize(row_height)
        header = self.table.horizontalHeader()
        header.setMinimumSectionSize(self.fontMetrics().horizontalAdvance("#") + PAD)
        header.setStretchLastSection(False)
        header.setSortIndicator(0, Qt.SortOrder.AscendingOrder)  # run order (Qt's default indicator: descending)
        # A cramped dock still shows the header and two rows before it would scroll.
        self.table.setMinimumHeight(header.sizeHint().height() + 2 * row_height + 2 * self.table.frameWidth())
        layout.addLayout(head)
        layout.addWidget(self.details)
        layout.addWidget(self.table, 1)
        self._fit_columns()

    def show_profile(self, live: LiveProfile | None, now: float) -> None:
        lead = (Part(f"{self.side.upper()} ", bold=True),) if self.comparing else ()
        if live is None:
            self._say(lead, "waiting for the first profile…")
            self.table.setRowCount(0)
            return
        name = f"{live.target.model} on {live.target.delegate}"
        if live.profile is None:
            self._say(lead, f"{name}: no profile ({live.error or 'unknown error'})")
            self.table.setRowCount(0)
            return
        p = live.profile
        age_s = now - live.taken_at
        whole = _summary(p, age_s)
        self.summary.set_wordings(_summary_lines(p, age_s, lead), whole)  # a tooltip shows rich text
        self.details.setText(whole)
        self._fit_details()
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
            cells[WHERE].setBackground(colour)
            cells[WHERE].setForeground(QColor("white"))
        self.table.setSortingEnabled(True)
        self._fit_columns()

    def _say(self, lead: tuple[Part, ...], text: str) -> None:
        self.summary.set_wordings([(*lead, Part(text))])
        self.details.setText(html.escape(text))
        self._fit_details()

    def _show_details(self, shown: bool) -> None:
        self.more.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.details.setVisible(shown)
        self._fit_details()

    def _fit_details(self) -> None:
        # A splitter's pane gets no more than its minimum asks, whatever its wrapped lines need: the lines
        # at this width are asked for (the dock scrolls while they are open, if it must).
        if self.details.isVisible():
            self.details.setMinimumHeight(self.details.heightForWidth(self.width()))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_columns()
        self._fit_details()

    def _fit_columns(self) -> None:
        """Each column as wide as its widest text, the op the rest; the kernel only where it has room."""
        metrics = self.table.horizontalHeader().fontMetrics()
        header = self.table.horizontalHeader()
        # The cells' own widths (the delegate's margins included) and the title's; a sorted column's arrow
        # may elide its title (Qt's section hint keeps room for one in every column: too wide here).
        widths = [
            max(self.table.sizeHintForColumn(column), metrics.horizontalAdvance(title) + PAD)
            for column, title in enumerate(COLUMNS)
        ]
        fixed = sum(w for column, w in enumerate(widths) if column not in (OP, KERNEL))
        op_width = min(widths[OP], metrics.horizontalAdvance(OP_ROOM) + PAD)
        room = self.table.viewport().width()
        show_kernel = room >= fixed + 3 * op_width
        self.table.setColumnHidden(KERNEL, not show_kernel)
        for column, width in enumerate(widths):
            if column not in (OP, KERNEL):
                header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
                header.resizeSection(column, width)
        stretched = KERNEL if show_kernel else OP
        if show_kernel:
            header.setSectionResizeMode(OP, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(OP, op_width)
        header.setSectionResizeMode(stretched, QHeaderView.ResizeMode.Stretch)


def _summary_lines(p: Profile, age_s: float, lead: tuple[Part, ...]) -> list[tuple[Part, ...]]:
    """The summary in one line, longest wording first: the ops' time of the run's and what ran off the
    accelerator lead (what an A/B reader compares), the model and age follow."""
    off = p.off_accelerator()
    share = 100 * p.off_accelerator_ms / p.ops_ms if p.ops_ms > 0 else 0.0
    colour = CPU_COLOUR if off else PARTITION_COLOURS[0]
    whole = f"run {p.wall_ms:.2f}" if p.invoke_ms is None else f"Invoke {p.invoke_ms:.2f}"
    fell_back = (Part(" · fell back to CPU", CPU_COLOUR),) if p.fallback_reason else ()
    ops = "op" if len(off) == 1 else "ops"
    long = (
        *lead,
        Part(f"ops {p.ops_ms:.2f} ms of {whole} ms · "),
        Part(f"off the accelerator: {len(off)} {ops}, {share:.1f}%", colour),
        *fell_back,
        Part(f" · {p.model} on {p.used} ({p.accelerator}) · {p.runs} runs, {age_s:.0f} s ago"),
    )
    short = (
        *lead,
        Part(f"ops {p.ops_ms:.2f} of {whole.split()[-1]} ms · "),
        Part(f"{len(off)} {ops} off ({share:.1f}%)", colour),
        *fell_back,
        Part(f" · {p.model} on {p.used} · {age_s:.0f} s ago"),
    )
    return [long, short]


def _contended(p: Profile) -> bool:
    # On a busy machine the profiler (nice +10) waits for the CPU; its wall-time events count the wait.
    return p.cpu_share is not None and p.cpu_share < CONTENDED_SHARE


def _contention_lines(shares: list[str]) -> list[str]:
    """The runs had the CPU only these shares of their wall time (a busy machine): longest wording first."""
    pct = ", ".join(shares)
    return [
        f"taken under contention: the runs had the CPU {pct} of their wall time; Invoke includes waiting",
        f"under contention: the runs had the CPU {pct} of their wall time",
        f"under contention: CPU {pct} of wall time",
    ]


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
    if p.cpu_share is not None and _contended(p):
        text += f"<br><span style='color:{CPU_COLOUR}'>{_contention_lines([f'{100 * p.cpu_share:.0f}%'])[0]}</span>"
    if p.fallback_reason:
        text += f"<br>fell back to CPU: {html.escape(p.fallback_reason)}"
    for line in p.not_reported:
        text += f"<br><span style='color:{NOTE_COLOUR}'>not reported: {html.escape(line)}</span>"
    return text


class OpsView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.profiler: OpsProfiles | None = None
        self.latest: Mapping[str, LiveProfile] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(4)
        self.enable = QCheckBox(f"Profile ops every {INTERVAL_S:.0f} s")
        self.enable.setToolTip(
            "Off by default. While on, a background thread profiles the session's model and delegate with "
            "LiteRT's own profiler on a runner of its own, at low priority (docs/profile.md)."
        )
        self.enable.toggled.connect(self.set_profiling)
        self.status = ElidedLine()
        self.status.set_text("profiling is off", NOTE_COLOUR)
        top = QHBoxLayout()
        top.addWidget(self.enable)
        top.addWidget(self.status, 1)
        self.warning = ElidedLine()  # the runs waited for the CPU: their times include the wait
        self.warning.hide()
        self.side_a = SideTable("a")
        self.side_b = SideTable("b")
        self.side_b.hide()
        self.sides = QSplitter(Qt.Orientation.Vertical)  # beside each other once WIDE (resizeEvent)
        self.sides.setChildrenCollapsible(False)
        self.sides.addWidget(self.side_a)
        self.sides.addWidget(self.side_b)
        layout.addLayout(top)
        layout.addWidget(self.warning)
        layout.addWidget(self.sides, 1)
        self._timer = QTimer(self, interval=REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

    def attach(self, profiler: OpsProfiles) -> None:
        self.profiler = profiler

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        wide = Qt.Orientation.Horizontal if self.width() >= WIDE else Qt.Orientation.Vertical
        if self.sides.orientation() != wide:
            self.sides.setOrientation(wide)
            self.sides.setSizes([1, 1])  # halves

    def set_profiling(self, on: bool) -> None:
        if self.profiler is None:
            return
        if self.enable.isChecked() != on:
            self.enable.setChecked(on)  # toggled() calls back here
            return
        if on:
            self.profiler.start()
            self._timer.start()
            self.status.set_text("the first profile takes a few seconds…", NOTE_COLOUR)
        else:
            self.profiler.stop()
            self._timer.stop()
            self.status.set_text("off: the tables show the last profile", NOTE_COLOUR)

    def refresh(self) -> None:
        if self.profiler is None:
            return
        self.show_latest(self.profiler.latest(), self.profiler.comparing)
        if self.profiler.running:
            self.status.set_text("profiling on a separate runner, low priority", NOTE_COLOUR)

    def show_latest(self, latest: Mapping[str, LiveProfile], comparing: bool) -> None:
        """The profiles per side ("a", and "b" in A/B), as taken now or last."""
        self.latest = latest
        now = time.monotonic()
        if comparing and not self.side_b.isVisible():
            self.sides.setSizes([1, 1])  # halves
        self.side_b.setVisible(comparing)
        sides = [("a", self.side_a), ("b", self.side_b)][: 2 if comparing else 1]
        for side, table in sides:
            table.comparing = comparing
            table.show_profile(latest.get(side), now)
        self._warn([side for side, _ in sides])

    def _warn(self, sides: list[str]) -> None:
        """One line for both sides: the shares of their wall time the runs had the CPU, where contended."""
        shares = []
        for side in sides:
            entry = self.latest.get(side)
            p = entry.profile if entry is not None else None
            if p is not None and p.cpu_share is not None and _contended(p):
                shares.append(f"{100 * p.cpu_share:.0f}%" + (f" ({side.upper()})" if len(sides) > 1 else ""))
        self.warning.setVisible(bool(shares))
        if shares:
            self.warning.set_wordings([(Part(line, CPU_COLOUR),) for line in _contention_lines(shares)])

    def stop(self) -> None:
        self._timer.stop()
        if self.profiler is not None:
            self.profiler.stop()
