"""The A/B panel (app/ui/panels/compare.py) says what the comparison compares: classes, not label text."""

from __future__ import annotations

import numpy as np

from app.metrics.window import Metrics
from app.model.agreement import TaskAgreement, detection_agreement, segmentation_agreement
from app.model.decode import Detection
from app.pipeline.compare import AgreementSummary


def test_the_panel_gives_each_task_its_class_figures_and_when_a_frame_agrees(qtbot) -> None:
    from app.ui.panels.compare import ComparePanel

    panel = ComparePanel()
    qtbot.addWidget(panel)
    empty = Metrics(clock=lambda: 0.0).snapshot()
    box = (0.24, 0.08, 0.94, 0.95)
    # One detector with its labels (A) and without (B): "bird" and "class 15" are one class.
    frame = detection_agreement([Detection(15, "bird", 0.75, box)], [Detection(15, "class 15", 0.75, box)])
    panel.set_summary(AgreementSummary(1, 1.0, None, None, None, False, task=TaskAgreement.of([frame])),
                      empty, empty, ("ssd", "ssd"))  # fmt: skip
    text = panel.summary.text()
    assert "same class 100.0%" in text and "each pair of one class) on 100.0% of 1 frames" in text, text
    a = np.zeros((10, 10), np.int32)
    b = a.copy()
    b[0, :] = 15  # 90% of the pixels agree: the threshold
    frames = [segmentation_agreement(a, b), segmentation_agreement(a, a)]
    panel.set_summary(AgreementSummary(2, 1.0, None, None, None, False, task=TaskAgreement.of(frames)),
                      empty, empty, ("deeplab", "deeplab"))  # fmt: skip
    text = panel.summary.text()
    assert "pixels agree (same class) 95.0%" in text and "at least 90% of its pixels of one class" in text, text
