"""The A/B panel: agreement and speed of the two sides, and thumbnails of frames they disagree on."""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QImage, QPixmap
from PySide6.QtWidgets import QLabel, QListView, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from app.backends.describe import speed_sentence
from app.metrics.window import MetricsSnapshot
from app.pipeline.compare import SPEED_FRAMES, AgreementSummary, FrameComparison, SpeedWindow


class ComparePanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.summary)
        self.thumbs = QListWidget()
        self.thumbs.setViewMode(QListView.ViewMode.IconMode)
        self.thumbs.setIconSize(QSize(96, 96))
        self.thumbs.setFlow(QListView.Flow.LeftToRight)
        self.thumbs.setWrapping(True)
        self.thumbs.setResizeMode(QListView.ResizeMode.Adjust)
        self.thumbs.setMinimumHeight(140)
        self.thumbs.setToolTip(
            "Frames where A and B disagree, by class, never by label text: a classifier's top-1 class, or what the "
            "A/B line above says a frame agrees on (what both models saw); double-click one to check where the "
            "numbers part on that frame (the Numerics view)"
        )
        self.thumbs.itemActivated.connect(self._activated)
        layout.addWidget(self.thumbs)
        # Called with a disagreement and the RGB pixels both models saw, when the user activates its thumbnail.
        self.on_disagreement: Callable[[FrameComparison, np.ndarray], None] | None = None
        self._items: list[tuple[FrameComparison, np.ndarray]] = []
        self._shown: tuple[int, int | None] = (0, None)
        self._pixels: list[np.ndarray] = []  # keeps the arrays the thumbnails' QImages were made from

    def set_summary(
        self,
        g: AgreementSummary,
        a: MetricsSnapshot,
        b: MetricsSnapshot,
        names: tuple[str, str],
        speed: SpeedWindow | None = None,
    ) -> None:
        rows = [f"<b>A</b> {html.escape(names[0])} · <b>B</b> {html.escape(names[1])}"]
        if g.frames:
            if g.task is not None or g.top5_overlap is None or g.top1_agreement is None:
                text = g.describe()  # not classifiers (their task's agreement), or classes that do not compare
            else:
                text = f"top-1 agrees on {g.top1_agreement:.1%} of {g.frames:,} frames"
                text += f"; top-5 overlap {g.top5_overlap:.0%}"
                if g.classes is not None and g.classes.offset:
                    text += f" ({g.classes.how})"
            if g.task is None and g.top5_overlap is not None and g.scores_comparable and g.max_abs_diff is not None:
                text += f"; max score difference {g.max_abs_diff:.3g}"
            rows.append(html.escape(text))
        else:
            rows.append("no frame inferred by both sides yet")
        if speed is not None:
            # Medians over the same recent frames (paired), with how many and how long, not the 5 s metrics
            # window's p50 of each side apart, which swung 1.5x-1.9x within seconds.
            over = f"the last {speed.frames:,} frames both inferred, {speed.seconds:.0f} s"
            sentence = speed_sentence(speed.a_ms, speed.b_ms, speed.a_cpu_ms, speed.b_cpu_ms, over)
            rows.append(f"<b>{html.escape(sentence)}</b>")
            if speed.frames < SPEED_FRAMES:
                rows.append(html.escape(f"(the window grows to the last {SPEED_FRAMES} frames)"))
        if a.latency.get("inference") and b.latency.get("inference"):
            rows.append(
                html.escape(
                    f"A {a.inference_fps:.1f} inf/s, B {b.inference_fps:.1f} inf/s, sharing one machine "
                    "(each is slower than alone: bench --compare-with measures both)"
                )
            )
        self.summary.setText("<br>".join(rows))

    def set_thumbnails(self, items: list[tuple[FrameComparison, np.ndarray]]) -> None:
        key = (len(items), items[-1][0].frame_index if items else None)
        if key == self._shown:
            return
        self._shown = key
        self.thumbs.clear()
        self._pixels = []
        self._items = []
        for comparison, rgb in reversed(items):
            pixels = np.ascontiguousarray(rgb)
            self._pixels.append(pixels)
            self._items.append((comparison, pixels))
            h, w = pixels.shape[:2]
            image = QImage(pixels.data, w, h, pixels.strides[0], QImage.Format.Format_RGB888)
            item = QListWidgetItem(QIcon(QPixmap.fromImage(image)), f"A {comparison.a_top1}\nB {comparison.b_top1}")
            item.setToolTip(f"frame {comparison.frame_index}: A says {comparison.a_top1}, B says {comparison.b_top1}")
            self.thumbs.addItem(item)

    def _activated(self, item: QListWidgetItem) -> None:
        row = self.thumbs.row(item)
        if self.on_disagreement is not None and 0 <= row < len(self._items):
            self.on_disagreement(*self._items[row])
