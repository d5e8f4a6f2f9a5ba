"""A/B agreement per task (app/model/agreement.py): pure functions on decoded results."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.model.agreement import (
    MATCH_IOU,
    TaskAgreement,
    compare_tasks,
    detection_agreement,
    iou,
    keypoint_agreement,
    match_detections,
    output_agreement,
    segmentation_agreement,
)
from app.model.decode import Detection, Keypoint, OutputStats, TaskResult
from app.model.task import Task


def det(label: str, score: float, box: tuple[float, float, float, float]) -> Detection:
    return Detection(0, label, score, box)


def test_iou_of_known_boxes() -> None:
    assert iou((0, 0, 1, 1), (0, 0, 1, 1)) == 1.0
    assert iou((0, 0, 1, 1), (0, 0.5, 1, 1.5)) == pytest.approx(1 / 3)  # half of each overlaps
    assert iou((0, 0, 0.2, 0.2), (0.5, 0.5, 1, 1)) == 0.0
    assert iou((0, 0, 0, 0), (0, 0, 0, 0)) == 0.0  # empty boxes: no overlap, no division by zero


def test_detections_matched_one_to_one_best_pairs_first() -> None:
    a = [det("person", 0.9, (0, 0, 1, 1)), det("tie", 0.6, (0.7, 0.4, 0.9, 0.6))]
    # B's first box overlaps A's person at IoU 0.81; its second is nowhere near A's tie; its third
    # overlaps the person too, but the person is taken by the better pair.
    b = [det("person", 0.8, (0, 0, 0.9, 0.9)), det("tie", 0.6, (0, 0, 0.1, 0.1)), det("man", 0.7, (0, 0, 0.95, 1))]
    pairs = match_detections(a, b)
    assert [(i, j) for i, j, _ in pairs] == [(0, 2)]  # IoU 0.95 beats 0.81
    g = detection_agreement(a, b)
    assert (g.a_count, g.b_count, g.matched, g.label_same) == (2, 3, 1, 0)
    assert g.match_rate == pytest.approx(1 / 3)
    assert g.mean_iou == pytest.approx(0.95)
    assert g.mean_score_diff == pytest.approx(0.2)
    assert not g.agree


def test_below_the_iou_threshold_is_no_match() -> None:
    a = [det("cat", 0.7, (0, 0, 1, 1))]
    b = [det("cat", 0.7, (0, 0, 1, 0.49))]  # IoU 0.49
    assert iou(a[0].box, b[0].box) < MATCH_IOU
    assert detection_agreement(a, b).matched == 0


def test_identical_detections_agree_fully() -> None:
    a = [det("person", 0.72, (0.05, 0.01, 0.99, 0.99)), det("tie", 0.66, (0.71, 0.44, 0.9, 0.56))]
    g = detection_agreement(a, list(a))
    assert g.agree and g.match_rate == 1.0 and g.mean_iou == 1.0 and g.mean_score_diff == 0.0


def test_segmentation_pixel_agreement_and_miou() -> None:
    a = np.zeros((4, 4), np.int32)
    a[:, 2:] = 8  # left half background, right half cat
    b = a.copy()
    b[:, 1] = 8  # B says cat on one more column
    g = segmentation_agreement(a, b)
    assert g.pixel_agreement == pytest.approx(12 / 16)
    # background: 4 shared of 8 in either; cat: 8 shared of 12 in either
    assert g.miou == pytest.approx((4 / 8 + 8 / 12) / 2)


def test_segmentation_of_another_resolution_is_resized() -> None:
    a = np.zeros((4, 4), np.int32)
    a[2:, :] = 3
    b = np.kron(a, np.ones((2, 2), np.int32))  # the same map at 8x8
    g = segmentation_agreement(a, b)
    assert g.pixel_agreement == 1.0 and g.miou == 1.0


def test_keypoint_distance_in_input_pixels() -> None:
    a = [Keypoint("nose", 0.5, 0.5, 0.9), Keypoint("left_eye", 0.25, 0.25, 0.8)]
    b = [Keypoint("nose", 0.5, 0.55, 0.9), Keypoint("left_eye", 0.25, 0.25, 0.8)]
    g = keypoint_agreement(a, b, (192, 192))
    assert g.mean_distance_px == pytest.approx((0.05 * 192 + 0) / 2)
    assert g.points == 2 and g.agree  # 4.8 px <= 5% of 192
    far = keypoint_agreement(a, [Keypoint("nose", 0.0, 0.0, 0.9)], (192, 192))
    assert far.points == 1 and not far.agree


def test_keypoints_without_common_names_have_no_distance() -> None:
    g = keypoint_agreement([Keypoint("nose", 0.5, 0.5, 0.9)], [Keypoint("wrist", 0.5, 0.5, None)], (224, 224))
    assert g.mean_distance_px is None and not g.agree


def test_raw_outputs_max_difference_and_cosine() -> None:
    x = np.array([1.0, 2.0, 3.0])
    pairs = output_agreement([x, np.zeros(3), np.ones(2)], [x * 2, np.zeros(3), np.ones(3)])
    assert pairs[0][0] == pytest.approx(3.0) and pairs[0][1] == pytest.approx(1.0)  # same direction
    assert pairs[1] == (0.0, 1.0)  # two zero vectors are the same
    assert pairs[2] == (None, None)  # shapes differ
    orthogonal = output_agreement([np.array([1.0, 0.0])], [np.array([0.0, 1.0])])
    assert orthogonal[0][1] == pytest.approx(0.0)


def raw_result(*values: np.ndarray) -> TaskResult:
    stats = tuple(OutputStats(f"out{i}", v.shape, "float32", None, None, None, 0) for i, v in enumerate(values))
    return TaskResult(Task.RAW, stats, values=values)


def test_compare_tasks_dispatches_and_sums_up_over_frames() -> None:
    a = raw_result(np.array([1.0, 0.0]), np.array([3.0]))
    b = raw_result(np.array([1.0, 0.1]), np.array([3.0]))
    frames = [compare_tasks(a, a), compare_tasks(a, b)]
    assert frames[0].agree and frames[1].agree  # cosine 0.995 >= 0.99
    total = TaskAgreement.of(frames)
    assert total is not None and total.frames == 2 and total.agreeing == 2
    assert total.max_abs_diff == (pytest.approx(0.1), 0.0)
    assert total.cosine_min[0] == pytest.approx(1 / math.sqrt(1.01))
    assert total.to_dict()["task"] == "raw"
    assert "output 0" in total.describe()


def test_detection_figures_over_frames_count_every_detection() -> None:
    one = [det("cat", 0.7, (0, 0, 1, 1))]
    frames = [detection_agreement(one, one), detection_agreement(one, []), detection_agreement([], [])]
    total = TaskAgreement.of(frames)
    assert total is not None
    assert total.match_rate == pytest.approx(1 / 2)  # 1 matched of max(1,1) + max(1,0) + max(0,0)
    assert total.mean_iou == 1.0 and total.agreeing == 2  # an empty frame on both sides agrees
    assert TaskAgreement.of([]) is None
