"""The video overlay dots the keypoints an anchor-based detector gives beside each box (a face's eyes,
nose tip, mouth, ear tragions), where the decoder placed them."""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter

from app.model.decode import Detection, Keypoint, TaskResult
from app.model.task import Task
from app.ui.views.overlay import draw_detections


def test_the_overlay_dots_a_detectors_keypoints(qapp):
    eyes = (Keypoint("right eye", 0.4, 0.4, None), Keypoint("left eye", 0.6, 0.4, None))
    face = Detection(0, "face", 0.9, (0.3, 0.3, 0.7, 0.7), eyes)
    image = QImage(200, 200, QImage.Format.Format_RGB32)
    image.fill(QColor(0, 0, 0))
    painter = QPainter(image)
    result = TaskResult(Task.DETECTION, (), detections=(face,), input_size=(128, 128))
    drawn = draw_detections(painter, QRectF(0, 0, 200, 200), result, 0.5, QColor(255, 0, 0))
    painter.end()
    assert drawn == 1
    assert image.pixelColor(80, 80) == QColor(255, 0, 0) and image.pixelColor(120, 80) == QColor(255, 0, 0)
    assert image.pixelColor(100, 80) == QColor(0, 0, 0)  # between the two dots, inside the box


def test_hovering_near_a_keypoint_names_it_and_nothing_far_from_one(qapp):
    from PySide6.QtCore import QPointF

    from app.ui.views.overlay import point_at

    target = QRectF(10, 20, 200, 100)
    pose = TaskResult(
        Task.KEYPOINTS, (), keypoints=(Keypoint("nose", 0.5, 0.5, 0.91), Keypoint("left eye", 0.6, 0.4, None))
    )
    face = TaskResult(Task.DETECTION, (), detections=(Detection(0, "face", 0.9, (0.3, 0.3, 0.7, 0.7),
                                                                (Keypoint("mouth", 0.25, 0.75, None),)),))  # fmt: skip
    assert point_at(target, (pose,), QPointF(112, 71)) == "nose · score 0.91"  # the nose is at (110, 70)
    assert point_at(target, (pose,), QPointF(128, 61)) == "left eye"  # (130, 60): the nearer of the two
    assert point_at(target, (pose,), QPointF(150, 100)) is None
    assert point_at(target, (face,), QPointF(60, 95)) == "mouth"  # a detection's keypoint, at (60, 95)
    assert point_at(target, (pose, face), QPointF(60, 95)) == "B: mouth"  # A/B: the side's letter
    assert point_at(target, (None,), QPointF(110, 70)) is None


def test_the_video_view_shows_the_tooltip_over_a_keypoint(qapp):
    import numpy as np
    from PySide6.QtCore import QEvent, QPoint
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip

    from app.model.preprocess import CropBox
    from app.pipeline import Result
    from app.sources import Frame
    from app.ui.views.video import VideoView

    view = VideoView()
    view.resize(400, 300)
    view.show()
    frame = Frame(0, np.zeros((300, 400, 3), np.uint8), 0.0, 0.0)
    task = TaskResult(Task.KEYPOINTS, (), keypoints=(Keypoint("right wrist", 0.5, 0.5, 0.8),))
    result = Result(frame_index=0, captured_at=0.0, wall_time=0.0, top=[], scores=np.zeros(0), timing=None,
                    model="m", model_id="m", backend="cpu", session_id=1, crop=CropBox(0, 0, 400, 300),
                    frame_size=(400, 300), task=task)  # fmt: skip
    view.set_frame(frame, result)

    def hover(at: QPoint) -> None:
        QApplication.sendEvent(view, QHelpEvent(QEvent.Type.ToolTip, at, view.mapToGlobal(at)))

    hover(view.image_rect().center().toPoint())
    assert QToolTip.isVisible() and QToolTip.text() == "right wrist · score 0.80"
    hover(QPoint(5, 5))  # far from it: the tooltip goes
    qapp.processEvents()
    assert not QToolTip.isVisible()
    view.close()
