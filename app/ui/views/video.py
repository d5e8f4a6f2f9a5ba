"""The video view: newest frame, scaled with its aspect kept, and the overlay of what the model said."""

from __future__ import annotations

import time
from collections import deque

import cv2
import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QHelpEvent, QImage, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.live.mask import MaskPreparer
from app.model.task import Task
from app.pipeline import Result
from app.sources import Frame
from app.ui.views.overlay import (
    SIDE_COLOURS,
    Line,
    MaskCache,
    draw_detections,
    draw_keypoints,
    draw_mask,
    frame_rect,
    point_at,
    task_lines,
)

STALE_MS = 250.0  # a result older than this (throttle, slow delegate) is marked as such
_PANEL_BG = QColor(0, 0, 0, 165)
_BAR = QColor(70, 170, 255)
_STALE = QColor(255, 190, 60)
_WARN = QColor(255, 110, 90)
_PANEL_MIN_W = 200.0  # narrower than this beside the badge, the label panels go under it
_SIDES = ("a", "b")  # the controller's names of sides 0 and 1


def frame_to_qimage(image: np.ndarray) -> QImage:
    """Wrap a BGR uint8 HxWx3 array as a QImage without copying.

    The QImage points into the array's memory, so the caller keeps the array alive as
    long as the QImage (VideoView stores both together). Non-contiguous arrays are copied
    once, because QImage needs a constant row stride.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected a BGR uint8 HxWx3 frame, got {image.dtype} {image.shape}")
    if not image.flags["C_CONTIGUOUS"]:
        image = np.ascontiguousarray(image)
    height, width = image.shape[:2]
    return QImage(image.data, width, height, image.strides[0], QImage.Format.Format_BGR888)


_BACKGROUND = QColor(20, 20, 20)
_CROP_LINE = QColor(200, 200, 200)


class VideoView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(160, 90)  # a small window keeps the video (and the plots under it)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # we paint every pixel
        self._frame: Frame | None = None
        self._image: QImage | None = None  # views self._frame.image; replaced together
        # The frame in 32-bit form, once per frame (see _display_image): which frame, the array, the QImage over it.
        self._converted: tuple[Frame | None, np.ndarray | None, QImage | None] = (None, None, None)
        self._result: Result | None = None
        self._result_b: Result | None = None  # side B of an A/B comparison
        self.titles = ("", "")  # panel titles while comparing ("A · CPU · lite0", "B · ...")
        self.backend_label = ""
        # Said in the label panel instead of "waiting for the first result…" when none will come (the model did
        # not open): the reason, wrapped in the panel.
        self.no_result = ""
        self.inference_fps = 0.0
        self.score_threshold = 0.0
        self.show_crop = True
        # Per side: whether the frame is the model's input (False: a model with no image input, fed
        # generated inputs; its "model input" outline would be a lie, and its panel says so).
        self.frame_is_input = (True, True)
        self.masks = (MaskCache(), MaskCache())  # each side's class mask, once per result
        self._mask_source: MaskPreparer | None = None  # builds them off the GUI thread (take_masks_from)
        self.message = "Starting…"  # shown when there is no frame (opening, errors)
        # Over the last frame when the source stopped (lost, reconnecting, ended): a frozen
        # picture with live-looking labels must not pass for a running camera.
        self.banner = ""
        self.badge_rect = QRectF()  # where the backend badge and the label panels were last painted (tests)
        self.panel_rects: list[QRectF] = []
        self.panel_texts: list[list[str]] = []  # each panel's rows as last painted (--stats, tests)
        self.frames_converted = 0  # frames converted for display (once each, however often it paints)
        self.paint_ms = 0.0  # duration of the last paint, for the GUI-cost figures
        self.paint_times: deque[float] = deque(maxlen=20_000)
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(9.0, self._font.pointSizeF()))
        self._bold = QFont(self._font)
        self._bold.setBold(True)

    def event(self, event: QEvent) -> bool:
        """Hovering over a keypoint names it (and its score) in a tooltip."""
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            results = (self._result, self._result_b) if self._result_b is not None else (self._result,)
            tasks = tuple(r.task if r is not None else None for r in results)
            text = point_at(self.image_rect(), tasks, QPointF(event.pos()))
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)

    @property
    def badge_text(self) -> str:
        """The top-right badge as painted (before any eliding): what really runs and its rate."""
        return f"{self.backend_label}  {self.inference_fps:.1f} inf/s" if self.backend_label else ""

    def sizeHint(self) -> QSize:
        return QSize(800, 450)

    def take_masks_from(self, masks: MaskPreparer) -> None:
        """Draw the class masks `masks` builds on the results threads (the controller's), told the size
        each side's mask is drawn at; a result it has not built one for is built here, as without it."""
        masks.enable()
        self._mask_source = masks

    def set_frame(self, frame: Frame, result: Result | None, result_b: Result | None = None) -> None:
        self._image = frame_to_qimage(frame.image)
        self._frame = frame  # keeps the array the QImage points into alive
        self._result = result
        self._result_b = result_b
        self.update()

    @property
    def shown_frame(self) -> Frame | None:
        """The frame painted now (tests check the view keeps up)."""
        return self._frame

    @property
    def shown_result(self) -> Result | None:
        """Side A's result drawn over it."""
        return self._result

    def set_score_threshold(self, value: float) -> None:
        """Hide labels scoring below `value` (0..1) in the overlay."""
        self.score_threshold = value
        self.update()

    def set_message(self, message: str) -> None:
        self.message = message
        self.update()

    def set_banner(self, text: str) -> None:
        if text != self.banner:
            self.banner = text
            self.update()

    def image_rect(self) -> QRectF:
        """Where the frame is drawn: as large as fits, aspect kept, centred."""
        if self._image is None:
            return QRectF()
        iw, ih = self._image.width(), self._image.height()
        scale = min(self.width() / iw, self.height() / ih)
        w, h = iw * scale, ih * scale
        return QRectF((self.width() - w) / 2, (self.height() - h) / 2, w, h)

    def paintEvent(self, event: QPaintEvent) -> None:
        started = time.perf_counter()
        painter = QPainter(self)
        if self._image is None or self._frame is None:
            painter.fillRect(self.rect(), _BACKGROUND)
            painter.setPen(QColor(220, 220, 220))
            painter.setFont(self._font)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self.message)
            painter.end()
            return
        target = self.image_rect()
        # Only the bars beside or above and below the frame: the frame covers the rest, and filling the
        # whole view first cost 0.5 ms a paint at 2800x1600.
        whole = QRectF(self.rect())
        for bar in (  # each reaches 1 px under the frame, which paints over it: no seam left unpainted
            QRectF(whole.left(), whole.top(), whole.width(), target.top() - whole.top() + 1),
            QRectF(whole.left(), target.bottom() - 1, whole.width(), whole.bottom() - target.bottom() + 1),
            QRectF(whole.left(), target.top(), target.left() - whole.left() + 1, target.height()),
            QRectF(target.right() - 1, target.top(), whole.right() - target.right() + 1, target.height()),
        ):
            if bar.width() > 1 and bar.height() > 1:
                painter.fillRect(bar, _BACKGROUND)
        # Fast (non-smooth) scaling from the backing store's own format (the window's own cost at large
        # sizes): see _display_image.
        painter.drawImage(target, self._display_image())
        self._draw_overlay(painter, target)
        if self.banner:
            self._draw_banner(painter, target)
        painter.end()
        self.paint_ms = (time.perf_counter() - started) * 1000
        self.paint_times.append(self.paint_ms)

    def _display_image(self) -> QImage:
        """The frame in the backing store's own 32-bit format, converted once per frame (OpenCV, outside
        the GIL). Qt then scales it with its fast 32-bit path: 3-5 ms a paint at 3400x1900 here, against
        13-16 ms for scaling the BGR frame (a format conversion each paint) or for resizing with OpenCV
        and copying unscaled (docs/performance-costs.md, "The window's observer effect")."""
        frame = self._frame
        cached_frame, _, image = self._converted
        if image is not None and cached_frame is frame:
            return image
        assert frame is not None
        bgra = cv2.cvtColor(frame.image, cv2.COLOR_BGR2BGRA)
        h, w = bgra.shape[:2]
        image = QImage(bgra.data, w, h, bgra.strides[0], QImage.Format.Format_RGB32)  # BGRA bytes = RGB32
        self._converted = (frame, bgra, image)
        self.frames_converted += 1
        return image

    # ---- overlay ---------------------------------------------------------------------------

    def _draw_banner(self, p: QPainter, target: QRectF) -> None:
        p.fillRect(target, QColor(0, 0, 0, 110))  # dim the frozen frame
        p.setFont(self._bold)
        flags = Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap
        text_rect = target.adjusted(24, 0, -24, 0)
        needed = p.fontMetrics().boundingRect(text_rect.toRect(), int(flags), self.banner).height()
        band = QRectF(target.left(), target.center().y() - needed / 2 - 12, target.width(), needed + 24)
        p.fillRect(band, QColor(150, 40, 40, 220))
        p.setPen(QColor(255, 255, 255))
        p.drawText(band.adjusted(24, 0, -24, 0), flags, self.banner)
        p.setFont(self._font)

    def _draw_overlay(self, p: QPainter, target: QRectF) -> None:
        result, frame = self._result, self._frame
        assert frame is not None
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setFont(self._font)
        metrics = p.fontMetrics()
        line_h = metrics.height() + 4
        scale = target.width() / frame.image.shape[1]
        comparing = bool(self.titles[1])
        sides = (result, self._result_b) if comparing else (result,)
        self._draw_tasks(p, target, sides)
        p.setFont(self._font)
        same_size = result is not None and result.frame_size == (frame.image.shape[1], frame.image.shape[0])
        if result is not None and self.show_crop and same_size and self.frame_is_input[0]:
            c = result.crop
            crop = QRectF(target.x() + c.x * scale, target.y() + c.y * scale, c.width * scale, c.height * scale)
            # A solid, opaque line: a dashed one cost ~1 ms a frame to stroke, and a translucent one 1.9 ms
            # at 2800x1600 against 0.08 ms opaque (Qt's raster engine strokes translucent pens the slow way).
            p.setPen(QPen(_CROP_LINE, 1))
            p.drawRect(crop)
            # A model that sees the whole frame (detection, segmentation, keypoints, raw): the outline is
            # the frame's edge, and its words would sit under the box tags.
            whole = c.x == c.y == 0 and (c.width, c.height) == result.frame_size
            if result.task is None or not whole:
                p.drawText(crop.bottomLeft() + QPointF(4, -metrics.descent() - 3), "model input")

        # Top right: the backend that really runs and its rate. The label panels keep left of it, or go
        # under it when the view is too narrow for both side by side, never over it.
        badge = self.badge_text
        self.badge_rect = QRectF()
        top, panel_w = target.top() + 8, target.width() - 16
        if badge:
            p.setFont(self._bold)
            w = min(target.width() - 16, p.fontMetrics().horizontalAdvance(badge) + 16)
            self.badge_rect = QRectF(target.right() - w - 8, target.top() + 8, w, line_h + 4)
            p.setFont(self._font)
            beside = self.badge_rect.left() - target.left() - 16
            if beside >= _PANEL_MIN_W:
                panel_w = beside
            else:
                top = self.badge_rect.bottom() + 6
        self.panel_rects, self.panel_texts = [], []

        for index, res in enumerate(sides):
            footer = None
            if res is None and self.no_result and index == 0:  # none will come: why, in lines that fit
                lines = [Line(text) for text in _wrap(self.no_result, metrics, min(panel_w, 460) - 24)]
            elif res is None:
                lines = [Line("waiting for the first result…")]
            else:
                if res.task is not None:  # detection, segmentation, keypoints, raw: app/ui/views/overlay.py
                    lines = task_lines(res.task, self.score_threshold, SIDE_COLOURS[index] if comparing else None)
                else:  # a classifier: its whole top-k, as predict and bench print it (the threshold is
                    # the detections'; at its 50% a classifier's list read "nothing above 50%")
                    lines = [Line(pred.label, pred.score, None, pred.probability) for pred in res.top] or [
                        Line("no class scores")
                    ]
                age_ms = (frame.captured_at - res.captured_at) * 1000
                if age_ms > STALE_MS:
                    footer = f"result is {age_ms:.0f} ms older than the frame (frame {res.frame_index})"
            if not self.frame_is_input[index]:
                lines.append(Line("not fed this frame: its inputs are generated", None, _STALE))
            if comparing:  # a task's title in the side's colour, as its boxes and skeleton (a classifier's white)
                task_side = res is not None and res.task is not None
                lines.insert(0, Line(self.titles[index], None, SIDE_COLOURS[index] if task_side else None))
            top = self._panel(p, target, lines, line_h, metrics.ascent(), footer, None, top, panel_w) + 6
        if badge:
            p.setFont(self._bold)
            p.fillRect(self.badge_rect, _PANEL_BG)
            p.setPen(QColor(255, 255, 255))
            text = p.fontMetrics().elidedText(badge, Qt.TextElideMode.ElideRight, int(self.badge_rect.width() - 8))
            p.drawText(self.badge_rect, Qt.AlignmentFlag.AlignCenter, text)
            p.setFont(self._font)

    def _draw_tasks(self, p: QPainter, target: QRectF, sides: tuple[Result | None, ...]) -> None:
        """Each side's task overlay: masks first (under the rest), then boxes and skeletons. While A and
        B are compared, each side's boxes and skeleton have its own colour, and two masks share the
        frame, A's on the left half and B's on the right (overlaid, neither would read)."""
        comparing = len(sides) > 1
        tasks = [r.task if r is not None else None for r in sides]
        split = comparing and all(t is not None and t.task == Task.SEGMENTATION for t in tasks)
        for index, (res, task) in enumerate(zip(sides, tasks, strict=True)):
            if res is None or task is None or task.task != Task.SEGMENTATION:
                continue
            cache, source = self.masks[index], self._mask_source
            fresh = source is not None and task is not cache.result
            if not cache.take(task, source.mask_for(_SIDES[index], task) if fresh and source is not None else None):
                continue
            half = None
            if split:
                mid = target.center().x()
                half = QRectF(target.left(), target.top(), mid - target.left(), target.height()) if index == 0 else (
                    QRectF(mid, target.top(), target.right() - mid, target.height()))  # fmt: skip
            drawn_at = cache.drawn_at
            draw_mask(p, cache, frame_rect(target, task, res.frame_size), half)
            if source is not None and cache.drawn_at is not None and cache.drawn_at != drawn_at:
                source.draw_at(_SIDES[index], *cache.drawn_at)  # the next results' masks come at this size
        if split:
            mid = target.center().x()
            p.setPen(QPen(QColor(255, 255, 255), 2))
            p.drawLine(QPointF(mid, target.top()), QPointF(mid, target.bottom()))
            p.setFont(self._bold)
            for text, x in (("A", mid - 22), ("B", mid + 8)):
                p.fillRect(QRectF(x - 4, target.bottom() - 28, 22, 22), _PANEL_BG)
                p.drawText(QPointF(x, target.bottom() - 12), text)
            p.setFont(self._font)
        p.setFont(self._font)
        for index, task in enumerate(tasks):
            colour = SIDE_COLOURS[index] if comparing else None
            if task is not None and task.task == Task.DETECTION:
                # Clear of where the panels and the badge were painted last (they are painted over the tags).
                avoid = [*self.panel_rects, self.badge_rect]
                draw_detections(p, target, task, self.score_threshold, colour, avoid)
            elif task is not None and task.task == Task.KEYPOINTS:
                draw_keypoints(p, target, task, colour)

    def _panel(
        self,
        p: QPainter,
        target: QRectF,
        lines: list[Line],
        line_h: int,
        ascent: int,
        footer: str | None,
        title: str | None = None,
        top: float | None = None,
        max_width: float | None = None,
    ) -> float:
        """Draw one label panel at `top`; return its bottom edge."""
        if title:
            lines = [Line(title), *lines]
        metrics = p.fontMetrics()
        text_w = max(metrics.horizontalAdvance(line.text) for line in lines)
        bar_w, pct_w = 90, metrics.horizontalAdvance("100.0%")
        room = target.width() - 16 if max_width is None else max_width
        width = min(room, text_w + bar_w + pct_w + 30)
        if footer:
            width = max(width, min(room, metrics.horizontalAdvance(footer) + 16))
        height = line_h * (len(lines) + (1 if footer else 0)) + 8
        box = QRectF(target.left() + 8, target.top() + 8 if top is None else top, width, height)
        p.fillRect(box, _PANEL_BG)
        self.panel_rects.append(box)
        self.panel_texts.append([line.text if line.score is None else f"{line.text} {_score_text(line)}"
                                 for line in lines])  # fmt: skip
        y = box.top() + 4
        for line in lines:
            x, score = box.left() + 8, line.score
            if score is not None:
                p.setPen(QColor(255, 255, 255))
                pct = _score_text(line)
                p.drawText(QPointF(x + pct_w - metrics.horizontalAdvance(pct), y + ascent + 2), pct)
                x += pct_w + 6
                if line.percent:  # a value has no scale to fill a bar against
                    p.fillRect(QRectF(x, y + 4, bar_w, line_h - 8), QColor(255, 255, 255, 45))
                    # A class's own colour (the boxes', the mask's): the panel is the overlay's legend.
                    p.fillRect(QRectF(x, y + 4, bar_w * max(0.0, min(1.0, score)), line_h - 8), line.colour or _BAR)
                x += bar_w + 8
            p.setPen(line.colour if score is None and line.colour is not None else QColor(255, 255, 255))
            elided = metrics.elidedText(line.text, Qt.TextElideMode.ElideRight, int(box.right() - x - 8))
            p.drawText(QPointF(x, y + ascent + 2), elided)
            y += line_h
        if footer:
            p.setPen(_STALE)
            p.drawText(QPointF(box.left() + 8, y + ascent + 2), footer)
        return box.bottom()


def _score_text(line: Line) -> str:
    """A probability or share as a percentage; a value (a feature read as a score) as a number."""
    assert line.score is not None
    return f"{line.score:.1%}" if line.percent else f"{line.score:.4g}"


def _wrap(text: str, metrics: QFontMetrics, width: float) -> list[str]:
    """`text` in lines no wider than `width` (by words; a word wider than that is elided by the panel)."""
    lines: list[str] = []
    for word in text.split():
        if lines and metrics.horizontalAdvance(f"{lines[-1]} {word}") <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines or [text]
