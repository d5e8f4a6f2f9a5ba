"""bench, sweep, A/B, recording and report for models that are not classifiers, through the real CLI on
the third-party fixtures (`vision`; README figures are LiteRT's own on the coral photos): the figures
against LiteRT in a fresh interpreter, the others in processes forked from one that imported the app
(tests/helpers/forked_cli.py)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from app.recording.writer import COLUMNS, COLUMNS_TASKS, TASK_COLUMNS, read_recording
from tests.helpers.cli import CliRun, run_cli
from tests.helpers.forked_cli import ForkedCli

Cli = Callable[..., CliRun]  # run_cli (fresh=True: a fresh interpreter) or ForkedCli.run

SSD = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"
DEEPLAB = "deeplabv3.tflite"
MOVENET = "movenet_single_pose_lightning_ptq.tflite"
YAMNET = "yamnet_audio_classifier_with_metadata.tflite"
LSTM = "keras_lstm_mnist_ptq.tflite"


def short_bench(cli: Cli, model: Path, source: str, tmp_path: Path, *extra: str | Path) -> tuple[dict, Path, str]:
    """A few measured inferences with --json and --csv: (summary, recording, stdout)."""
    csv_path, json_path = tmp_path / f"{model.stem}.csv", tmp_path / f"{model.stem}.json"
    run = cli("bench", "--model", model, "--source", source, "--frames", "3", "--warmup", "1",
              "--csv", csv_path, "--json", json_path, *extra, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(json_path.read_text()), csv_path, run.stdout


def inference_rows(path: Path) -> list[dict]:
    return [r for r in read_recording(path).rows if not r["event"]]


def report_html(cli: Cli, recording: Path, tmp_path: Path) -> str:
    out = tmp_path / f"{recording.stem}.html"
    run = cli("report", recording, "--out", out, timeout=180)
    assert run.returncode == 0, run.stderr
    return out.read_text(encoding="utf-8")


# (model, task, the feeder's source, what the report's results row says, a label it found)
CASES = [
    (SSD, "detection", "none", "detections per frame", "person"),
    (DEEPLAB, "segmentation", "none", "classes present per frame", "class 15"),
    (MOVENET, "keypoints", "none", "mean keypoint score", None),
    (YAMNET, "raw", "generated (seed 0)", "outputs per frame", None),
    (LSTM, "raw", "generated (seed 0)", "outputs per frame", None),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "task", "feed", "figure", "label"), CASES, ids=[c[0].split("_")[0] for c in CASES])
def test_bench_any_model_says_task_and_feeder_records_and_reports(
    vision: Path,
    coral: Path,
    tmp_path: Path,
    name: str,
    task: str,
    feed: str,
    figure: str,
    label: str | None,
    forked_cli: ForkedCli,
) -> None:
    summary, recording, stdout = short_bench(
        forked_cli.run, vision / name, f"images:{coral / 'grace_hopper.bmp'}", tmp_path
    )
    assert summary["task"]["task"] == task and summary["task"]["frames"] >= 3
    assert summary["feed"]["source"] == feed
    assert f"task      {task}: " in stdout
    if feed != "none":  # no input takes the frame: every input generated, and said so with its range
        assert summary["feed"]["inputs"] and f"inputs    {feed}: " in stdout
    assert summary["metrics"]["inferences_total"] >= 3
    rows = inference_rows(recording)
    assert rows and read_recording(recording).rows[0].keys() >= set(TASK_COLUMNS)
    with open(recording, encoding="utf-8") as f:
        assert next(csv.reader(f)) == COLUMNS_TASKS
    for row in rows:  # top-1 empty, the task's own columns filled
        assert row["top1_label"] == "" and row["top_labels"] == ""
        assert row["task"] == task and int(row["result_count"]) > 0 and row["result"]
    html = report_html(forked_cli.run, recording, tmp_path)
    assert f"<th>task</th><td>{task}</td>" in html
    assert figure in html
    if label:
        assert label in html


@pytest.mark.slow
def test_bench_figures_match_litert_on_the_photo(vision: Path, coral: Path, tmp_path: Path) -> None:
    """The figures bench sums up are what the README's LiteRT run gives on grace_hopper.bmp."""
    photo = f"images:{coral / 'grace_hopper.bmp'}"
    fresh = partial(run_cli, fresh=True)
    ssd, _, _ = short_bench(fresh, vision / SSD, photo, tmp_path)
    found = {entry["label"]: entry["mean_score"] for entry in ssd["task"]["labels"]}
    assert set(found) == {"person", "tie"}  # README: person 0.72, tie 0.66 (scores > 0.5)
    assert found["person"] == pytest.approx(0.72, abs=0.05) and found["tie"] == pytest.approx(0.66, abs=0.05)
    deeplab, _, _ = short_bench(fresh, vision / DEEPLAB, photo, tmp_path)
    shares = {entry["label"]: entry["mean_share"] for entry in deeplab["task"]["labels"]}
    assert shares["class 15"] == pytest.approx(0.63, abs=0.03)  # README: person (15) 63%
    movenet, _, _ = short_bench(fresh, vision / MOVENET, photo, tmp_path)
    assert movenet["task"]["mean_keypoint_score"] == pytest.approx(0.28, abs=0.05)


@pytest.mark.slow
def test_bench_inputs_file_feeds_a_model_with_no_image(vision: Path, tmp_path: Path, forked_cli: ForkedCli) -> None:
    from app.model.spec import load_model_spec

    (waveform,) = load_model_spec(vision / YAMNET).inputs
    npz = tmp_path / "tone.npz"
    t = np.arange(int(np.prod(waveform.shape)), dtype=np.float32) / 16000
    np.savez(npz, **{waveform.name: (0.5 * np.sin(2 * np.pi * 440 * t)).reshape(waveform.shape)})  # by name
    summary, recording, stdout = short_bench(forked_cli.run, vision / YAMNET, "synthetic", tmp_path, "--inputs", npz)
    assert summary["feed"] == {"source": "tone.npz", "inputs": []}
    assert "inputs    tone.npz" in stdout
    assert summary["config"]["model_options"]["inputs_file"] == str(npz)
    # One fixed input to a model without state: every inference gives the same output; the
    # generated feeder's eight samples give others.
    fixed = {r["result_scores"] for r in inference_rows(recording)}
    _, generated, _ = short_bench(forked_cli.run, vision / YAMNET, "synthetic", tmp_path / "generated")
    assert len(fixed) == 1 and fixed != {r["result_scores"] for r in inference_rows(generated)}


@pytest.mark.slow
def test_a_classifier_recording_keeps_its_columns(tmp_path: Path, forked_cli: ForkedCli) -> None:
    summary, recording, _ = short_bench(forked_cli.run, Path("efficientnet_lite0"), "synthetic", tmp_path)
    with open(recording, encoding="utf-8") as f:
        assert next(csv.reader(f)) == COLUMNS
    assert "task" not in summary and "feed" not in summary
    assert all(r["top1_label"] for r in inference_rows(recording))


@pytest.mark.slow
def test_sweep_of_a_segmenter(vision: Path, coral: Path, tmp_path: Path, forked_cli: ForkedCli) -> None:
    out = tmp_path / "sweep.json"
    run = forked_cli.run("sweep", "--model", vision / DEEPLAB, "--source", f"images:{coral / 'cat.bmp'}",
                         "--frames", "3", "--warmup", "1", "--json", out, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = [r for r in json.loads(out.read_text())["rows"] if r["outcome"] == "measured"]
    assert len(rows) >= 2  # CPU at 1 thread and at every core (a 2-core machine: 2)
    assert all(r["task"] == "segmentation" and r["feed"] == "none" for r in rows)
    assert rows[0]["results"]["labels"]  # what it found: the cat photo's classes
    # Against the first configuration: the same pixels on another thread count agree.
    assert rows[1]["agreement"]["pixel_agreement"] == pytest.approx(1.0, abs=1e-3)
    assert "segmentation" in run.stdout


@pytest.mark.slow
def test_sweep_of_a_model_with_no_image_compares_like_inputs(
    vision: Path, tmp_path: Path, forked_cli: ForkedCli
) -> None:
    """Each configuration is compared with the first on frames fed the same generated inputs: the same
    model on another thread count gives the same outputs (a frame's place in the replay lap is not
    enough, its index picks the generated sample)."""
    out = tmp_path / "sweep.json"
    run = forked_cli.run("sweep", "--model", vision / YAMNET, "--source", "synthetic", "--frames", "5", "--warmup", "1",
                  "--json", out, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = [r for r in json.loads(out.read_text())["rows"] if r["outcome"] == "measured"]
    assert len(rows) >= 2 and all(r["task"] == "raw" and r["feed"] == "generated (seed 0)" for r in rows)
    g = rows[1]["agreement"]
    assert g["frames"] >= 5 and g["agreeing_frames"] == g["frames"]
    assert g["cosine_min"] == [pytest.approx(1.0, abs=1e-6)]
    assert "inputs: generated (seed 0)" in run.stdout


def ab(cli: Cli, a: Path, source: str, tmp_path: Path, *extra: str | Path) -> tuple[dict, Path, str]:
    out, csv_path = tmp_path / "ab.json", tmp_path / "ab.csv"
    run = cli("bench", "--model", a, "--source", source, "--frames", "3", "--warmup", "1",
              "--compare-alone-seconds", "0", "--json", out, "--csv", csv_path, *extra, timeout=240)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text()), csv_path, run.stdout


@pytest.mark.slow
def test_ab_detector_against_itself_agrees_fully(
    vision: Path, coral: Path, tmp_path: Path, forked_cli: ForkedCli
) -> None:
    summary, csv_path, stdout = ab(forked_cli.run, vision / SSD, f"images:{coral / 'grace_hopper.bmp'}", tmp_path,
                                   "--compare-with", "cpu")  # fmt: skip
    g = summary["agreement"]["task"]
    assert g["task"] == "detection" and g["frames"] >= 3
    assert g["match_rate"] == 1.0 and g["mean_iou"] == 1.0 and g["mean_score_diff"] == 0.0
    assert g["detections_a"] == g["detections_b"] >= 6  # person and tie on every frame
    assert "detections matched (IoU >= 0.5) 100.0%" in stdout
    with open(csv_path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["task"] == "detection" and r["mean_iou"] == "1" and r["top1_agree"] == "1" for r in rows)
    # report on the two sides' recordings gives the A/B run's own agreement, from its comparison file
    out = tmp_path / "pair.html"
    run = forked_cli.run("report", tmp_path / "ab-a.csv", tmp_path / "ab-b.csv", "--out", out, timeout=180)
    assert run.returncode == 0, run.stderr
    assert f"the frame agrees on 100.0% of {len(rows)} common frames" in out.read_text(encoding="utf-8")


@pytest.mark.slow
def test_ab_of_a_model_with_no_image_feeds_both_sides_alike(
    vision: Path, tmp_path: Path, forked_cli: ForkedCli
) -> None:
    """Each side's feeder picks its generated sample by frame: A and B get the same waveform on a frame,
    whichever frames each skipped, so a model against itself agrees exactly."""
    # Unpaced: frames come faster than the sides take them, so each side skips frames of its own.
    summary, _, stdout = ab(forked_cli.run, vision / YAMNET, "synthetic", tmp_path, "--compare-with", "cpu",
                            "--no-pace", "--frames", "30")  # fmt: skip
    g = summary["agreement"]["task"]
    assert g["task"] == "raw" and g["frames"] >= 3 and g["agreeing_frames"] == g["frames"]
    assert g["max_abs_diff"] == [0.0] and g["cosine_min"] == [pytest.approx(1.0, abs=1e-12)]
    assert "output 0: max |A-B| 0, cosine 1.0000" in stdout


def test_feeders_pick_the_sample_by_frame(vision: Path) -> None:
    """Two sessions of one model (A/B) that took different frames before still feed frame k alike."""
    from app.model.feed import InputFeeder
    from app.model.spec import load_model_spec

    spec = load_model_spec(vision / YAMNET)
    a, b = InputFeeder(spec), InputFeeder(spec)
    a.inputs(None, 3)  # A took frame 3 first; B did not
    (a5,), (b5,) = a.inputs(None, 5), b.inputs(None, 5)
    assert np.array_equal(a5, b5)
    assert not np.array_equal(a5, a.inputs(None, 6)[0])  # the next frame: the next sample


def perturbed(model: Path, out: Path, factor: float) -> Path:
    """`model` with its largest float32 weight buffer scaled: another model of the same task."""
    from ai_edge_litert import schema_py_generated as fb

    data = bytearray(model.read_bytes())
    m = fb.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    best = None
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        buf = m.Buffers(t.Buffer())
        if t.Type() == fb.TensorType.FLOAT32 and not buf.DataIsNone() and buf.DataLength() > 0:
            if best is None or buf.DataLength() > best[1]:
                best = (buf._tab.Vector(buf._tab.Offset(4)), buf.DataLength())
    assert best is not None
    start, size = best
    weights = np.frombuffer(data, np.float32, size // 4, start)
    data[start : start + size] = (weights * np.float32(factor)).astype(np.float32).tobytes()
    out.write_bytes(bytes(data))
    return out


@pytest.mark.slow
def test_ab_two_segmenters_agree_less_than_fully(
    vision: Path, coral: Path, tmp_path: Path, forked_cli: ForkedCli
) -> None:
    other = perturbed(vision / DEEPLAB, tmp_path / "deeplab_scaled.tflite", 0.6)
    summary, _, stdout = ab(forked_cli.run, vision / DEEPLAB, f"images:{coral / 'grace_hopper.bmp'}", tmp_path,
                            "--compare-model", other)  # fmt: skip
    g = summary["agreement"]["task"]
    assert g["task"] == "segmentation"
    assert 0.0 < g["pixel_agreement"] < 1.0 and 0.0 < g["miou"] < 1.0
    assert "pixels agree" in stdout and "mIoU" in stdout
