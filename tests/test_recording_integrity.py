"""A recording read back says what it could not read and whether it stopped cleanly (app/recording/integrity.py),
on `report`'s stderr and page; its plots say "not recorded" where a column is empty; an A/B pair's
agreement is the count bench made (app/recording/ab.py). `report` runs in processes forked from one that
imported the app (tests/helpers/forked_cli.py), bench in a fresh interpreter."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from app.pipeline.compare import FrameComparison
from app.recording.ab import comparison_between, measured_comparisons, read_compared
from app.recording.integrity import stop_problem, unreadable_text
from app.recording.writer import RecordingWriter, read_recording, sidecar_path
from app.report.build import build_report
from app.report.data import load_session
from tests.helpers.cli import run_cli
from tests.helpers.forked_cli import ForkedCli


@pytest.fixture(scope="module")
def bench_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rec") / "r1.csv"
    run = run_cli("bench", "--source", "demo", "--frames", "20", "--warmup", "3", "--csv", path)
    assert run.returncode == 0, run.stderr
    return path


def _copy(src: Path, dst: Path, sidecar: bool = True) -> Path:
    shutil.copyfile(src, dst)
    if sidecar:
        shutil.copyfile(sidecar_path(src), sidecar_path(dst))
    return dst


@pytest.mark.slow
def test_lines_that_could_not_be_read_are_counted_on_stderr_and_on_the_page(
    bench_recording: Path, tmp_path: Path, forked_cli: ForkedCli
):
    path = _copy(bench_recording, tmp_path / "g.csv", sidecar=False)
    good_lines = len(path.read_text(encoding="utf-8").splitlines())
    with path.open("a", encoding="utf-8") as f:
        f.writelines(f"garbage line {i},xx\n" for i in range(7))
    out = tmp_path / "g.html"
    run = forked_cli.run("report", path, "--out", out)
    assert run.returncode == 0, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    said = f"g.csv: 7 lines could not be read (first at line {good_lines + 1}: 2 cells where the header has"
    assert said in lines[0], lines[0]
    page = out.read_text(encoding="utf-8")
    assert said in page  # the note above the summary
    assert f"7 lines (first at line {good_lines + 1}: 2 cells" in page  # the table's row
    assert "? / 7" not in page and "?" not in re.sub(r"<[^>]*>", "", page.split("<h2>Summary</h2>")[1])[:4000]
    assert "not recorded (no sidecar)" in page  # rows lost: the sidecar counts them, and there is none


def test_a_clean_recording_warns_of_nothing(bench_recording: Path, tmp_path: Path, forked_cli: ForkedCli):
    out = tmp_path / "r.html"
    run = forked_cli.run("report", bench_recording, "--out", out)
    assert run.returncode == 0 and not run.stderr.strip(), run.stderr
    page = out.read_text(encoding="utf-8")
    assert "lines could not be read" not in page and "not stopped cleanly" not in page
    assert re.search(r"<th>stopped cleanly</th><td[^>]*>yes</td>", page)
    assert re.search(r"<th>lines that could not be read</th><td[^>]*>0</td>", page)


@pytest.mark.slow
def test_a_recording_that_did_not_stop_cleanly_says_so(bench_recording: Path, tmp_path: Path, forked_cli: ForkedCli):
    lines = bench_recording.read_text(encoding="utf-8").splitlines(keepends=True)
    # Killed mid-row: no stop event, half a line, and the sidecar the recorder wrote before its stop.
    cut = tmp_path / "cut.csv"
    cut.write_text("".join(lines[:12]) + lines[12][:30], encoding="utf-8")
    meta = json.loads(sidecar_path(bench_recording).read_text(encoding="utf-8"))
    sidecar_path(cut).write_text(json.dumps({**meta, "complete": False}), encoding="utf-8")
    recording = read_recording(cut)
    assert (
        recording.torn
        and recording.skipped_lines == 1
        and recording.first_skipped == (13, "cut off mid-line, no line end")
    )
    assert stop_problem(recording) == (
        "not stopped cleanly: its recorder never finished (the process was killed or crashed, or it is still recording)"
    )
    # No sidecar: the rows alone say it (a clean stop writes a `stop` event).
    bare = tmp_path / "bare.csv"
    bare.write_text("".join(lines[:12]), encoding="utf-8")
    assert stop_problem(read_recording(bare)) == (
        "not stopped cleanly: no stop event (the process was killed or crashed, or it is still recording)"
    )
    assert stop_problem(read_recording(bench_recording)) is None
    out = tmp_path / "cut.html"
    run = forked_cli.run("report", cut, bare, "--out", out)
    assert run.returncode == 0, run.stderr
    page = out.read_text(encoding="utf-8")
    assert "cut.csv: not stopped cleanly: its recorder never finished" in page
    assert "bare.csv: not stopped cleanly: no stop event" in page
    assert "cut.csv: 1 line could not be read (line 13: cut off mid-line, no line end)" in run.stderr
    png = tmp_path / "cut.png"
    assert forked_cli.run("report", cut, "--out", png).returncode == 0  # the header box says it (drawn, not read here)


def test_unreadable_text_names_the_first_line_and_why(tmp_path: Path):
    path = tmp_path / "x.csv"
    recorder = RecordingWriter(path)
    recorder.add_row({"frame_id": 1, "inference_ms": 3})
    recorder.stop()
    with path.open("a", encoding="utf-8") as f:
        f.write("2026-01-01,not-a-time" + "," * (len(recorder.columns) - 2) + "\n")  # right cells, no time
        f.write('"an unclosed quote\n')  # swallows the rest of the file as one cell
    recording = read_recording(path)
    assert len(recording.rows) == 1 and recording.skipped_lines == 2
    assert unreadable_text("x.csv", recording) == (
        "x.csv: 2 lines could not be read (first at line 3: no time in its t_s cell ('not-a-time'))"
    )


def _empty_session(tmp_path: Path) -> Path:
    """A recording whose rows have their time and frame, and nothing measured: every figure column empty."""
    path = tmp_path / "empty_cols.csv"
    recorder = RecordingWriter(path)
    for i in range(20):
        recorder.add_row({"frame_id": i, "source": "demo", "model": "m"}, monotonic=recorder._t0 + 0.05 * i)
    recorder.stop()
    return path


@pytest.mark.parametrize("plot", ["latency_over_time", "latency_histogram", "cpu_over_time", "fps_over_time",
                                  "label_distribution"])  # fmt: skip
def test_a_plot_of_a_column_never_recorded_says_not_recorded(tmp_path: Path, plot: str):
    from app.report import plots

    session = load_session(_empty_session(tmp_path), 0)
    ax = Figure().subplots()
    draw = getattr(plots, plot)
    if plot in ("latency_over_time", "latency_histogram"):
        draw(ax, [session], log=False)
    else:
        draw(ax, [session])
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "not recorded" in texts, (plot, texts)


def test_the_cpu_plot_names_the_session_that_did_not_record_it(bench_recording: Path, tmp_path: Path):
    from app.report import plots

    with_cpu = load_session(bench_recording, 0)
    without = load_session(_empty_session(tmp_path), 1)
    ax = Figure().subplots()
    plots.cpu_over_time(ax, [with_cpu, without])
    assert any(t.get_text() == "#2: CPU % not recorded" for t in ax.texts)
    ax = Figure().subplots()
    plots.cpu_over_time(ax, [with_cpu])
    assert not any("not recorded" in t.get_text() for t in ax.texts)


def _comparison(frame: int, at: float, agree: bool = True) -> FrameComparison:
    return FrameComparison(frame, at, "a", "a" if agree else "b", agree, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0)


def test_measured_comparisons_are_those_made_in_the_measured_span():
    rows = [_comparison(i, 10.0 + i) for i in range(10)]
    assert [c.frame_index for c in measured_comparisons(rows, 12.0, 15.0)] == [2, 3, 4, 5]


@pytest.fixture(scope="module")
def ab_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("ab")
    run = run_cli("bench", "--compare-with", "cpu", "--compare-model", "efficientnet_lite0_int8", "--frames", "40",
                  "--warmup", "5", "--compare-alone-seconds", "0", "--csv", folder / "ab.csv",
                  "--json", folder / "ab.json", timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return folder / "ab.csv", json.loads((folder / "ab.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_an_ab_pair_agrees_on_the_count_bench_made(ab_run: tuple[Path, dict], tmp_path: Path):
    csv_path, summary = ab_run
    a, b = csv_path.with_name("ab-a.csv"), csv_path.with_name("ab-b.csv")
    assert comparison_between(a, b) == csv_path and comparison_between(b, a) == csv_path
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    compared = read_compared(csv_path)
    assert compared is not None and compared.frames == len(rows)
    assert compared.agree == sum(r["top1_agree"] == "1" for r in rows)
    agreement = summary["agreement"]
    assert agreement["frames"] == compared.frames  # bench's figure and its CSV: the same frames
    out = tmp_path / "ab.html"
    build_report([a, b], out)
    page = out.read_text(encoding="utf-8")
    share = agreement["top1_agreement"]
    assert f"{share:.1%} of {agreement['frames']} common frames (compared by the A/B run: ab.csv)" in page
    # Each side recorded its warm-up and the rows up to its stop too: more frames in common than bench compared.
    ids = [{r.get("frame_id") for r in read_recording(p).rows if not r["event"]} for p in (a, b)]
    assert len(ids[0] & ids[1]) > agreement["frames"]


def _side(path: Path, frames: range, measure: tuple[float, float], agree_until: int = 10**9) -> Path:
    recorder = RecordingWriter(path)
    t0 = recorder._t0
    for i in frames:
        label = "x" if i < agree_until else "y"
        recorder.add_row({"frame_id": i, "source": "video:clip.mp4", "model": "m", "backend_requested": "cpu",
                          "backend_used": "cpu", "inference_ms": 5, "top1_index": 1 if label == "x" else 2,
                          "top1_label": label}, monotonic=t0 + 0.1 * i)  # fmt: skip
    recorder.add_row({"event": "measure"}, monotonic=t0 + measure[0])
    recorder.add_row({"event": "measure_end"}, monotonic=t0 + measure[1])
    recorder.add_row({"event": "stop"}, monotonic=t0 + 0.1 * frames.stop)
    recorder.stop()
    return path


def test_without_its_comparison_file_a_pair_is_compared_over_both_measured_spans(tmp_path: Path):
    # Frames 0-29 on both sides; both measured spans hold frames 10-19 (t 1.0-1.9 s); B disagrees from frame 15.
    a = _side(tmp_path / "p-a.csv", range(30), (0.95, 1.95))
    b = _side(tmp_path / "p-b.csv", range(30), (0.95, 1.95), agree_until=15)
    assert comparison_between(a, b) is None
    out = tmp_path / "p.html"
    build_report([a, b], out)
    assert "50.0% of 10 common frames" in out.read_text(encoding="utf-8")
