"""A scripted window on a software "GPU" (Chromium's SwiftShader, a real Vulkan driver on the CPU): every
place that names the backend says so, and `--compare-with` starts A/B from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli


@pytest.mark.slow
def test_a_software_gpu_is_said_on_the_badge_in_stats_and_in_the_recording(
    swiftshader: dict, three_ops: Path, tmp_path: Path
):
    stats, csv = tmp_path / "stats.json", tmp_path / "run.csv"
    run = run_cli("gui", "--source", "synthetic", "--model", three_ops, "--delegate", "gpu", "--allow-software-gpu",
                  "--compare-with", "cpu", "--settings", tmp_path / "s.ini", "--record", csv,
                  "--exit-after", "6", "--stats", stats,
                  env={**swiftshader, "QT_QPA_PLATFORM": "offscreen"}, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = json.loads(stats.read_text())
    delegate = out["session"]["delegate"]
    assert delegate["used"] == "gpu" and delegate["software"] is True, delegate
    assert out["overlay"]["badge"].startswith("GPU (software: SwiftShader)  "), out["overlay"]["badge"]
    assert out.get("task_b") == "classification"  # --compare-with ran B beside A from the start
    sessions = json.loads(Path(f"{csv}.meta.json").read_text())["sessions"]
    assert [s["shown_as"] for s in sessions.values()] == ["GPU (software: SwiftShader)"], sessions
