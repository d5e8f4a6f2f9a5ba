"""The window's status bar: a message too long for the room its permanent labels leave wraps onto more
lines (the bar grows while it shows) instead of being cut under them ("Recording both sides of A/E")."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QStatusBar, QWidget

_MARGIN = 6  # pixels left of the message and between it and the first permanent label
_FLAGS = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap


class WrappingStatusBar(QStatusBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._one_line = 0  # the bar's own height with a one-line message (measured once shown)
        self.messageChanged.connect(lambda _message: self.fit())

    def message_rect(self) -> QRect:
        """Where the message is drawn: left of the leftmost permanent label shown."""
        right = self.width() - _MARGIN
        for child in self.findChildren(QWidget):
            if child.parentWidget() is self and child.isVisible() and child.width() > 0 and child.x() > 0:
                right = min(right, child.x() - _MARGIN)
        return QRect(_MARGIN, 0, max(40, right - _MARGIN), self.height())

    def message_lines(self) -> int:
        """How many lines the current message takes in its room (0 without a message)."""
        message = self.currentMessage()
        if not message:
            return 0
        room = self.message_rect()
        needed = self.fontMetrics().boundingRect(QRect(0, 0, room.width(), 10_000), int(_FLAGS), message).height()
        return max(1, round(needed / max(1, self.fontMetrics().lineSpacing())))

    def fit(self) -> None:
        """The bar as tall as its message needs (the permanent labels beside it change width as they update)."""
        if not self._one_line:
            self._one_line = max(self.sizeHint().height(), self.fontMetrics().lineSpacing() + 8)
        extra = (max(1, self.message_lines()) - 1) * self.fontMetrics().lineSpacing()
        height = self._one_line + extra
        if self.minimumHeight() != height:
            self.setMinimumHeight(height)
        self.update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit()

    def paintEvent(self, event: QPaintEvent) -> None:
        message = self.currentMessage()
        if not message:
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.message_rect(), int(_FLAGS), message)
        painter.end()
