"""The window for every model: on the same photo, the --stats a scripted run writes says the task and
what it found, and the window's picture shows the overlay where the results say (boxes, a class mask,
a skeleton, a raw model's output statistics); side B in A/B has its own colour and two masks share the
frame; --task reaches the pipeline from the window's options. (`gui --exit-after --stats --screenshot`
as a process: tests/ui/test_window.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from tests.helpers.wait import wait_until

pytest.importorskip("pytestqt")

SSD = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"
DEEPLAB = "deeplabv3.tflite"
MOVENET = "movenet_single_pose_lightning_ptq.tflite"
LSTM = "keras_lstm_mnist_ptq.tflite"


def _photo(coral: Path) -> Path:
    return coral / "grace_hopper.bmp"


def _scripted(
    qtbot, make_window, vision: Path, coral: Path, model: str, tmp_path: Path, **options: object
) -> tuple[dict, object]:
    """The window on the photo with `model`: its --stats and its picture (a QImage), taken as a scripted
    run's exit takes them (the same stats and grab), once the window has painted a result after reading
    the model (its Task row): the photo is the same every frame, so a later one would show the same."""
    from PySide6.QtGui import QImage

    from app.ui.scripted import write_stats

    window = make_window(source=f"images:{_photo(coral)}", model=str(vision / model), **options)
    qtbot.waitUntil(lambda: window.tallies[0].frames >= 1 and "Task" in window.delegation.text(), timeout=120_000)
    read_at = window.probes.frames_displayed
    qtbot.waitUntil(lambda: window.probes.frames_displayed > read_at, timeout=30_000)
    shot, stats = tmp_path / "window.png", tmp_path / "stats.json"
    write_stats(stats, window.stats())
    assert window.grab().save(str(shot))
    figures = json.loads(stats.read_text())
    assert figures["results"]["frames"] >= 1, figures["results"]
    return figures, QImage(str(shot))


class _Frame:
    """Window pixels at positions normalised to the frame, through --stats' overlay.image_rect."""

    def __init__(self, figures: dict, image) -> None:
        self.x, self.y, self.w, self.h = figures["overlay"]["image_rect"]
        self.image = image

    def at(self, nx: float, ny: float) -> tuple[int, int]:
        return int(self.x + nx * self.w), int(self.y + ny * self.h)

    def rgb(self, px: int, py: int) -> tuple[int, int, int]:
        c = self.image.pixelColor(px, py)
        return c.red(), c.green(), c.blue()

    def near(self, nx: float, ny: float, radius: int = 3) -> set[tuple[int, int, int]]:
        """Colours within `radius` pixels of a point (a 2-px pen lands within one of the exact position)."""
        cx, cy = self.at(nx, ny)
        return {self.rgb(cx + dx, cy + dy) for dx in range(-radius, radius + 1) for dy in range(-radius, radius + 1)}


def _rgb(colour) -> tuple[int, int, int]:
    return colour.red(), colour.green(), colour.blue()


@pytest.mark.timeout(180)
def test_a_detector_draws_its_boxes_with_labels(qtbot, make_window, vision, coral, tmp_path):
    from app.ui.views.overlay import box_colour

    figures, image = _scripted(qtbot, make_window, vision, coral, SSD, tmp_path, score_threshold=0.5)
    assert figures["task"] == "detection"
    results = figures["results"]
    detections = results["last"]["detections"]
    found = {d["label"]: d for d in detections}
    # LiteRT's own answer on this photo (the fixtures' README): person 0.72 and tie 0.66, labels from metadata.
    assert {"person", "tie"} <= set(found) and results["last_count"] == len(detections) >= 2
    # The SSD always gives 10 (its count output): those under 0.5 are counted, not dropped unsaid.
    below = results["last"]["below_threshold"]
    assert results["last"]["score_threshold"] == 0.5 and len(detections) + below == 10
    assert "person" in results["last_summary"] and "tie" in results["last_summary"]
    frame = _Frame(figures, image)
    for label in ("person", "tie"):
        d = found[label]
        ymin, xmin, ymax, xmax = d["box"]
        colour = _rgb(box_colour(d["index"]))
        # The box's left edge half-way down, and its bottom edge half-way across, in the class's colour.
        assert colour in frame.near(xmin, (ymin + ymax) / 2), label
        assert colour in frame.near((xmin + xmax) / 2, ymax), label
    # The legend lists them with their scores.
    panel = figures["overlay"]["panels"][0]
    assert panel[0] == f"{len(detections)} detections ({below} below 50%)"
    assert any(row.startswith("tie ") for row in panel)


@pytest.mark.timeout(180)
def test_the_score_threshold_control_reaches_the_decoder(qtbot, make_window, vision, coral):
    """The window's "Score threshold" is the decoder's: lowered to 10% the detections under 0.5 that the
    SSD gives on the photo are kept, at 0% all 10 of its count output, and the panel says what it hid."""
    window = make_window(source=f"images:{_photo(coral)}", model=str(vision / SSD), score_threshold=0.5)
    assert window.live.config().score_threshold == 0.5 and window.controls.threshold.value() == 50

    def decoded_at(threshold: float):
        qtbot.waitUntil(lambda: (r := window.live.latest_result()) is not None and r.task is not None
                        and r.task.threshold == threshold, timeout=60_000)  # fmt: skip
        return window.live.latest_result().task

    at_half = decoded_at(0.5)
    session = window.live.latest_result().session_id
    assert all(d.score >= 0.5 for d in at_half.detections) and len(at_half.detections) + at_half.below_threshold == 10
    assert at_half.below_threshold > 0  # this photo: scores from 0.18 to 0.72
    window.controls.threshold.setValue(10)  # percent, as the spin box shows it
    assert window.live.config().score_threshold == pytest.approx(0.1)
    at_tenth = decoded_at(pytest.approx(0.1))
    kept_low = [d for d in at_tenth.detections if d.score < 0.5]
    assert kept_low and len(at_tenth.detections) + at_tenth.below_threshold == 10
    assert all(d.score >= 0.1 for d in at_tenth.detections)
    window.controls.threshold.setValue(0)
    at_zero = decoded_at(0.0)
    assert len(at_zero.detections) == 10 and at_zero.below_threshold == 0
    assert window.live.latest_result().session_id == session  # applied live: the session was not reopened
    qtbot.waitUntil(lambda: bool(window.video.panel_texts) and window.video.panel_texts[0][0] == "10 detections",
                    timeout=10_000)  # fmt: skip


@pytest.mark.timeout(180)
def test_a_segmenter_draws_a_translucent_class_mask_with_its_legend(qtbot, make_window, vision, coral, tmp_path):
    from app.live.mask import MASK_ALPHA
    from app.ui.views.overlay import class_colour

    figures, image = _scripted(qtbot, make_window, vision, coral, DEEPLAB, tmp_path)
    assert figures["task"] == "segmentation"
    classes = figures["results"]["last"]["segmentation"]["classes"]
    # LiteRT: background 37 %, person (15) 63 % of pixels; DeepLab's file has no labels: "class N".
    assert set(classes) == {"class 0", "class 15"} and abs(classes["class 15"] - 0.63) < 0.05, classes
    assert figures["results"]["last_count"] == 2
    # Built once per result on the results thread (app/live/mask.py): the GUI thread built none itself.
    assert figures["overlay"]["masks_built"] >= 1 and figures["overlay"]["masks_built_by_gui"] == 0
    panel = figures["overlay"]["panels"][0]
    assert panel[0] == "2 classes, share of pixels" and panel[1].startswith("class 15 6")
    frame = _Frame(figures, image)
    photo = cv2.imread(str(_photo(coral)))  # BGR
    ph, pw = photo.shape[:2]
    a = MASK_ALPHA / 255
    person = _rgb(class_colour(15))
    # Her jacket (person) is the photo blended with the class's colour; the wall beside her (background)
    # is the photo as it is. Tolerance: the frame and the mask are scaled to the nearest pixel.
    for (nx, ny), tinted in (((0.25, 0.9), True), ((0.5, 0.75), True), ((0.95, 0.35), False), ((0.93, 0.2), False)):
        b, g, r = (int(v) for v in photo[int(ny * ph), int(nx * pw)])
        blended = tuple(round(m * a + p * (1 - a)) for m, p in zip(person, (r, g, b), strict=True))
        want = blended if tinted else (r, g, b)
        got = frame.rgb(*frame.at(nx, ny))
        assert max(abs(x - y) for x, y in zip(got, want, strict=True)) <= 16, ((nx, ny), got, want, (r, g, b))


@pytest.mark.timeout(180)
def test_a_pose_model_draws_its_17_keypoints_and_skeleton(qtbot, make_window, vision, coral, tmp_path):
    from app.ui.views.overlay import _BONE, _POINT, KEYPOINT_MIN_SCORE

    figures, image = _scripted(qtbot, make_window, vision, coral, MOVENET, tmp_path)
    assert figures["task"] == "keypoints"
    points = {k["name"]: k for k in figures["results"]["last"]["keypoints"]}
    assert figures["results"]["last_count"] == len(points) == 17
    frame = _Frame(figures, image)
    # LiteRT: left shoulder (0.89, 0.73) scores 0.70 (the README), as do the nose and right shoulder.
    left, right = points["left shoulder"], points["right shoulder"]
    assert abs(left["x"] - 0.89) < 0.05 and abs(left["y"] - 0.73) < 0.05 and left["score"] > 0.5
    for name in ("nose", "left shoulder", "right shoulder"):
        assert _rgb(_POINT) in frame.near(points[name]["x"], points[name]["y"], 1), name
    # A bone joins the shoulders; a point under the score floor is a hollow ring (no fill at its centre).
    assert _rgb(_BONE) in frame.near((left["x"] + right["x"]) / 2, (left["y"] + right["y"]) / 2, 2)
    low = [k for k in points.values() if k["score"] < KEYPOINT_MIN_SCORE]
    assert low and all(_rgb(_POINT) not in frame.near(k["x"], k["y"], 1) for k in low)
    assert figures["overlay"]["panels"][0][0] == "17 keypoints"


@pytest.mark.timeout(180)
def test_a_model_without_an_image_input_shows_its_output_statistics(qtbot, make_window, vision, coral, tmp_path):
    figures, _ = _scripted(qtbot, make_window, vision, coral, LSTM, tmp_path)
    assert figures["task"] == "raw"
    outputs = figures["results"]["last"]["outputs"]
    assert [o["name"] for o in outputs] == ["StatefulPartitionedCall:0"] and figures["results"]["last_count"] == 1
    panel = figures["overlay"]["panels"][0]
    stats = outputs[0]
    assert panel[0] == "raw model: 1 output, not decoded"
    assert panel[1] == "StatefulPartitionedCall:0  [1x10] uint8"
    assert panel[2].split() == ["min", f"{stats['min']:.4g}", "max", f"{stats['max']:.4g}", "mean",
                                f"{stats['mean']:.4g}"]  # fmt: skip
    assert "not fed this frame" in panel[3]  # no input takes the frame: the panel says so


def _first_result(model: str, photo: Path):
    """The model's result on the photo from the app's own live pipeline, with the frame it read."""
    from app.live.controller import LiveController
    from app.pipeline import InferenceConfig

    live = LiveController(f"images:{photo}", InferenceConfig(model=model, options={"threads": 1}))
    live.start()
    try:
        assert wait_until(lambda: live.latest_result() is not None and live.latest_frame() is not None, 60)
        return live.latest_frame(), live.latest_result()
    finally:
        live.stop()


@pytest.mark.timeout(180)
def test_side_b_has_its_own_colour_and_two_masks_share_the_frame(qtbot, vision, coral):
    from app.ui.views.overlay import SIDE_COLOURS, class_colour
    from app.ui.views.video import VideoView

    frame, ssd = _first_result(str(vision / SSD), _photo(coral))
    _, deeplab = _first_result(str(vision / DEEPLAB), _photo(coral))
    view = VideoView()
    qtbot.addWidget(view)
    view.resize(914, 537)  # the video's size in a 1280x860 window
    view.show()
    view.titles = ("A · CPU · ssd", "B · CPU · deeplab")
    frame = type(frame)(frame.index, frame.image, ssd.captured_at, frame.wall_time)  # not stale
    view.set_frame(frame, ssd, deeplab)
    view.repaint()
    rect = view.image_rect()
    image = view.grab().toImage()

    def near(nx: float, ny: float, radius: int = 3) -> set[tuple[int, int, int]]:
        cx, cy = int(rect.x() + nx * rect.width()), int(rect.y() + ny * rect.height())
        return {_rgb(image.pixelColor(cx + dx, cy + dy)) for dx in range(-radius, radius + 1)
                for dy in range(-radius, radius + 1)}  # fmt: skip

    tie = next(d for d in ssd.task.detections if d.label == "tie")
    ymin, xmin, ymax, _ = tie.box
    assert _rgb(SIDE_COLOURS[0]) in near(xmin, (ymin + ymax) / 2)  # A's box in A's colour
    assert [rows[0] for rows in view.panel_texts] == ["A · CPU · ssd", "B · CPU · deeplab"]
    assert view.panel_texts[1][1] == "2 classes, share of pixels"
    assert view.masks[1].built == 1 and view.masks[0].built == 0  # B's mask; A has none
    for _ in range(3):
        view.repaint()
    assert view.masks[1].built == 1 and view.masks[1].resized == 1  # once per result and size, however often painted
    view.resize(800, 450)
    qtbot.waitUntil(lambda: view.width() == 800, timeout=5_000)
    view.grab()  # paints at the new size
    assert view.masks[1].built == 1 and view.masks[1].resized == 2  # a new size: resized, not rebuilt
    view.resize(914, 537)
    qtbot.waitUntil(lambda: view.width() == 914, timeout=5_000)

    # Both sides segment: A's mask on the left half, B's on the right, a divider between.
    view.titles = ("A · CPU · deeplab", "B · CPU · deeplab")
    view.set_frame(frame, deeplab, deeplab)
    view.repaint()
    image = view.grab().toImage()
    assert view.masks[0].built == 1 and view.masks[1].built == 1  # the same result: nothing rebuilt
    assert (255, 255, 255) in near(0.5, 0.6, 2)  # the divider
    person = class_colour(15)
    for nx in (0.3, 0.7):  # her jacket, on each half: tinted towards the person's colour (green)
        r, g, b = _rgb(image.pixelColor(int(rect.x() + nx * rect.width()), int(rect.y() + 0.8 * rect.height())))
        assert g > r + 40 and g > b + 40 and person.green() > person.red(), (nx, r, g, b)


@pytest.mark.timeout(180)
def test_the_windows_model_options_reach_the_pipeline_and_only_its_model(qtbot, make_window, vision, coral):
    from app.model.spec import ModelOptions
    from app.model.task import Task

    ssd = str(vision / SSD)
    window = make_window(source=f"images:{_photo(coral)}", model=ssd, model_options=ModelOptions(task=Task.RAW))
    assert window.live.config().model_options.task == Task.RAW
    qtbot.waitUntil(lambda: (r := window.live.latest_result()) is not None and r.task is not None, timeout=60_000)
    assert window.live.latest_result().task.task == Task.RAW  # --task raw: the detector's outputs, not decoded
    # The panel says how the model is read, and why.
    qtbot.waitUntil(lambda: "Task" in window.delegation.text(), timeout=10_000)
    assert "raw (--task raw" in window.delegation.text()
    # Another model picked in the window is read as it is (a classifier here), not with --task raw.
    assert window.switch_model("efficientnet_lite0")
    assert window.live.config().model_options == ModelOptions()
    qtbot.waitUntil(
        lambda: (r := window.live.latest_result()) is not None and r.model == "efficientnet_lite0" and bool(r.top),
        timeout=60_000,
    )
    qtbot.waitUntil(lambda: "classification (structure: one image input" in window.delegation.text(), timeout=10_000)


def test_only_the_coloured_part_of_a_mask_is_drawn(qtbot):
    """Qt blends every pixel it draws, clear or not: the mask is drawn over the box of its non-background
    classes only, and a frame where the model found nothing costs no mask at all."""
    import numpy as np

    from app.model.decode import TaskResult
    from app.model.preprocess import CropBox
    from app.model.task import Task
    from app.ui.views.overlay import MaskCache

    cache = MaskCache()
    nothing = TaskResult(Task.SEGMENTATION, (), class_map=np.zeros((64, 48), np.int32), crop=CropBox(0, 0, 96, 128))
    assert cache.take(nothing) and cache.coloured.isEmpty()
    block = np.zeros((64, 48), np.int32)
    block[10:20, 5:9] = 3
    block[30, 40] = 300  # past 255: wraps to class 44, still coloured
    found = TaskResult(Task.SEGMENTATION, (), class_map=block, crop=CropBox(0, 0, 96, 128))
    cache.take(found)
    rect = cache.coloured
    assert (rect.x(), rect.y(), rect.right(), rect.bottom()) == (5, 10, 40, 30) and cache.built == 2
    pixels = cache.pixels
    assert pixels is not None and pixels[0, 0] == 0 and pixels[15, 6] != 0 and pixels[30, 40] != 0


def test_the_palette_is_the_one_qt_computed_before_it_moved_off_qt():
    """app/live/mask.py works out QColor.fromHsvF's bytes without Qt: every class's colour as Qt gives it."""
    from PySide6.QtGui import QColor

    from app.live.mask import PALETTE
    from app.ui.views.overlay import class_colour

    for index in range(256):
        colour = QColor.fromHsvF((index * 0.618034) % 1.0, 0.85, 1.0)
        assert tuple(int(v) for v in PALETTE[index]) == _rgb(colour), index
        if index:
            assert _rgb(class_colour(index)) == _rgb(colour), index


@pytest.mark.timeout(180)
def test_the_view_draws_the_masks_built_off_the_gui_thread_as_it_drew_its_own(qtbot, vision, coral):
    """With a MaskPreparer (the window's), the GUI thread builds and resizes no mask once the view has
    said its size: it wraps the ready pixels, and the picture is the one it painted building them itself."""
    import dataclasses
    import threading

    from app.live.mask import MaskPreparer
    from app.ui.views.video import VideoView

    frame, deeplab = _first_result(str(vision / DEEPLAB), _photo(coral))
    frame = type(frame)(frame.index, frame.image, deeplab.captured_at, frame.wall_time)  # not stale
    prep = MaskPreparer()
    own, fed = VideoView(), VideoView()
    fed.take_masks_from(prep)
    for view in (own, fed):
        qtbot.addWidget(view)
        view.resize(914, 537)  # the video's size in a 1280x860 window
        view.show()
        qtbot.waitExposed(view)

    def results_thread(result) -> None:  # as the controller's result callback runs it
        thread = threading.Thread(target=prep.add, args=("a", result), name="delegate-scope-results")
        thread.start()
        thread.join()

    results_thread(deeplab)
    for view in (own, fed):
        view.set_frame(frame, deeplab)
        view.grab()  # paints it (repaint() painted neither view here)
    assert own.masks[0].built == 1 and own.masks[0].taken == 0  # a view on its own builds it
    assert fed.masks[0].built == 0 and fed.masks[0].taken == 1 and prep.built == 1
    assert fed.masks[0].resized == 1  # the first: resized here, the size then told to the preparer
    assert own.grab().toImage() == fed.grab().toImage()

    for n in range(3):  # new results: built and resized off the GUI thread, at the size the view drew at
        newer = dataclasses.replace(deeplab, frame_index=deeplab.frame_index + n + 1,
                                    task=dataclasses.replace(deeplab.task))  # fmt: skip
        results_thread(newer)
        for view in (own, fed):
            view.set_frame(frame, newer)
            view.grab()
    assert fed.masks[0].built == 0 and fed.masks[0].taken == 4 and fed.masks[0].resized == 1
    assert own.masks[0].built == 4 and own.masks[0].resized == 4
    assert own.grab().toImage() == fed.grab().toImage()


@pytest.mark.timeout(180)
def test_a_feature_vector_forced_to_classification_shows_values_not_percentages(qtbot, make_window, tmp_path):
    """EfficientNet-Lite0 cut at its global average pool (1280 features, values past 1), read as a
    classifier on request: the panel lists the values as numbers, with no percentage and no bar."""
    from app.model.spec import ModelOptions
    from app.model.task import Task
    from app.numerics.cuts import CutModel
    from tests.helpers.paths import PHOTOS, ROOT

    model = CutModel((ROOT / "models" / "efficientnet_lite0.tflite").read_bytes())
    cut = tmp_path / "features.tflite"
    cut.write_bytes(model.prefix(next(c for c in model.cuts if c.op == "MEAN")))
    window = make_window(source=f"images:{PHOTOS / 'grace_hopper.jpg'}", model=str(cut),
                         model_options=ModelOptions(task=Task.CLASSIFICATION))  # fmt: skip
    qtbot.waitUntil(lambda: (r := window.live.latest_result()) is not None and bool(r.top), timeout=60_000)
    top = window.live.latest_result().top
    assert all(not p.probability for p in top) and top[0].score > 1
    qtbot.waitUntil(lambda: bool(window.video.panel_texts) and window.video.panel_texts[0][0].startswith("class "),
                    timeout=10_000)  # fmt: skip
    rows = window.video.panel_texts[0][: len(top)]
    # The same photo every frame: the rows painted are this result's, each "class N <value>".
    assert rows == [f"{p.label} {p.score:.4g}" for p in top], rows
    assert not any("%" in row for row in rows), rows
