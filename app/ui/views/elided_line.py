"""One line of text in coloured parts that never asks for more width than it gets: the longest of its
wordings that fits is drawn, else the shortest, elided at the right; the whole text is its tooltip.

A QLabel asks for its text's width (a narrow dock then scrolls sideways) or wraps it onto lines a
cramped dock cannot spare; the Ops view's summaries and warnings use this instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

MIN_CHARS = 6  # the width it asks for at least, in average characters


@dataclass(frozen=True)
class Part:
    text: str
    colour: str | None = None  # None: the palette's text colour
    bold: bool = False


Wording = tuple[Part, ...]


class ElidedLine(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._wordings: tuple[Wording, ...] = ()
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def set_wordings(self, wordings: Sequence[Sequence[Part]], tooltip: str = "") -> None:
        """Longest first; the tooltip (default: the longest wording's text) says it all."""
        self._wordings = tuple(tuple(w) for w in wordings)
        self.setToolTip(tooltip or self.full_text())
        self.setAccessibleName(self.full_text())  # a screen reader reads the whole, not the elided
        self.updateGeometry()
        self.update()

    def set_text(self, text: str, colour: str | None = None) -> None:
        self.set_wordings([(Part(text, colour),)])

    def full_text(self) -> str:
        return _text(self._wordings[0]) if self._wordings else ""

    def shown(self) -> str:
        """The text as drawn at the present width (elided with '…' where it had to be)."""
        return "".join(text for _, text in self._layout())

    def sizeHint(self) -> QSize:
        width = max((self._width(w) for w in self._wordings), default=0)
        return QSize(width, self.fontMetrics().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(MIN_CHARS * self.fontMetrics().averageCharWidth(), self.fontMetrics().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        x = 0
        baseline = self.fontMetrics().ascent()
        for part, text in self._layout():
            painter.setFont(self._font(part))
            painter.setPen(QColor(part.colour) if part.colour else self.palette().color(self.foregroundRole()))
            painter.drawText(x, baseline, text)
            x += QFontMetrics(self._font(part)).horizontalAdvance(text)

    def _font(self, part: Part) -> QFont:
        font = QFont(self.font())
        font.setBold(part.bold)
        return font

    def _width(self, wording: Wording) -> int:
        return sum(QFontMetrics(self._font(p)).horizontalAdvance(p.text) for p in wording)

    def _layout(self) -> list[tuple[Part, str]]:
        """(part, text drawn) for the present width."""
        if not self._wordings:
            return []
        room = self.width()
        chosen = next((w for w in self._wordings if self._width(w) <= room), self._wordings[-1])
        drawn: list[tuple[Part, str]] = []
        for part in chosen:
            metrics = QFontMetrics(self._font(part))
            width = metrics.horizontalAdvance(part.text)
            if width <= room:
                drawn.append((part, part.text))
                room -= width
                continue
            elided = metrics.elidedText(part.text, Qt.TextElideMode.ElideRight, room)
            if elided:
                drawn.append((part, elided))
            break
        return drawn


def _text(wording: Wording) -> str:
    return "".join(p.text for p in wording)
