"""The node strip: every node of the model in execution order, one row per delegate, coloured by where it runs.

A partition boundary shows as a change of colour between neighbouring cells, a node
left on the CPU as a red cell, a node the runtime says nothing about as grey. On the CPU's own
row a node XNNPACK does not take runs on LiteRT's built-in CPU kernels, on the CPU either way:
amber, not red. Hovering a cell names the node and, when it stays on the CPU, why.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QToolTip, QWidget

from app.backends.describe import BUILT_IN_KERNELS
from app.backends.options import Delegate
from app.coverage import NOT_REPORTED, Coverage, NodeCoverage

# Alternating greens/blues so adjacent partitions can be told apart; the CPU is red.
_PARTITION_COLOURS = ("#2e7d32", "#1565c0", "#00838f", "#6a1b9a")
_CPU = QColor("#c62828")
BUILT_IN_COLOUR = "#f9a825"  # a CPU session's node on the built-in kernels: the other CPU path, not a fallback
_BUILT_IN = QColor(BUILT_IN_COLOUR)
_UNKNOWN = QColor("#9e9e9e")
_MARK = QColor("#000000")  # the frame around the node the Numerics view found breaking the output
_ROW_H = 16
_GAP = 6
_LABEL_PAD = 8


def node_colour(node: NodeCoverage, delegate: str = "") -> QColor:
    if node.delegated is None:
        return _UNKNOWN
    if not node.delegated:
        return _BUILT_IN if delegate == Delegate.CPU else _CPU
    return QColor(_PARTITION_COLOURS[(node.partition or 0) % len(_PARTITION_COLOURS)])


def node_tooltip(title: str, node: NodeCoverage, delegate: str = "") -> str:
    head = f"{title}: node {node.index} {node.op} (v{node.version})"
    if node.delegated:
        return f"{head}\ndelegated, partition {node.partition}"
    if node.delegated is None:
        return f"{head}\n{NOT_REPORTED}"
    where = f"on {BUILT_IN_KERNELS}" if delegate == Delegate.CPU else "stays on the CPU"
    return f"{head}\n{where}: {node.reason or ''}"


class CoverageStrip(QWidget):
    """Rows of (title, coverage); an unavailable coverage is a row with its reason instead of cells."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[str, Coverage]] = []
        self.marked: int | None = None  # a node framed in every row (the first node that breaks the output)
        self.setMouseTracking(True)
        self.setMinimumHeight(0)

    @property
    def label_width(self) -> int:
        metrics = self.fontMetrics()
        return max((metrics.horizontalAdvance(title) for title, _ in self.rows), default=0) + _LABEL_PAD

    def set_rows(self, rows: list[tuple[str, Coverage]]) -> None:
        self.rows = [(title, c) for title, c in rows if c.nodes]
        self.setVisible(bool(self.rows))
        self.updateGeometry()
        self.update()

    def set_marked(self, node: int | None) -> None:
        """Frame `node` in every row (None: no frame): the Numerics view's first breaking node."""
        self.marked = node
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(280, len(self.rows) * (_ROW_H + _GAP))

    def minimumSizeHint(self) -> QSize:
        # Narrow enough never to widen the dock past its view (cells shrink to a pixel each).
        return QSize(self.label_width + 40, len(self.rows) * (_ROW_H + _GAP))

    def _cell_rect(self, row: int, i: int, n: int) -> QRect:
        left = self.label_width
        width = max(1, self.width() - left)
        x0 = left + int(i * width / n)
        x1 = left + int((i + 1) * width / n)
        return QRect(x0, row * (_ROW_H + _GAP), max(1, x1 - x0 - (1 if n < 80 else 0)), _ROW_H)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        for row, (title, coverage) in enumerate(self.rows):
            y = row * (_ROW_H + _GAP)
            painter.setPen(self.palette().text().color())
            painter.drawText(
                QRect(0, y, self.label_width, _ROW_H), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, title
            )
            n = len(coverage.nodes)
            for i, node in enumerate(coverage.nodes):
                painter.fillRect(self._cell_rect(row, i, n), node_colour(node, coverage.delegate))
            if self.marked is not None and 0 <= self.marked < n:
                cell = self._cell_rect(row, self.marked, n)
                painter.setPen(_MARK)
                painter.drawRect(cell.adjusted(-1, -1, 0, 0))
        painter.end()

    def node_at(self, pos: QPoint) -> tuple[str, NodeCoverage] | None:
        row = pos.y() // (_ROW_H + _GAP)
        left = self.label_width
        if not 0 <= row < len(self.rows) or pos.x() < left:
            return None
        title, coverage = self.rows[row]
        n = len(coverage.nodes)
        i = min(n - 1, int((pos.x() - left) * n / max(1, self.width() - left)))
        return title, coverage.nodes[i]

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        hit = self.node_at(event.position().toPoint())
        if hit is None:
            QToolTip.hideText()
        else:
            text = node_tooltip(*hit, self._delegate_of(hit[0]))
            if hit[1].index == self.marked:
                text += "\nthe first node that breaks the output on the delegate (Numerics view)"
            QToolTip.showText(event.globalPosition().toPoint(), text, self)

    def _delegate_of(self, title: str) -> str:
        return next((coverage.delegate for t, coverage in self.rows if t == title), "")
