"""`gui`'s delegate and A/B options: they reach the window's start (GuiOptions, start_config), leave the
saved settings' choice alone when not given, and a bad side B fails before any window opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli.main import build_parser
from tests.helpers.forked_cli import ForkedCli


def _options(monkeypatch: pytest.MonkeyPatch, *argv: str):
    import app.ui.app

    received = []
    monkeypatch.setattr(app.ui.app, "run_gui", lambda options: received.append(options) or 0)
    args = build_parser().parse_args(["gui", *argv])
    assert args.handler(args) == 0
    return received[0]


def test_delegate_tuning_and_ab_reach_the_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from app.ui.settings import SavedSettings
    from app.ui.window_config import start_config

    labels = tmp_path / "b.txt"
    options = _options(monkeypatch, "--source", "demo", "--gpu-precision", "fp32", "--allow-software-gpu",
                       "--compare-with", "gpu", "--compare-model", "efficientnet_lite0_int8",
                       "--compare-labels", str(labels))  # fmt: skip
    assert (options.gpu_precision, options.allow_software_gpu) == ("fp32", True)
    assert (options.compare_with, options.compare_model, options.compare_labels) == ("gpu", "efficientnet_lite0_int8",
                                                                                       labels)  # fmt: skip
    assert options.compare
    config = start_config(options, SavedSettings()).config.options
    assert (config.precision, config.allow_software) == ("fp32", True)
    # Not given: the saved choice stands (the Controls' GPU precision and software GPU).
    plain = _options(monkeypatch, "--source", "demo")
    assert not plain.compare and plain.gpu_precision is None and plain.allow_software_gpu is None
    saved = SavedSettings(precision="fp32", allow_software=True)
    config = start_config(plain, saved).config.options
    assert (config.precision, config.allow_software) == ("fp32", True)


def test_a_bad_side_b_fails_before_the_window(tmp_path: Path, forked_cli: ForkedCli):
    env = {"QT_QPA_PLATFORM": "offscreen"}
    missing = forked_cli.run("gui", "--compare-model", tmp_path / "none.tflite", "--exit-after", "1", env=env)
    assert missing.returncode == 3 and "none.tflite" in missing.stderr and "Traceback" not in missing.stderr
    labels = forked_cli.run("gui", "--compare-labels", tmp_path / "none.txt", "--exit-after", "1", env=env)
    assert labels.returncode == 2 and "--compare-labels" in labels.stderr and "Traceback" not in labels.stderr
