"""`report`'s memory plot: each segment's resident set, NVML's GPU memory where the recording has it, the init
footprint marked where its session opened, and "not recorded" where a recording (older than format 4, or
made without NVML) has no GPU memory."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from app.recording.writer import COLUMNS_V3, RecordingWriter
from app.report.build import build_report
from app.report.data import load_segments
from app.report.plots import init_footprint, memory_over_time

FACTS = {"requested": "gpu", "used": "gpu", "init_mb": 47.4}


def _row(i: int, rss: float, gpu: float | None) -> dict:
    return {"frame_id": i, "model": "m", "backend_requested": "gpu", "backend_used": "gpu", "inference_ms": 2.0,
            "rss_mb": rss, "gpu_mem_mb": gpu, "top1_index": 1, "top1_label": "cat", "top1_score": 0.9}  # fmt: skip


def with_gpu_memory(path: Path) -> Path:
    """A GPU recording: resident set 400-419 MB, GPU memory 96 MB, the session's init 47.4 MB (sidecar)."""
    recorder = RecordingWriter(path, {"sessions": {"1": FACTS}})
    for i in range(20):
        recorder.add_row(_row(i, 400.0 + i, 96.0), monotonic=recorder._t0 + 1.0 + i * 0.1)
    recorder.stop()
    return path


def before_format_4(path: Path) -> Path:
    """A recording with the version 3 header (no gpu_mem_mb column) and no sidecar."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS_V3, extrasaction="ignore")
        writer.writeheader()
        for i in range(20):
            writer.writerow({"timestamp": "2026-12-01T10:00:00.000+00:00", "t_s": f"{1 + i * 0.1:.6f}",
                             **_row(i, 300.0, None), "backend_used": "cpu", "backend_requested": "cpu"})  # fmt: skip
    return path


def _drawn(tmp_path: Path) -> tuple[Figure, list]:
    sessions = load_segments(with_gpu_memory(tmp_path / "gpu.csv"), 0)
    sessions += load_segments(before_format_4(tmp_path / "old.csv"), len(sessions))
    fig = Figure()
    memory_over_time(fig.subplots(), sessions)
    return fig, sessions


def test_resident_and_gpu_memory_are_drawn_as_recorded(tmp_path):
    fig, _ = _drawn(tmp_path)
    (ax,) = fig.axes
    drawn = [(line.get_linestyle(), list(line.get_ydata())) for line in ax.get_lines() if len(line.get_ydata())]
    assert ("-", [400.0 + i for i in range(20)]) in drawn  # the GPU recording's resident set, solid
    assert ("--", [96.0] * 20) in drawn  # its GPU memory, dashed
    assert ("-", [300.0] * 20) in drawn  # the older recording's resident set
    assert not any(style == "--" and ys == [300.0] * 20 for style, ys in drawn)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["resident set (process and children)", "GPU memory (NVML)", "GPU memory not recorded for #2"]


def test_the_init_footprint_is_marked_where_its_session_opened(tmp_path):
    fig, sessions = _drawn(tmp_path)
    assert init_footprint(sessions[0]) == 47.4 and init_footprint(sessions[1]) is None  # no sidecar: not recorded
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count(" init 47 MB") == 1, texts


def test_an_untrusted_init_footprint_is_not_drawn(tmp_path):
    path = tmp_path / "bad.csv"
    recorder = RecordingWriter(path, {"sessions": {"1": {**FACTS, "init_mb": "47"}}})
    recorder.add_row(_row(0, 400.0, None))
    recorder.stop()
    (session,) = load_segments(path, 0)
    assert init_footprint(session) is None


@pytest.mark.slow
def test_a_recording_before_format_4_reports_gpu_memory_not_recorded(tmp_path):
    old = before_format_4(tmp_path / "old.csv")
    page = tmp_path / "r.html"
    build_report([with_gpu_memory(tmp_path / "gpu.csv"), old], page)
    text = page.read_text(encoding="utf-8")
    assert "<h2>Memory</h2>" in text
    assert "410 MB / GPU 96 MB" in text  # medians: the resident set over the rows, NVML's GPU memory
    assert "300 MB / GPU not recorded" in text
    png = tmp_path / "r.png"
    build_report([old], png)
    assert png.stat().st_size > 50_000


def test_an_upright_label_is_cut_to_what_its_plot_can_hold():
    """An event's label turned upright in a short panel was clipped at both ends; it is cut to fit."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from app.report.plots import _vertical_chars

    short = Figure(figsize=(4, 1.5), dpi=100).add_subplot()
    tall = Figure(figsize=(4, 6), dpi=100).add_subplot()
    assert 8 <= _vertical_chars(short, 8, 60) < 20  # ~115 px of axes: ~17 characters of 8 pt
    assert _vertical_chars(tall, 8, 60) == 60  # room for the whole label: the cap holds
