"""A/B agreement per task (app/model/agreement.py): pure functions on decoded results."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.metrics.window import InferenceTiming
from app.model.agreement import (
    MATCH_IOU,
    PIXEL_AGREE,
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
from app.model.preprocess import CropBox
from app.model.task import Task
from app.pipeline import Result
from app.pipeline.compare import AgreementSummary, Comparator
from tests.helpers.cli import assert_one_line_error, run_cli

# The class index each label stands for here (COCO's, as the SSD fixture gives them).
INDEX = {"person": 0, "tie": 27, "cat": 16, "man": 1}


def det(label: str, score: float, box: tuple[float, float, float, float], index: int | None = None) -> Detection:
    return Detection(INDEX[label] if index is None else index, label, score, box)


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
    assert (g.a_count, g.b_count, g.matched, g.class_same) == (2, 3, 1, 0)  # person (0) against man (1)
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


def test_detections_compare_by_class_index_never_label_text() -> None:
    """One model with its labels and without them: the same classes, other words."""
    labelled = [det("person", 0.72, (0.05, 0.01, 0.99, 0.99)), det("tie", 0.66, (0.71, 0.44, 0.9, 0.56))]
    numbered = [Detection(d.index, f"class {d.index}", d.score, d.box) for d in labelled]  # "class 0", "class 27"
    g = detection_agreement(labelled, numbered)
    assert g.matched == g.class_same == 2 and g.agree
    total = TaskAgreement.of([g])
    assert total is not None and total.class_agreement == 1.0 and total.agreeing == 1
    assert total.to_dict()["class_agreement"] == 1.0 and "label_agreement" not in total.to_dict()
    text = total.describe()
    assert "same class 100.0%" in text and "label" not in text


def test_detections_of_other_classes_disagree_whatever_their_labels_say() -> None:
    box = (0.1, 0.1, 0.9, 0.9)
    a = [det("cat", 0.8, box), det("person", 0.7, (0.0, 0.0, 0.05, 0.05))]
    b = [Detection(17, "cat", 0.8, box), det("person", 0.7, (0.0, 0.0, 0.05, 0.05))]  # "cat" on class 17
    g = detection_agreement(a, b)
    assert g.matched == 2 and g.class_same == 1 and not g.agree
    total = TaskAgreement.of([g, detection_agreement(a, a)])
    assert total is not None and total.class_agreement == pytest.approx(3 / 4) and total.agreeing == 1
    assert "same class 75.0%" in total.describe()


def seg_result(class_map: np.ndarray, labels: dict[int, str]) -> TaskResult:
    classes, counts = np.unique(class_map, return_counts=True)
    fractions = tuple(
        (int(c), labels.get(int(c), f"class {c}"), n / class_map.size) for c, n in zip(classes, counts, strict=True)
    )
    return TaskResult(Task.SEGMENTATION, (), class_map=class_map, class_fractions=fractions)


def test_segmentation_frame_agrees_by_pixels_of_one_class_index() -> None:
    a = np.zeros((10, 10), np.int32)
    a[:, 5:] = 15
    labelled, numbered = {0: "background", 15: "person"}, {}
    # The same map, labelled and not: every pixel of one class, whatever the legend says.
    same = compare_tasks(seg_result(a, labelled), seg_result(a.copy(), numbered))
    assert same.pixel_agreement == 1.0 and same.agree
    # 10 of 100 pixels of another class (one present on B only): 90% agree, at the threshold.
    b = a.copy()
    b[0, :] = 8
    at = compare_tasks(seg_result(a, labelled), seg_result(b, numbered))
    assert at.pixel_agreement == pytest.approx(PIXEL_AGREE) and at.agree
    # One pixel more: below it, a disagreement.
    b[1, 0] = 8
    below = compare_tasks(seg_result(a, labelled), seg_result(b, labelled))
    assert below.pixel_agreement == pytest.approx(0.89) and not below.agree
    total = TaskAgreement.of([same, at, below])
    assert total is not None and total.agreeing == 2
    assert total.to_dict()["agree_at_pixel_agreement"] == PIXEL_AGREE
    assert "at least 90% of its pixels of one class" in total.agree_rule()
    assert "same class" in total.describe()


def test_segmentation_of_other_class_indices_disagrees_under_the_same_labels() -> None:
    a = np.zeros((4, 4), np.int32)
    a[:, 2:] = 8
    b = a.copy()
    b[:, 2:] = 3  # the same shape, another class: labels that both say "cat" do not make it one
    g = compare_tasks(seg_result(a, {8: "cat"}), seg_result(b, {3: "cat"}))
    assert g.pixel_agreement == pytest.approx(0.5) and not g.agree


def test_the_summary_line_says_when_a_frame_agrees() -> None:
    one = [det("cat", 0.7, (0, 0, 1, 1))]
    task = TaskAgreement.of([detection_agreement(one, one), detection_agreement(one, [])])
    line = AgreementSummary(2, 0.5, None, None, None, False, task=task).describe()
    assert line.endswith("the frame agrees (every detection matched, each pair of one class) on 50.0% of 2 frames")
    assert "same class 100.0%" in line


SSD = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"
DEEPLAB = "deeplabv3.tflite"
VOC = ["background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
       "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tv"]  # fmt: skip


def labels_ab(model: Path, coral: Path, tmp_path: Path, *extra: str | Path) -> tuple[dict, list[dict]]:
    """bench A/B of one model on the CPU, B without labels (an empty file: every class 'class N'):
    (agreement.task of the JSON, the comparison CSV's rows)."""
    none = tmp_path / "no-labels.txt"
    none.write_text("", encoding="utf-8")
    out, csv_path = tmp_path / "ab.json", tmp_path / "ab.csv"
    run = run_cli("bench", "--model", model, "--source", f"images:{coral}", "--frames", "4", "--warmup", "1",
                  "--compare-with", "cpu", "--compare-labels", none, "--compare-alone-seconds", "0", "--json", out,
                  "--csv", csv_path, *extra, timeout=240)  # fmt: skip
    assert run.returncode == 0, run.stderr
    with open(csv_path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    summary = json.loads(out.read_text())
    assert summary["b"]["config"]["labels"] == str(none)
    return summary["agreement"]["task"], rows


def test_ab_detector_with_and_without_labels_agrees_by_class(vision: Path, coral: Path, tmp_path: Path) -> None:
    g, rows = labels_ab(vision / SSD, coral, tmp_path)
    assert g["task"] == "detection" and g["frames"] >= 3 and g["detections_a"] > 0
    assert g["class_agreement"] >= 0.9 and g["agreeing_frames"] >= 0.9 * g["frames"]
    # The sides' words differ ("person 0.72" / "class 0 0.72"): what is compared is the class index.
    said = [r for r in rows if r["a_count"] != "0"]
    assert said and all(r["a_top1"] != r["b_top1"] and r["b_top1"].startswith("class ") for r in said)


def test_ab_segmenter_with_and_without_labels_agrees_by_class(vision: Path, coral: Path, tmp_path: Path) -> None:
    voc = tmp_path / "voc.txt"
    voc.write_text("\n".join(VOC) + "\n", encoding="utf-8")
    g, rows = labels_ab(vision / DEEPLAB, coral, tmp_path, "--labels", voc)
    assert g["task"] == "segmentation" and g["agree_at_pixel_agreement"] == 0.9
    assert g["pixel_agreement"] >= 0.9 and g["agreeing_frames"] > g["frames"] / 2
    assert rows and all(r["a_top1"] != r["b_top1"] for r in rows)  # "background 64%, cat 36%" / "class 0 64%, ..."


def test_compare_labels_that_cannot_be_read_stop_before_anything_runs(vision: Path, tmp_path: Path) -> None:
    run = run_cli("bench", "--model", vision / SSD, "--compare-labels", tmp_path / "missing.txt", "--frames", "1")
    assert_one_line_error(run, 3, "labels file not found")


def side_result(frame: int, task: TaskResult) -> Result:
    timing = InferenceTiming(frame, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 1.0)
    return Result(frame, 0.0, 0.0, [], np.zeros(0, np.float32), timing, "m", "0" * 12, "cpu", 1,
                  CropBox(0, 0, 300, 300), (300, 300), task)  # fmt: skip


def test_the_comparator_counts_a_frame_by_class_and_keeps_its_disagreements() -> None:
    """compare_results on two sides' results: labelled "person" against "class 0" agrees; "person"
    against another class index in the same place does not, and is kept as a disagreement."""
    box = (0.05, 0.01, 0.99, 0.99)

    def dets(*ds: Detection) -> TaskResult:
        return TaskResult(Task.DETECTION, (), detections=ds)

    comparator = Comparator()
    for frame, b in enumerate([Detection(0, "class 0", 0.7, box), Detection(1, "person", 0.7, box)]):
        comparator.add("a", side_result(frame, dets(Detection(0, "person", 0.7, box))))
        comparison = comparator.add("b", side_result(frame, dets(b)))
        assert comparison is not None and comparison.top1_agree == (frame == 0)
        assert comparison.a_top1 == "person 0.70"  # what each side says stays in its own words
    summary = comparator.summary()
    assert summary.top1_agreement == 0.5 and [d.frame_index for d in summary.disagreements] == [1]
    assert summary.task is not None and summary.task.class_agreement == 0.5
    assert summary.to_dict()["task"]["class_agreement"] == 0.5  # type: ignore[index]
    assert "same class 50.0%" in summary.describe()
