"""MediaPipe's anchor-based detectors read as MediaPipe's graphs read them (app/model/mediapipe.py): the
anchors of its SSD anchor calculator, the decoding and clipped sigmoid of its tensors-to-detections step,
its weighted non-maximum suppression; recognised from the outputs, on built heads of other input sizes and
anchor counts than the fixture's, decoded end to end by `predict`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from app.model.agreement import TaskAgreement, compare_tasks
from app.model.decode import Detection, Keypoint, TaskResult
from app.model.mediapipe import (
    KNOWN_GRIDS,
    AnchorGrid,
    anchor_layout,
    decode_boxes,
    detect,
    scores_of,
    ssd_anchors,
    weighted_nms,
)
from app.model.spec import ModelOptions, load_model_spec
from app.model.task import Task
from tests.builders import any_models
from tests.builders.mediapipe_models import constant_outputs, ssd_head
from tests.helpers.cli import run_cli
from tests.helpers.letterbox import on_photo
from tests.helpers.paths import PHOTOS

SHORT, FULL, POSE, BACK = KNOWN_GRIDS
FACE_NAMES = ["right eye", "left eye", "nose tip", "mouth", "right ear tragion", "left ear tragion"]


@pytest.mark.parametrize(
    "grid,side,count",
    [
        (SHORT, 128, 896),  # face_detection_short_range.pbtxt: num_boxes 896
        (SHORT, 192, 2016),  # palm_detection_cpu.pbtxt: num_boxes 2016
        (FULL, 192, 2304),  # face_detection_full_range.pbtxt: num_boxes 2304
        (POSE, 224, 2254),  # pose_detection_cpu.pbtxt: num_boxes 2254
        (POSE, 256, 2944),  # the earlier 256x256 palm detector's 2944 anchors
        (BACK, 256, 896),  # the earlier back-camera face detector: 896 anchors at 256x256
    ],
)
def test_anchor_counts_are_the_graphs_num_boxes(grid: AnchorGrid, side: int, count: int):
    assert grid.count(side, side) == count == len(ssd_anchors(grid, side, side))


def test_short_range_anchors_in_the_models_order():
    """16x16 cells of 2 anchors (stride 8), then 8x8 cells of 6 (three stride-16 layers sharing one grid):
    row by row, the anchors of a cell together, centred in their cell."""
    assert SHORT.per_cell() == [(8, 2), (16, 6)]
    anchors = ssd_anchors(SHORT, 128, 128)
    assert np.allclose(anchors[0], [1 / 32, 1 / 32]) and np.allclose(anchors[1], anchors[0])
    assert np.allclose(anchors[2], [3 / 32, 1 / 32])  # the next cell of the row
    assert np.allclose(anchors[32], [1 / 32, 3 / 32])  # the second row
    assert np.allclose(anchors[512:518], [1 / 16, 1 / 16])  # the stride-16 grid's first cell, 6 anchors
    assert np.allclose(anchors[-1], [15 / 16, 15 / 16])
    # A non-square input: ceil(size / stride) cells on each axis.
    assert SHORT.count(100, 60) == 13 * 8 * 2 + 7 * 4 * 6


def test_decoding_offsets_by_the_anchor_and_divides_by_the_scale():
    """x, y, w, h then keypoints (x, y), each divided by the input size; centres offset by the anchor's."""
    anchors = np.array([[0.25, 0.5]])
    raw = np.array([[12.8, -6.4, 25.6, 51.2, 0.0, 12.8]])
    boxes, points = decode_boxes(raw, anchors, 1, (128.0, 128.0))
    assert np.allclose(boxes, [[0.25, 0.25, 0.65, 0.45]])  # ymin, xmin, ymax, xmax around (0.35, 0.45)
    assert np.allclose(points, [[[0.25, 0.6]]])


def test_scores_are_the_sigmoid_of_logits_clipped_at_100():
    scores = scores_of(np.array([0.0, 2.0, 1000.0, -1000.0]))
    assert scores[0] == 0.5 and scores[1] == pytest.approx(1 / (1 + math.exp(-2)))
    assert scores[2] == 1 / (1 + math.exp(-100)) and scores[3] == 1 / (1 + math.exp(100)) > 0


def test_weighted_nms_merges_a_cluster_into_its_score_weighted_mean():
    boxes = np.array([[0.1, 0.1, 0.5, 0.5], [0.12, 0.12, 0.52, 0.52], [0.6, 0.6, 0.9, 0.9], [0.3, 0.3, 0.7, 0.7]])
    points = np.array([[[0.2, 0.2]], [[0.26, 0.26]], [[0.7, 0.7]], [[0.5, 0.5]]])
    scores = np.array([0.9, 0.6, 0.7, 0.8])
    found = weighted_nms(boxes, points, scores)
    # Best first: box 0 takes box 1 (IoU 0.82); box 3 overlaps box 0 by IoU 0.14 only, so stands alone.
    assert [f.score for f in found] == [0.9, 0.8, 0.7]
    merged = (0.9 * boxes[0] + 0.6 * boxes[1]) / 1.5
    assert np.allclose(found[0].box, merged) and np.allclose(found[0].keypoints, [(0.224, 0.224)])
    assert np.allclose(found[1].box, boxes[3]) and np.allclose(found[2].box, boxes[2])


def test_weighted_nms_stops_at_an_empty_best_box():
    """An empty box overlaps nothing, itself included: MediaPipe keeps it and stops there."""
    boxes = np.array([[0.5, 0.5, 0.5, 0.5], [0.1, 0.1, 0.3, 0.3]])
    found = weighted_nms(boxes, np.zeros((2, 0, 2)), np.array([0.9, 0.8]))
    assert len(found) == 1 and found[0].box == (0.5, 0.5, 0.5, 0.5)


def _face_head(
    side: int, grid: AnchorGrid, hits: dict[int, tuple[float, list[float]]]
) -> tuple[np.ndarray, np.ndarray]:
    """Regressors (N, 16) and logits (N,): every anchor -100 but `hits` {anchor: (logit, raw 16 values)}."""
    n = grid.count(side, side)
    regressors = np.zeros((n, 16), np.float32)
    logits = np.full(n, -100.0, np.float32)
    for anchor, (logit, values) in hits.items():
        regressors[anchor] = values
        logits[anchor] = logit
    return regressors, logits


def test_the_threshold_is_applied_before_the_suppression():
    """Anchors below min_score_thresh never reach the weighted mean (MediaPipe filters, then suppresses)."""
    layout, _ = anchor_layout([("regressors", (1, 896, 16), "float32"), ("classificators", (1, 896, 1), "float32")],
                              128, 128)  # fmt: skip
    box = [0.0, 0.0, 32.0, 32.0] + [0.0] * 12
    shifted = [6.4, 6.4, 32.0, 32.0] + [0.0] * 12
    regressors, logits = _face_head(128, SHORT, {0: (3.0, box), 1: (-0.5, shifted)})
    [kept] = detect(layout, regressors, logits, 0.5)
    assert kept.box == pytest.approx((1 / 32 - 0.125, 1 / 32 - 0.125, 1 / 32 + 0.125, 1 / 32 + 0.125))
    [merged] = detect(layout, regressors, logits, 0.3)  # now both: the mean moves toward the second
    assert merged.box[1] > kept.box[1] and merged.score == pytest.approx(1 / (1 + math.exp(-3)))


def test_recognised_from_the_outputs_in_either_order():
    outputs = [("classificators", (1, 2016, 1), "float32"), ("regressors", (1, 2016, 18), "float32")]
    layout, evidence = anchor_layout(outputs, 192, 192)
    assert (layout.regressors, layout.scores, layout.keypoints, layout.label) == (1, 0, 7, "palm")
    assert layout.keypoint_names[0] == "wrist center" and layout.grid == SHORT
    assert "2016 anchors" in evidence and "palm_detection" in evidence and "assumed" in evidence
    face, _ = anchor_layout([("r", (1, 2304, 16), "float32"), ("s", (1, 2304, 1), "float32")], 192, 192)
    assert list(face.keypoint_names) == FACE_NAMES and face.grid == FULL


@pytest.mark.parametrize(
    "outputs,side",
    [
        ([("r", (1, 900, 16), "float32"), ("s", (1, 900, 1), "float32")], 128),  # no grid gives 900
        ([("r", (1, 896, 16), "float32"), ("s", (1, 896, 1), "float32")], 192),  # 896 is not 192's
        ([("r", (1, 896, 15), "float32"), ("s", (1, 896, 1), "float32")], 128),  # 4 + 2K: odd
        ([("r", (1, 896, 16), "float32"), ("s", (1, 896, 2), "float32")], 128),  # two classes
        ([("r", (1, 896, 16), "int8"), ("s", (1, 896, 1), "int8")], 128),
    ],
)
def test_other_heads_are_not_taken_for_one(outputs: list, side: int):
    assert anchor_layout(outputs, side, side) is None


# Built heads, decoded end to end: a face of the full-range grid (192x192, one anchor per 4-pixel cell).
FULL_FACE_ANCHOR = 48 * 24 + 24  # row 24, column 24: centre (0.5104, 0.5104)
FACE_RAW = [0.0, 0.0, 57.6, 76.8, -19.2, -19.2, 19.2, -19.2, 0.0, 0.0, 0.0, 19.2, -38.4, 0.0, 38.4, 0.0]


@pytest.fixture(scope="module")
def heads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("mediapipe_heads")
    regressors, logits = _face_head(
        192, FULL, {FULL_FACE_ANCHOR: (2.0, FACE_RAW), FULL_FACE_ANCHOR + 1: (1.0, FACE_RAW)}
    )
    palm = np.zeros((2016, 18), np.float32)
    models = {
        "full_range_face": ssd_head(192, regressors, logits),
        "palm_nothing": ssd_head(192, palm, np.full(2016, -20.0, np.float32)),
        "unknown_grid": ssd_head(128, np.zeros((900, 16), np.float32), np.zeros(900, np.float32)),
    }
    paths = {}
    for name, data in models.items():
        paths[name] = folder / f"{name}.tflite"
        paths[name].write_bytes(data)
    return paths


def test_a_full_range_face_head_is_decoded_end_to_end(heads: dict[str, Path]):
    run = run_cli("predict", "--model", heads["full_range_face"], "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["task"]["name"] == "detection" and "2304 anchors" in out["model"]["task"]["evidence"]
    [face] = out["results"][0]["detections"]
    # Two anchors a cell apart (1/48) merge, weighted by sigmoid(2) and sigmoid(1); the photo (600x400) is
    # letterboxed into the square input, as MediaPipe's graph feeds it: input coordinates map through its bars.
    w1, w2 = 1 / (1 + math.exp(-2)), 1 / (1 + math.exp(-1))
    cx, cy = 24.5 / 48 + (w2 / (w1 + w2)) / 48, 24.5 / 48
    assert face["score"] == pytest.approx(w1, abs=1e-6) and face["label"] == "face"
    (xmin, ymin), (xmax, ymax) = on_photo(
        np.array([[cx - 0.15, cy - 0.2], [cx + 0.15, cy + 0.2]]), PHOTOS / "coffee.jpg"
    )
    assert face["box"] == pytest.approx([ymin, xmin, ymax, xmax], abs=1e-5)
    assert ymin == pytest.approx(0.5 - 0.2 * 1.5 - 0.5 / 48 * 0 + (cy - 0.5) * 1.5, abs=1e-5)  # bars above and below
    points = {k["name"]: (k["x"], k["y"]) for k in face["keypoints"]}
    assert list(points) == FACE_NAMES
    eye, mouth = on_photo(np.array([[cx - 0.1, cy - 0.1], [cx, cy + 0.1]]), PHOTOS / "coffee.jpg")
    assert points["right eye"] == pytest.approx(tuple(eye), abs=1e-5)
    assert points["mouth"] == pytest.approx(tuple(mouth), abs=1e-5)


def test_a_palm_head_scoring_nothing_gives_no_detection(heads: dict[str, Path]):
    """Anchors under the graph's min_score_thresh (0.5) never reach the suppression, whatever the
    threshold asked: at 0 the 2016 background anchors would otherwise each become a detection."""
    for threshold in ("0", "0.5"):
        run = run_cli(
            "predict", "--model", heads["palm_nothing"], "--json", "--score-threshold", threshold, PHOTOS / "coffee.jpg"
        )
        assert run.returncode == 0, run.stderr
        result = run.json()["results"][0]
        assert result["task"] == "detection" and result["detections"] == [] and result["below_threshold"] == 0


def test_a_threshold_above_the_graphs_hides_and_counts(heads: dict[str, Path]):
    run = run_cli(
        "predict", "--model", heads["full_range_face"], "--json", "--score-threshold", "0.9", PHOTOS / "coffee.jpg"
    )
    assert run.returncode == 0, run.stderr
    result = run.json()["results"][0]
    assert result["detections"] == [] and result["below_threshold"] == 1  # the face scores sigmoid(2) = 0.88


def test_an_anchor_count_of_no_known_grid_stays_raw(heads: dict[str, Path]):
    spec = load_model_spec(heads["unknown_grid"])
    assert spec.task is not None and spec.task.task == Task.RAW


def _face(dx: float = 0.0, score: float = 0.9, names: tuple[str, ...] = ("right eye", "left eye")) -> Detection:
    points = tuple(Keypoint(n, 0.4 + 0.2 * i + dx, 0.4, None) for i, n in enumerate(names))
    return Detection(0, "face", score, (0.3, 0.3, 0.7, 0.7), points)


def test_ab_compares_a_detectors_keypoints_by_name_in_input_pixels():
    same = compare_tasks(_result((_face(),)), _result((_face(0.01),)))
    # Both points 0.01 of a 128-pixel input apart: 1.28 px, within 5% of 128.
    assert same.matched == 1 and same.points == 2 and same.mean_distance_px == pytest.approx(1.28)
    assert same.agree
    moved = compare_tasks(_result((_face(),)), _result((_face(0.1),)))  # the box matches, the points do not
    assert moved.matched == 1 and moved.mean_distance_px == pytest.approx(12.8) and not moved.agree
    summary = TaskAgreement.of([same, moved])
    assert summary is not None and summary.mean_distance_px == pytest.approx((1.28 * 2 + 12.8 * 2) / 4)
    assert summary.max_distance_px == pytest.approx(12.8)
    assert summary.to_dict()["keypoint_mean_distance_px"] == pytest.approx(7.04)
    assert "keypoints mean distance 7.04 input px" in summary.describe() and "keypoints" in summary.agree_rule()


def test_ab_of_detectors_without_keypoints_says_nothing_of_them():
    plain = Detection(0, "cat", 0.9, (0.3, 0.3, 0.7, 0.7))
    row = compare_tasks(_result((plain,)), _result((plain,)))
    summary = TaskAgreement.of([row])
    assert row.agree and row.mean_distance_px is None and summary is not None
    assert "keypoint_mean_distance_px" not in summary.to_dict() and "keypoints" not in summary.describe()


def _result(detections: tuple[Detection, ...]) -> TaskResult:
    return TaskResult(Task.DETECTION, (), detections=detections, input_size=(128, 128))


# BlazePose: 39 points of (x, y, z, visibility, presence) in 256-pixel input coordinates.
POSE = np.zeros((39, 5), np.float32)
POSE[:, 0] = np.linspace(16, 240, 39)
POSE[:, 1] = np.linspace(240, 16, 39)
POSE[:, 3] = 3.0  # visibility logit: sigmoid 0.953
POSE[:, 4] = -1.0  # presence logit: sigmoid 0.269
POSE[0, 3] = -3.0  # the nose hidden: visibility 0.047


def _pose(flag: float) -> bytes:
    mask = np.full((128, 128, 1), -5.0, np.float32)
    mask[:, 64:] = 5.0  # the right half is the person
    return constant_outputs(256, [
        ("ld_3d", POSE.reshape(-1)), ("output_poseflag", np.array([flag], np.float32)),
        ("output_segmentation", mask), ("output_heatmap", np.zeros((64, 64, 39), np.float32)),
        ("world_3d", np.zeros(117, np.float32)),
    ])  # fmt: skip


def test_blazepose_gives_33_named_points_2_auxiliary_its_flag_and_mask(tmp_path: Path):
    model = tmp_path / "pose_landmark_full.tflite"
    model.write_bytes(_pose(0.9))
    run = run_cli("predict", "--model", model, "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["task"]["name"] == "keypoints" and "BlazePose" in out["model"]["task"]["evidence"]
    result = out["results"][0]
    points = result["keypoints"]
    assert len(points) == 35 and points[0]["name"] == "nose" and points[32]["name"] == "right foot index"
    assert [p["name"] for p in points[33:]] == ["auxiliary 1", "auxiliary 2"]
    # The whole frame resized to 256x256: input pixel x is x / 256 of the photo's width.
    assert np.allclose([[p["x"], p["y"]] for p in points], POSE[:35, :2] / 256, atol=1e-5)
    assert points[0]["score"] == pytest.approx(1 / (1 + math.exp(3)), abs=1e-6)
    assert points[1]["score"] == pytest.approx(1 / (1 + math.exp(-3)), abs=1e-6)
    assert points[1]["presence"] == pytest.approx(1 / (1 + math.exp(1)), abs=1e-6)
    assert result["confidence"] == pytest.approx(0.9) and result["mask"] == {"shape": [128, 128], "foreground": 0.5}
    spec = load_model_spec(model)
    assert spec.task is not None and len(spec.task.layout.model.bones) == 35  # POSE_CONNECTIONS


def test_blazepose_under_its_flag_still_gives_its_points_and_says_so(tmp_path: Path):
    """MediaPipe's graph drops the points under a pose flag of 0.5; they are given, and the line says it."""
    model = tmp_path / "pose_landmark_lite.tflite"
    model.write_bytes(_pose(0.2))
    run = run_cli("predict", "--model", model, "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    result = run.json()["results"][0]
    assert len(result["keypoints"]) == 35 and result["confidence"] == pytest.approx(0.2)
    text = run_cli("predict", "--model", model, PHOTOS / "coffee.jpg")
    assert "confidence 0.20 (under 0.5: MediaPipe's graph gives no points)" in text.stdout


def test_the_iris_model_gives_71_eye_points_and_5_of_the_iris(tmp_path: Path):
    eyes = np.stack([np.linspace(4, 60, 71), np.full(71, 32.0), np.zeros(71)], axis=1).astype(np.float32)
    iris = np.array([[32, 32, 0], [40, 32, 0], [32, 24, 0], [24, 32, 0], [32, 40, 0]], np.float32)
    model = tmp_path / "iris_landmark.tflite"
    model.write_bytes(constant_outputs(64, [("output_eyes_contours_and_brows", eyes.reshape(-1)),
                                            ("output_iris", iris.reshape(-1))]))  # fmt: skip
    run = run_cli("predict", "--model", model, "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["task"]["name"] == "keypoints" and "iris" in out["model"]["task"]["evidence"]
    points = {p["name"]: (p["x"], p["y"]) for p in out["results"][0]["keypoints"]}
    assert len(points) == 76 and points["eye contour 70"] == pytest.approx((60 / 64, 0.5))
    assert points["iris center"] == pytest.approx((0.5, 0.5)) and points["iris top"] == pytest.approx((0.5, 0.375))
    assert points["iris right edge"][0] > points["iris center"][0] > points["iris left edge"][0]
    assert all(p["score"] is None and "presence" not in p for p in out["results"][0]["keypoints"])


def test_a_four_channel_input_says_how_its_fourth_channel_is_fed(tmp_path: Path):
    """MediaPipe's hair segmentation takes its previous mask as the 4th channel: a segmenter of 4 channels is
    fed its previous mask there, any other model an opaque alpha; the task's evidence says which (and nothing
    for a 3-channel model)."""
    rgba, rgb, segmenter = tmp_path / "rgba.tflite", tmp_path / "rgb.tflite", tmp_path / "hair_like.tflite"
    rgba.write_bytes(any_models.channels(4))
    rgb.write_bytes(any_models.channels(3))
    segmenter.write_bytes(any_models.rgba_segmenter(16, 8))
    said = load_model_spec(rgba).task
    assert said is not None and "4th channel is fed an opaque alpha" in said.evidence
    assert "previous frame's mask goes there for a segmenter only" in said.evidence
    plain = load_model_spec(rgb).task
    assert plain is not None and "4th channel" not in plain.evidence
    hair = load_model_spec(segmenter)
    assert hair.kind == Task.SEGMENTATION and hair.previous_mask
    assert "4th channel is fed the previous frame's mask" in hair.task.evidence
    assert "empty on the first frame" in hair.task.evidence and "--task raw" in hair.task.evidence


def test_a_segmenter_fed_its_previous_mask_takes_pixels_in_0_1_unless_told_otherwise(tmp_path: Path):
    """MediaPipe's hair segmentation graph scales its four channels alike to [0, 1] (zero_center false);
    --mean/--std win, and --task raw (the way out of the mask) feeds an alpha at a float input's default."""
    model = tmp_path / "hair_like.tflite"
    model.write_bytes(any_models.rgba_segmenter(16, 8))
    norm = load_model_spec(model).normalization
    assert (norm.mean, norm.std) == ((0.0,) * 3, (255.0,) * 3)
    assert "hair_segmentation_desktop_live.pbtxt" in norm.source
    assert load_model_spec(model, mean=(127.5,), std=(127.5,)).normalization.source == "--mean/--std"
    raw = load_model_spec(model, options=ModelOptions(task=Task.RAW))
    assert not raw.previous_mask and "4th channel is fed an opaque alpha" in raw.task.evidence
    assert raw.normalization.source == "default for float input"


def test_pixels_are_fed_in_the_range_each_mediapipe_graph_feeds(heads: dict[str, Path], tmp_path: Path):
    """Palm detection, BlazePose and iris take [0, 1]; the face detectors [-1, 1], a float input's default.
    --mean/--std still win."""
    pose = tmp_path / "pose.tflite"
    pose.write_bytes(_pose(0.9))
    for model in (heads["palm_nothing"], pose):
        norm = load_model_spec(model).normalization
        assert (norm.mean, norm.std) == ((0.0,) * 3, (255.0,) * 3) and "pbtxt feeds it" in norm.source
    face = load_model_spec(heads["full_range_face"]).normalization
    assert (face.mean, face.std, face.source) == ((127.5,) * 3, (127.5,) * 3, "default for float input")
    asked = load_model_spec(pose, mean=(127.5,), std=(127.5,)).normalization
    assert asked.source == "--mean/--std" and asked.mean == (127.5,) * 3


def test_a_hand_model_with_world_landmarks_reads_its_image_landmarks(tmp_path: Path):
    """MediaPipe's newer hand landmark models add world landmarks [1,63] after presence and handedness: the
    first [1,63] (input pixels) is drawn, the last (metres) is not."""
    image = np.stack([np.linspace(10, 210, 21), np.linspace(200, 20, 21), np.zeros(21)], axis=1).astype(np.float32)
    model = tmp_path / "hand_landmark_full.tflite"
    model.write_bytes(constant_outputs(224, [
        ("Identity", image.reshape(-1)), ("Identity_1", np.array([0.9], np.float32)),
        ("Identity_2", np.array([0.2], np.float32)), ("Identity_3", np.full(63, 0.01, np.float32)),
    ]))  # fmt: skip
    spec = load_model_spec(model)
    assert spec.task is not None and spec.task.task == Task.KEYPOINTS and "world landmarks" in spec.task.evidence
    run = run_cli("predict", "--model", model, "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    points = run.json()["results"][0]["keypoints"]
    assert points[0]["name"] == "wrist" and len(points) == 21
    # Letterboxed as MediaPipe's hand graph feeds it (keep_aspect_ratio): through the bars to the photo.
    assert np.allclose(
        [[p["x"], p["y"]] for p in points], on_photo(image[:, :2] / 224, PHOTOS / "coffee.jpg"), atol=1e-5
    )


def _face_mesh_with_attention(flag_logit: float) -> bytes:
    """MediaPipe's face_landmark_with_attention outputs, as its file orders and names them."""
    mesh = np.stack([np.linspace(10, 180, 468), np.full(468, 96.0), np.zeros(468)], axis=1).astype(np.float32)
    left = np.array([[60, 80], [66, 80], [60, 74], [54, 80], [60, 86]], np.float32)
    right = left + np.array([72, 0], np.float32)
    return constant_outputs(192, [
        ("output_mesh_identity", mesh.reshape(1, 1, -1)), ("output_lips", np.full((1, 1, 160), 96.0, np.float32)),
        ("output_left_eye", np.full((1, 1, 142), 80.0, np.float32)),
        ("output_right_eye", np.full((1, 1, 142), 80.0, np.float32)),
        ("output_left_iris", left.reshape(1, 1, -1)), ("output_right_iris", right.reshape(1, 1, -1)),
        ("conv_faceflag", np.full((1, 1, 1), flag_logit, np.float32)),
    ])  # fmt: skip


def test_the_face_mesh_with_attention_gives_468_mesh_points_and_both_irises(tmp_path: Path):
    model = tmp_path / "face_landmark_with_attention.tflite"
    model.write_bytes(_face_mesh_with_attention(2.0))
    spec = load_model_spec(model)
    assert spec.task is not None and spec.task.task == Task.KEYPOINTS and "with attention" in spec.task.evidence
    assert spec.normalization.std == (255.0,) * 3 and "face_landmark" in spec.normalization.source
    run = run_cli("predict", "--model", model, "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    result = run.json()["results"][0]
    points = {p["name"]: (p["x"], p["y"]) for p in result["keypoints"]}
    assert len(points) == 478 and points["mesh 467"] == pytest.approx((180 / 192, 0.5))
    assert points["left iris center"] == pytest.approx((60 / 192, 80 / 192))
    assert points["right iris center"] == pytest.approx((132 / 192, 80 / 192))
    assert points["right iris top"][1] < points["right iris center"][1] < points["right iris bottom"][1]
    assert result["confidence"] == pytest.approx(1 / (1 + math.exp(-2.0)), abs=1e-4)  # the flag's sigmoid
    under = tmp_path / "under.tflite"
    under.write_bytes(_face_mesh_with_attention(-3.0))
    text = run_cli("predict", "--model", under, PHOTOS / "coffee.jpg")
    assert "confidence 0.05 (under 0.5: MediaPipe's graph gives no points)" in text.stdout


def test_a_face_mesh_missing_a_part_is_not_taken_for_one(tmp_path: Path):
    mesh = np.zeros((1, 1, 1404), np.float32)
    model = tmp_path / "mesh_and_flag.tflite"
    model.write_bytes(constant_outputs(192, [("mesh", mesh), ("lips", np.zeros((1, 1, 160), np.float32)),
                                             ("flag", np.zeros((1, 1, 1), np.float32))]))  # fmt: skip
    task = load_model_spec(model).task
    assert task is not None and "with attention" not in task.evidence


@pytest.mark.parametrize(("points", "graph"), [(21, "hand_landmark_cpu.pbtxt"), (468, "face_landmark")])
def test_hand_and_face_mesh_regressors_are_fed_the_unit_range_their_graphs_feed(tmp_path: Path, points: int,
                                                                               graph: str):  # fmt: skip
    model = tmp_path / "landmarks.tflite"
    model.write_bytes(constant_outputs(192, [("Identity", np.zeros(points * 3, np.float32)),
                                             ("Identity_1", np.array([0.9], np.float32))]))  # fmt: skip
    norm = load_model_spec(model).normalization
    assert (norm.mean, norm.std) == ((0.0,) * 3, (255.0,) * 3) and graph in norm.source
