"""Recording: spreadsheet-safe cells, and a file that survives kill -9 of the writer."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.recording.writer import COLUMNS, RecordingWriter, neutralise, read_recording
from tests.helpers.cli import run_cli
from tests.helpers.paths import ROOT
from tests.helpers.wait import wait_until


@pytest.mark.parametrize("text", ["=1+1", "+cmd", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_formula_prefixes_are_neutralised(text: str):
    assert neutralise(text) == "'" + text


def test_ordinary_text_is_not_altered():
    assert neutralise("tabby, tabby cat") == "tabby, tabby cat"


def test_text_cells_are_neutralised_numeric_cells_never(tmp_path: Path):
    rec = RecordingWriter(tmp_path / "r.csv")
    rec.add_row({"top1_label": '=HYPERLINK("x")', "top1_score": -0.5, "message": "-dash"})
    rec.stop()
    (row,) = read_recording(tmp_path / "r.csv").rows
    assert row["top1_label"] == '\'=HYPERLINK("x")'
    assert row["message"] == "'-dash"
    assert row["top1_score"] == "-0.5"


def test_an_existing_recording_is_never_overwritten(tmp_path: Path):
    (tmp_path / "r.csv").write_text("keep me")
    with pytest.raises(OSError, match="will not overwrite"):
        RecordingWriter(tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text() == "keep me"


def test_kill_9_mid_recording_leaves_a_readable_file(tmp_path: Path):
    path = tmp_path / "killed.csv"
    code = (
        "import time, sys\n"
        "from app.recording.writer import RecordingWriter\n"
        f"rec = RecordingWriter(__import__('pathlib').Path({str(path)!r}))\n"
        "i = 0\n"
        "while True:\n"
        "    rec.add_row({'frame_id': i, 'top1_label': 'label ' + 'x' * 200, 'inference_ms': 1.5})\n"
        "    i += 1\n"
        "    if i % 100 == 0: time.sleep(0.001)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    written = wait_until(lambda: path.exists() and path.stat().st_size >= 500_000, timeout=30)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert written
    session = read_recording(path)
    assert session.skipped_lines <= 1
    assert len(session.rows) > 1000
    ids = [int(r["frame_id"]) for r in session.rows]
    assert ids == list(range(len(ids)))  # complete rows are in order with none missing
    assert all(list(r) == COLUMNS for r in session.rows[:1])


def test_every_field_round_trips(tmp_path: Path):
    from app.recording.writer import TEXT_COLUMNS

    row = {c: f"{c} value" if c in TEXT_COLUMNS else 1.25 + i for i, c in enumerate(COLUMNS)}
    row.update(frame_id=41, threads=2, top1_index=652, top_indices="652|400", top_scores="0.5|0.25")
    row.pop("timestamp"), row.pop("t_s")
    rec = RecordingWriter(tmp_path / "all.csv", {"settings": {"x": 1}})
    rec.add_row(row, wall_time=1_800_000_000.123, monotonic=rec._t0 + 2.5)
    state = rec.stop()
    assert state.rows == 1 and state.error is None
    session = read_recording(tmp_path / "all.csv")
    (back,) = session.rows
    assert back["timestamp"] == "2027-01-15T08:00:00.123+00:00"
    assert back["t_s"] == "2.500000"
    for column, value in row.items():
        expected = value if isinstance(value, str) else (str(value) if isinstance(value, int) else f"{value:.6g}")
        assert back[column] == expected, column
    assert session.metadata["complete"] is True and session.metadata["settings"] == {"x": 1}
    assert session.metadata["rows"] == 1 and session.metadata["lost_rows"] == 0


HOSTILE = [
    "=cmd|' /C calc'!A0",
    "+SUM(1)",
    "-1+1",
    "@import",
    "\tTAB",
    "\rCR",
    'comma, "quoted" label',
    "two\nlines",
    "Ünïcødé ラベル 🐈",
    "",
]


def test_hostile_labels_survive_and_cannot_execute(tmp_path: Path):
    rec = RecordingWriter(tmp_path / "labels.csv")
    for i, label in enumerate(HOSTILE):
        rec.add_row({"frame_id": i, "top1_label": label, "top_labels": f"{label}|b", "top1_score": -0.25})
    rec.stop()
    session = read_recording(tmp_path / "labels.csv")
    assert session.skipped_lines == 0 and len(session.rows) == len(HOSTILE)
    for label, row in zip(HOSTILE, session.rows, strict=True):
        cell = row["top1_label"]
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))  # nothing a spreadsheet evaluates
        # The documented inverse: one leading quote removed gives the original text back.
        original = cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell
        assert original == label
        assert row["top1_score"] == "-0.25"  # numbers are never altered


@pytest.mark.slow
def test_a_full_disk_stops_the_recording_not_the_bench(tmp_path: Path):
    """A real file size limit (RLIMIT_FSIZE) on a real bench process: writes fail with EFBIG."""
    csv_path = tmp_path / "full.csv"
    limit = 40_000
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"  # write() then fails with EFBIG instead of a signal
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "from app.cli.main import main\n"
        f"sys.exit(main(['bench', '--source', 'synthetic:320x240@60', '--frames', '400', '--threads', '1', "
        f"'--model', 'efficientnet_lite0_int8', '--csv', {str(csv_path)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "recording stopped: File too large" in proc.stdout
    assert "inference" in proc.stdout  # the summary was printed: the bench ran to the end
    session = read_recording(csv_path)
    assert 20 < len(session.rows) < 400 and session.skipped_lines <= 1
    assert csv_path.stat().st_size <= limit


def test_a_recording_whose_file_vanishes_stops_with_a_message(tmp_path: Path):
    folder = tmp_path / "gone"
    rec = RecordingWriter(folder / "r.csv")
    rec.add_row({"frame_id": 0})
    assert wait_until(lambda: rec.state.rows == 1, timeout=10)  # written: the file is in use when it goes
    (folder / "r.csv").unlink()
    (folder / "r.csv.meta.json").unlink()
    folder.rmdir()
    deadline = time.monotonic() + 10
    i = 1
    while rec.state.error is None and time.monotonic() < deadline:
        rec.add_row({"frame_id": i})
        i += 1
        time.sleep(0.01)
    assert rec.state.error and "removed" in rec.state.error
    assert rec.add_row({"frame_id": -1}) is False  # later rows are refused, not silently lost
    rec.stop()


def test_a_version_1_recording_is_read_with_the_per_thread_cpu_cells_empty(tmp_path):
    import csv

    from app.recording.writer import COLUMNS, COLUMNS_V1, read_recording

    path = tmp_path / "v1.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS_V1)
        writer.writerow(["2026-12-01T10:00:00.000+00:00", "0.5", "", "7"] + ["1"] * (len(COLUMNS_V1) - 4))
    rows = read_recording(path).rows
    assert len(rows) == 1 and list(rows[0]) != COLUMNS and set(rows[0]) == set(COLUMNS)
    assert rows[0]["frame_id"] == "7" and rows[0]["inference_cpu_ms"] == "1"
    assert rows[0]["inference_thread_cpu_ms"] == rows[0]["runtime_threads_cpu_ms"] == ""


def test_a_version_2_recording_is_read_with_the_power_cells_empty(tmp_path):
    """Recordings made before the power columns (format version 2, with and without the task columns)
    still load, their power state unknown."""
    import csv

    from app.recording.writer import COLUMNS_TASKS, COLUMNS_TASKS_V2, COLUMNS_V2

    for name, header, full in (("v2.csv", COLUMNS_V2, COLUMNS), ("v2t.csv", COLUMNS_TASKS_V2, COLUMNS_TASKS)):
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerow(["2026-12-01T10:00:00.000+00:00", "0.5", "", "7"] + ["1"] * (len(header) - 4))
        rows = read_recording(path).rows
        assert len(rows) == 1 and set(rows[0]) == set(full), name
        assert rows[0]["gpu_util_pct"] == "1" and rows[0].get("result", "1") == "1", name
        assert rows[0]["gpu_sm_clock_mhz"] == rows[0]["gpu_power_w"] == rows[0]["cpu_mhz"] == "", name


def test_the_power_columns_round_trip_beside_an_empty_one(tmp_path):
    """GPU clock and power as numbers, the CPU clock not readable (None: an empty cell), read back so."""
    rec = RecordingWriter(tmp_path / "p.csv")
    rec.add_row({"frame_id": 1, "gpu_sm_clock_mhz": 1980.0, "gpu_power_w": 135.25, "cpu_mhz": None})
    assert rec.stop().rows == 1
    (back,) = read_recording(tmp_path / "p.csv").rows
    assert (back["gpu_sm_clock_mhz"], back["gpu_power_w"], back["cpu_mhz"]) == ("1980", "135.25", "")


@pytest.mark.slow
def test_bench_csv_and_json_of_the_same_name_both_written(tmp_path):
    """`bench --csv run.csv --json run.json` was refused: the recording's sidecar was run.json. The
    sidecar is now run.csv.meta.json; report reads it (and a recording's old NAME.json sidecar)."""
    import json

    from tests.helpers.cli import run_cli

    csv_path, json_path = tmp_path / "run.csv", tmp_path / "run.json"
    run = run_cli("bench", "--source", "demo", "--frames", "8", "--warmup", "2", "--csv", csv_path, "--json", json_path)
    assert run.returncode == 0, run.stderr
    from app.recording.writer import sidecar_path

    assert sidecar_path(csv_path) == tmp_path / "run.csv.meta.json"
    summary = json.loads(json_path.read_text())
    assert "inference_fps" in json.dumps(summary) and summary.get("format") != "delegate-scope-session"
    meta = read_recording(csv_path).metadata
    assert meta["format"] == "delegate-scope-session" and meta["csv"] == "run.csv" and meta["complete"] is True
    report = tmp_path / "r.html"
    assert run_cli("report", csv_path, "--out", report).returncode == 0
    assert "XNNPACK" in report.read_text(encoding="utf-8")  # the delegate facts came from the new sidecar
    # A recording made before the rename: its sidecar is NAME.json, still read.
    old = tmp_path / "old.csv"
    old.write_bytes(csv_path.read_bytes())
    old.with_suffix(".json").write_text(json.dumps({**meta, "csv": "old.csv"}))
    assert read_recording(old).metadata["csv"] == "old.csv"
    # ... but a NAME.json that is not a session sidecar (bench's summary) is never taken for one.
    sidecar_path(csv_path).unlink()
    assert read_recording(csv_path).metadata == {}


@pytest.mark.slow
def test_kill_9_mid_bench_keeps_the_delegation_facts_for_the_report(tmp_path: Path):
    """The sidecar is written when a session opens, not only at the end: a report of a recording whose
    process was killed still says what ran where (it said "not recorded (no sidecar facts)")."""
    path = tmp_path / "killed.csv"
    proc = subprocess.Popen([sys.executable, "-m", "app", "bench", "--source", "synthetic", "--seconds", "120",
                             "--threads", "1", "--csv", str(path)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert wait_until(lambda: path.exists() and path.stat().st_size > 20_000, timeout=60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    html = tmp_path / "killed.html"
    run = run_cli("report", path, "--out", html)
    assert run.returncode == 0, run.stderr
    page = html.read_text(encoding="utf-8")
    assert "no sidecar facts" not in page
    assert "nodes delegated" in page and "XNNPACK (CPU, 1 thread)" in page
