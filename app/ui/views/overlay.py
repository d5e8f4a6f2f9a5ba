"""What a model that is not a classifier found, drawn over the video: boxes with label and score
(detection), a translucent class mask with a legend (segmentation), keypoints and their skeleton
(keypoints), and for raw models a panel of output statistics. Positions in `TaskResult` are
normalised to the whole frame, so everything here maps them onto the rectangle the frame is drawn in.

Cost: a class map becomes premultiplied ARGB pixels (a colour lookup table indexed by the class map),
with the box of its coloured part, resized (nearest, OpenCV) to the size the view last drew it at, once
per result on the results thread (app/live/mask.py, 0.2-0.3 ms the GUI thread does not spend);
here the ready pixels are wrapped in a QImage and only their coloured part is blended, unscaled: 0.06 ms
a paint for a mask over most of a 458x537 frame, against 0.25 ms for Qt scaling the small image at each
paint (benchmarks/investigations/overlay_paint.py, docs/performance.md). Every line and box is stroked
with an opaque pen (Qt's raster engine strokes translucent pens the slow way, see VideoView).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen

from app.live.mask import BACKGROUND_CLASS, ClassMask, has_mask, legend_rgb, resize_pixels
from app.model.decode import TaskResult
from app.model.task import Task

# MoveNet's own demos skip keypoints under 0.11-0.3; under this score a keypoint is drawn as a small
# hollow grey ring (dimmed, so a user still sees where the model guessed) and its bones are skipped.
KEYPOINT_MIN_SCORE = 0.2
RAW_LINES = 8  # outputs listed in a raw model's panel; the rest are counted

# Distinct, opaque colours for detection classes (class index modulo their number).
_BOX_COLOURS = tuple(
    QColor(c)
    for c in ("#ff7043", "#42a5f5", "#66bb6a", "#ffca28", "#ab47bc", "#26c6da", "#ec407a", "#d4e157",
              "#8d6e63", "#5c6bc0", "#ffa726", "#26a69a")
)  # fmt: skip
# While A and B are compared, each side has one colour so their boxes and skeletons tell apart: B in
# orange as on the plots (app/ui/views/plots.py), A in blue.
SIDE_COLOURS = (QColor(70, 200, 255), QColor(255, 150, 40))
_BONE = QColor(120, 230, 120)
_POINT = QColor(255, 235, 60)
_DIM = QColor(200, 200, 200)
_TAG_TEXT = QColor(0, 0, 0)
_OUTPUT_NAME = QColor(150, 210, 255)


def box_colour(index: int) -> QColor:
    return _BOX_COLOURS[index % len(_BOX_COLOURS)]


def class_colour(index: int) -> QColor:
    """The legend's colour of a class: the mask's colour, opaque (the background: grey)."""
    return QColor(*legend_rgb(index))


@dataclass
class MaskCache:
    """The mask of the newest result of one side, as the view draws it: taken as a `MaskPreparer`
    built it off the GUI thread (app/live/mask.py), or built here when none did (a view without a
    controller: tests, benchmarks); wrapped in a QImage once per result and size."""

    result: TaskResult | None = None
    mask: ClassMask | None = None
    # The part of the mask that is not transparent (mask pixels): only that part is drawn.
    coloured: QRect = field(default_factory=QRect)
    built: int = 0  # masks built here, on the GUI thread (tests: once per result, however often it paints)
    taken: int = 0  # masks taken as a MaskPreparer built them
    resized: int = 0  # masks resized here to the size they are drawn at
    drawn_at: tuple[int, int] | None = None  # (width, height) the mask was last drawn at
    _scaled: tuple[tuple[int, int], np.ndarray, QImage] | None = None  # (size, pixels, image over them)

    @property
    def pixels(self) -> np.ndarray | None:
        """(h, w) uint32 at the model's resolution."""
        return self.mask.pixels if self.mask is not None else None

    def take(self, result: TaskResult, prepared: ClassMask | None = None) -> bool:
        """Make `result`'s mask the current one (`prepared`: built off the GUI thread for it); False
        when it has none to draw."""
        if not has_mask(result) or result.class_map is None:
            return False
        if result is not self.result:
            if prepared is not None:
                mask, self.taken = prepared, self.taken + 1
            else:
                mask, self.built = ClassMask.build(result.class_map), self.built + 1
            self.result, self.mask, self._scaled = result, mask, None
            self.coloured = QRect(*mask.coloured) if mask.coloured is not None else QRect()
        return True

    def scaled(self, width: int, height: int) -> QImage | None:
        """The current mask at `width` x `height`: the prepared pixels when they are at that size, else
        resized here (nearest: the class map's blocks stay sharp)."""
        mask = self.mask
        if mask is None or width < 1 or height < 1:
            return None
        if self._scaled is None or self._scaled[0] != (width, height):
            big = mask.scaled
            if big is None or big.shape != (height, width):
                big = resize_pixels(mask.pixels, width, height)
                self.resized += 1
            image = QImage(big.data, width, height, big.strides[0], QImage.Format.Format_ARGB32_Premultiplied)
            self._scaled = ((width, height), big, image)
        return self._scaled[2]


def frame_rect(target: QRectF, result: TaskResult, frame_size: tuple[int, int]) -> QRectF:
    """Where the box the model saw (`result.crop`, frame pixels) lies in the drawn frame."""
    crop = result.crop
    width, height = max(1, frame_size[0]), max(1, frame_size[1])
    if crop is None:
        return QRectF(target)
    sx, sy = target.width() / width, target.height() / height
    return QRectF(target.x() + crop.x * sx, target.y() + crop.y * sy, crop.width * sx, crop.height * sy)


def draw_mask(p: QPainter, mask: MaskCache, where: QRectF, clip: QRectF | None = None) -> None:
    """The mask's coloured part, at the size of `where` (the whole class map's place in the drawn
    frame, to the pixel), blended unscaled; only inside `clip` when given (A/B: each side on its half)."""
    part, pixels = mask.coloured, mask.pixels
    if pixels is None or part.isEmpty():
        return
    placed = where.toRect()  # whole pixels: an unscaled blit at a whole position is Qt's fast path
    mask.drawn_at = (placed.width(), placed.height())
    scaled = mask.scaled(placed.width(), placed.height())
    if scaled is None:
        return
    h, w = pixels.shape
    sx, sy = placed.width() / w, placed.height() / h
    x0, y0 = int(part.x() * sx), int(part.y() * sy)
    x1, y1 = (
        min(placed.width(), math.ceil((part.right() + 1) * sx)),
        min(placed.height(), math.ceil((part.bottom() + 1) * sy)),
    )
    if clip is not None:
        p.save()
        p.setClipRect(clip)
    p.drawImage(QPoint(placed.x() + x0, placed.y() + y0), scaled, QRect(x0, y0, x1 - x0, y1 - y0))
    if clip is not None:
        p.restore()


def draw_detections(
    p: QPainter,
    target: QRectF,
    result: TaskResult,
    threshold: float,
    side_colour: QColor | None = None,
    avoid: list[QRectF] | None = None,
) -> int:
    """Boxes with a tag 'label 72%' at a corner of each, the first corner clear of `avoid` (the label
    panels and the badge, painted over the tags) and of the tags placed before; returns how many."""
    metrics = p.fontMetrics()
    taken = list(avoid or [])
    drawn = 0
    for d in result.detections:
        if d.score < threshold:
            continue
        ymin, xmin, ymax, xmax = d.box
        box = QRectF(target.x() + xmin * target.width(), target.y() + ymin * target.height(),
                     (xmax - xmin) * target.width(), (ymax - ymin) * target.height())  # fmt: skip
        colour = side_colour or box_colour(d.index)
        p.setPen(QPen(colour, 2))
        p.drawRect(box)
        dot = max(3.5, min(6.0, target.width() / 120))  # a detector's keypoints (a face's eyes, nose...)
        p.setPen(QPen(QColor(0, 0, 0), 1))
        p.setBrush(colour)
        for k in d.keypoints:
            p.drawEllipse(QPointF(target.x() + k.x * target.width(), target.y() + k.y * target.height()), dot, dot)
        p.setBrush(Qt.BrushStyle.NoBrush)
        tag = f"{d.label} {d.score:.0%}"
        w, h = metrics.horizontalAdvance(tag) + 8, metrics.height() + 2
        tag_rect = _tag_place(box, w, h, target, taken)
        taken.append(tag_rect)
        p.fillRect(tag_rect, colour)
        p.setPen(_TAG_TEXT)
        p.drawText(tag_rect.adjusted(4, 0, -2, 0), int(Qt.AlignmentFlag.AlignVCenter), tag)
        drawn += 1
    return drawn


def _tag_place(box: QRectF, w: float, h: float, target: QRectF, taken: list[QRectF]) -> QRectF:
    """Above the box's top left, else inside it at the top left, top right, bottom left, bottom right:
    the first that stays in the frame and clear of `taken`; the first in the frame when none is clear."""
    w = min(w, target.width())
    corners = ((box.left(), box.top() - h), (box.left(), box.top()), (box.right() - w, box.top()),
               (box.left(), box.bottom() - h), (box.right() - w, box.bottom() - h))  # fmt: skip
    inside = []
    for x, y in corners:
        rect = QRectF(min(max(x, target.left()), target.right() - w), y, w, h)
        if rect.top() < target.top() or rect.bottom() > target.bottom():
            continue
        if not any(rect.intersects(other) for other in taken):
            return rect
        inside.append(rect)
    return inside[0] if inside else QRectF(box.left(), box.top(), w, h)


def draw_keypoints(p: QPainter, target: QRectF, result: TaskResult, side_colour: QColor | None = None) -> int:
    """Bones between confident points, then the points (dimmed under KEYPOINT_MIN_SCORE); returns how
    many were drawn confident."""
    points = result.keypoints
    at = [QPointF(target.x() + k.x * target.width(), target.y() + k.y * target.height()) for k in points]
    sure = [k.score is None or k.score >= KEYPOINT_MIN_SCORE for k in points]
    p.setPen(QPen(side_colour or _BONE, 3))
    # The decoder drops a point it cannot place (NaN) and then the bones, whose indices no longer match.
    complete = len(points) > max((max(bone) for bone in result.bones), default=-1)
    for a, b in result.bones if complete else ():
        if sure[a] and sure[b]:
            p.drawLine(at[a], at[b])
    radius = max(4.0, min(7.0, target.width() / 120))
    p.setPen(QPen(_DIM, 2))
    p.setBrush(Qt.BrushStyle.NoBrush)
    for point, ok in zip(at, sure, strict=True):
        if not ok:
            p.drawEllipse(point, radius - 1, radius - 1)
    p.setPen(QPen(QColor(0, 0, 0), 1))
    p.setBrush(side_colour or _POINT)
    for point, ok in zip(at, sure, strict=True):
        if ok:
            p.drawEllipse(point, radius, radius)
    p.setBrush(Qt.BrushStyle.NoBrush)
    return sum(sure)


@dataclass(frozen=True)
class Line:
    """One row of a label panel: text, an optional score or share (a bar), an optional bar colour."""

    text: str
    score: float | None = None
    colour: QColor | None = None
    percent: bool = True  # False: the score is a value, not a probability: a number, no bar


def task_lines(result: TaskResult, threshold: float, side_colour: QColor | None = None) -> list[Line]:
    """A label panel's rows for a task result (the header first); bars in the colour the overlay
    draws that row with (the class's, or the side's while A and B are compared)."""
    if result.task == Task.DETECTION:
        shown = [d for d in result.detections if d.score >= threshold]
        # The decoder kept those at its threshold (the control's, once a change reached it) and counted the rest.
        hidden = result.below_threshold + len(result.detections) - len(shown)
        header = f"{len(shown)} detection{'' if len(shown) == 1 else 's'}"
        if hidden:
            header += f" ({hidden} below {max(threshold, result.threshold):.0%})"
        return [Line(header), *(Line(d.label, d.score, side_colour or box_colour(d.index)) for d in shown)]
    if result.task == Task.SEGMENTATION:
        n = len(result.class_fractions)
        rows = [Line(f"{n} class{'' if n == 1 else 'es'}, share of pixels")]
        for index, label, share in result.class_fractions[:10]:
            name = f"{label} (clear)" if index == BACKGROUND_CLASS else label
            rows.append(Line(name, share, class_colour(index)))
        if len(result.class_fractions) > 10:
            rows.append(Line(f"+{len(result.class_fractions) - 10} more"))
        return rows
    if result.task == Task.KEYPOINTS:
        scored = [k.score for k in result.keypoints if k.score is not None]
        header = f"{len(result.keypoints)} keypoints"
        rows = [Line(header)]
        if scored:
            low = sum(1 for s in scored if s < KEYPOINT_MIN_SCORE)
            rows.append(Line("mean score", sum(scored) / len(scored), side_colour))
            if low:
                rows.append(Line(f"{low} under {KEYPOINT_MIN_SCORE:.0%}: grey rings, no bones"))
        # A landmark model's single values beside its points (MediaPipe's hand presence and handedness):
        # the points are drawn whatever they say, so a user reads here whether there was a hand at all.
        for s in result.outputs:
            if math.prod(s.shape) == 1 and s.mean is not None:
                rows.append(Line(f"{s.name} = {s.mean:.3g}"))
        return rows
    rows = [Line(f"raw model: {len(result.outputs)} output{'' if len(result.outputs) == 1 else 's'}, not decoded")]
    for s in result.outputs[:RAW_LINES]:  # two rows each: the panel is narrow beside the badge
        rows.append(Line(f"{s.name}  [{'x'.join(map(str, s.shape))}] {s.dtype}", None, _OUTPUT_NAME))
        if s.min is None or s.max is None or s.mean is None:
            values = "no finite value"
        else:
            values = f"min {s.min:.4g}   max {s.max:.4g}   mean {s.mean:.4g}"
        bad = f"   {s.non_finite} NaN/inf" if s.non_finite else ""
        rows.append(Line(f"    {values}{bad}"))
    if len(result.outputs) > RAW_LINES:
        rows.append(Line(f"+{len(result.outputs) - RAW_LINES} more outputs"))
    return rows


def point_at(target: QRectF, results: tuple[TaskResult | None, ...], pos: QPointF, reach: float = 10.0) -> str | None:
    """What a tooltip says of the keypoint drawn nearest `pos` (a landmark model's, or a detection's eyes,
    nose...), within `reach` pixels: its name and score, and the side's letter while A and B are compared;
    None when no point is that close."""
    best: tuple[float, str] | None = None
    for side, result in enumerate(results):
        if result is None:
            continue
        points = [*result.keypoints, *(k for d in result.detections for k in d.keypoints)]
        for k in points:
            distance = math.hypot(
                target.x() + k.x * target.width() - pos.x(), target.y() + k.y * target.height() - pos.y()
            )
            if distance <= reach and (best is None or distance < best[0]):
                score = "" if k.score is None else f" · score {k.score:.2f}"
                best = (distance, f"{'AB'[side]}: {k.name}{score}" if len(results) > 1 else f"{k.name}{score}")
    return best[1] if best else None
