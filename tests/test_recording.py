"""Recording: spreadsheet-safe cells, and a file that survives kill -9 of the writer."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.recording import COLUMNS, SessionRecorder, neutralise, read_session
from tests.conftest import ROOT


@pytest.mark.parametrize("text", ["=1+1", "+cmd", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_formula_prefixes_are_neutralised(text: str):
    assert neutralise(text) == "'" + text


def test_ordinary_text_is_not_altered():
    assert neutralise("tabby, tabby cat") == "tabby, tabby cat"


def test_text_cells_are_neutralised_numeric_cells_never(tmp_path: Path):
    rec = SessionRecorder(tmp_path / "r.csv")
    rec.add_row({"top1_label": '=HYPERLINK("x")', "top1_score": -0.5, "message": "-dash"})
    rec.stop()
    (row,) = read_session(tmp_path / "r.csv").rows
    assert row["top1_label"] == '\'=HYPERLINK("x")'
    assert row["message"] == "'-dash"
    assert row["top1_score"] == "-0.5"


def test_an_existing_recording_is_never_overwritten(tmp_path: Path):
    (tmp_path / "r.csv").write_text("keep me")
    with pytest.raises(OSError, match="will not overwrite"):
        SessionRecorder(tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text() == "keep me"


def test_kill_9_mid_recording_leaves_a_readable_file(tmp_path: Path):
    path = tmp_path / "killed.csv"
    code = (
        "import time, sys\n"
        "from app.recording import SessionRecorder\n"
        f"rec = SessionRecorder(__import__('pathlib').Path({str(path)!r}))\n"
        "i = 0\n"
        "while True:\n"
        "    rec.add_row({'frame_id': i, 'top1_label': 'label ' + 'x' * 200, 'inference_ms': 1.5})\n"
        "    i += 1\n"
        "    if i % 100 == 0: time.sleep(0.001)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    deadline = time.monotonic() + 30
    while (not path.exists() or path.stat().st_size < 500_000) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    session = read_session(path)
    assert session.skipped_lines <= 1
    assert len(session.rows) > 1000
    ids = [int(r["frame_id"]) for r in session.rows]
    assert ids == list(range(len(ids)))  # complete rows are in order with none missing
    assert all(list(r) == COLUMNS for r in session.rows[:1])
