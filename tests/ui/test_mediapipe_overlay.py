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
