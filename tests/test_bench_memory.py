"""bench's memory figures (app/metrics/memory.py wired through app/tasks/bench.py): what the model's open
cost, the measured span's peak and median resident set, GPU memory or why not, on each side of A/B; and a
budget on them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.gates.budget import parse_budgets
from app.gates.figures import SummaryKind
from app.metrics.memory import memory_unavailable

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(memory_unavailable() is not None, reason=str(memory_unavailable()))


def bench(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "app", "bench", "--frames", "20", "--threads", "1", "--json",
                           str(out), *args], capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("\nmemory ") + proc.stdout.startswith("memory ") >= 1, proc.stdout
    return json.loads(out.read_text())


def test_a_run_reports_its_init_peak_and_steady_memory(tmp_path):
    memory = bench(tmp_path)["memory"]
    assert memory["init_mb"] > 0 and memory["init_mb"] == pytest.approx(memory["file_mb"] + memory["anon_mb"], abs=0.2)
    assert memory["anon_mb"] > 10  # EfficientNet-Lite0's 18 MB of float weights, packed by XNNPACK, are anonymous
    assert memory["peak_mb"] >= memory["steady_mb"] > memory["init_mb"]
    assert (memory["gpu_mb"] is None) == ("gpu_mb" in memory["reasons"])


def test_each_side_of_a_b_has_its_own_init(tmp_path):
    run = bench(tmp_path, "--compare-model", "efficientnet_lite0_int8", "--compare-alone-seconds", "0")
    a, b = run["a"]["memory"], run["b"]["memory"]
    assert a["init_mb"] > b["init_mb"] > 0  # the float model's 18 MB of weights against the int8 model's 5 MB
    assert a["peak_mb"] == b["peak_mb"]  # the process's, both sides together


def test_a_budget_names_a_memory_figure():
    (budget,) = parse_budgets(["memory.peak_mb<=+10%"], SummaryKind.BENCH, baseline=True)
    assert budget.figure.unit == "MB" and budget.figure.bench == "memory.peak_mb"
    (absolute,) = parse_budgets(["memory.init_mb<=64MB"], SummaryKind.BENCH, baseline=False)
    assert absolute.amount == 64


def test_inspect_says_what_the_file_implies_for_memory():
    proc = subprocess.run([sys.executable, "-m", "app", "inspect", "--model", "efficientnet_lite0_int8", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    memory = json.loads(proc.stdout)["memory"]
    assert 4_000_000 < memory["weights_bytes"] < 5_500_000  # int8 EfficientNet-Lite0's constants
    assert 0 < memory["activations_bytes"] <= memory["activations_sum_bytes"]
    assert len(memory["largest"]) == 5
    by = {d["delegate"]: d for d in memory["delegates"]}
    assert by["cpu"]["status"] == by["gpu"]["status"] == "predicted" and by["coreml"]["status"] == "not reported"
