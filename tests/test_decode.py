"""The detection threshold is the user's: `--score-threshold` reaches the decoder of `predict` and `bench`,
every detection result says how many valid detections it hid (`below_threshold`), and the default (0.5)
keeps what was kept before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.model.decode import DETECTION_THRESHOLD
from tests.helpers.cli import run_cli
from tests.helpers.vulkan import NO_VULKAN

SSD = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"
SSD_OUTPUTS = 10  # its count output: TFLite_Detection_PostProcess's max detections


def _predict(vision: Path, coral: Path, *more: str) -> dict:
    run = run_cli("predict", "--model", vision / SSD, "--json", coral / "grace_hopper.bmp", *more, env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    (result,) = run.json()["results"]
    return result


def test_a_lower_threshold_shows_what_the_default_hid_and_counts_the_rest(vision, coral):
    default = _predict(vision, coral)
    low = _predict(vision, coral, "--score-threshold", "0.1")
    assert default["score_threshold"] == DETECTION_THRESHOLD == 0.5 and low["score_threshold"] == 0.1
    kept = [(d["label"], d["score"]) for d in default["detections"]]
    # The default keeps what it kept (LiteRT's answer on this photo, the fixtures' README: person, tie).
    assert [label for label, _ in kept] == ["person", "tie"] and all(s >= 0.5 for _, s in kept)
    assert len(default["detections"]) + default["below_threshold"] == SSD_OUTPUTS
    assert default["below_threshold"] > 0
    # At 0.1: the same two first, then what 0.5 hid, each of them at 0.1 or more; the rest still counted.
    assert [(d["label"], d["score"]) for d in low["detections"][: len(kept)]] == kept
    hidden = low["detections"][len(kept) :]
    assert hidden and all(0.1 <= d["score"] < 0.5 for d in hidden)
    assert len(hidden) == default["below_threshold"] - low["below_threshold"]
    assert len(low["detections"]) + low["below_threshold"] == SSD_OUTPUTS
    everything = _predict(vision, coral, "--score-threshold", "0")
    assert len(everything["detections"]) == SSD_OUTPUTS and everything["below_threshold"] == 0


def test_the_line_says_what_the_threshold_hid(vision, coral):
    run = run_cli("predict", "--model", vision / SSD, coral / "grace_hopper.bmp", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith(str(coral / "grace_hopper.bmp")))
    result = _predict(vision, coral)
    kept = ", ".join(f"{d['label']} {d['score']:.2f}" for d in result["detections"])
    assert f"detection: {kept} ({result['below_threshold']} below 0.5)   (" in line, line


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "half"])
def test_a_threshold_outside_0_to_1_is_a_usage_error(value):
    for command in ("predict", "bench", "gui"):
        args = [command, "--score-threshold", value] + (["photo.jpg"] if command == "predict" else [])
        run = run_cli(*args)
        assert run.returncode == 2 and "--score-threshold" in run.stderr and "Traceback" not in run.stderr, command


@pytest.mark.slow
def test_bench_decodes_at_the_given_threshold(vision, coral, tmp_path):
    """bench's pipeline decodes at --score-threshold: at 0 every one of the SSD's 10 per frame is kept,
    and the JSON's config says the threshold (said only when it is not the default)."""
    summary = tmp_path / "bench.json"
    run = run_cli("bench", "--model", vision / SSD, "--source", f"images:{coral / 'grace_hopper.bmp'}",
                  "--frames", "5", "--threads", "1", "--score-threshold", "0", "--json", summary,
                  env=NO_VULKAN, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = json.loads(summary.read_text())
    assert out["config"]["score_threshold"] == 0
    assert "10.0 detections per frame (max 10)" in run.stdout, run.stdout


def test_the_default_threshold_is_not_written_into_a_config():
    """bench --json and the recordings stay as they were when the threshold is the default."""
    from app.pipeline import InferenceConfig

    assert "score_threshold" not in InferenceConfig().to_dict()
    assert InferenceConfig(score_threshold=0.25).to_dict()["score_threshold"] == 0.25
    assert InferenceConfig().same_session(InferenceConfig(score_threshold=0.1))  # live, no reopen
