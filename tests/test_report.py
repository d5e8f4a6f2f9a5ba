"""`delegate-scope report`: real sessions recorded by the real `bench`, rendered to HTML and PNG;
figures checked against medians computed here independently from the CSV. The HTML of one session is
rendered by `report` in a fresh interpreter, the other reports in processes forked from one that imported
the app (tests/helpers/forked_cli.py) or by build_report itself."""

from __future__ import annotations

import csv
import io
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

from app.errors import UsageError
from app.recording.writer import RecordingWriter
from app.report.build import build_report
from app.report.data import dropped_frames
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import ROOT

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="session")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three real recordings: fp32 on CPU, int8 on CPU, Core ML requested (falls back off macOS). Recorded
    side by side: each bench waits on the paced clip most of its time."""
    folder = tmp_path_factory.mktemp("sessions")
    made = {name: folder / f"{name}.csv" for name in ("fp32", "int8", "coreml")}
    extra = {"fp32": [], "int8": ["--model", "efficientnet_lite0_int8"], "coreml": ["--delegate", "coreml"]}
    with ThreadPoolExecutor(len(made)) as pool:
        runs = pool.map(lambda name: run_cli("bench", "--source", "demo", "--frames", "40", "--warmup", "5",
                                             "--csv", made[name], *extra[name]), made)  # fmt: skip
        for run in runs:
            assert run.returncode == 0, run.stderr
    return made


def measured_rows(path: Path) -> list[dict]:
    """Inference rows after bench's `measure` event, read with nothing but the csv module."""
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    start = max((i for i, r in enumerate(rows) if r["event"] == "measure"), default=-1)
    return [r for r in rows[start + 1 :] if not r["event"]]


def median_of(path: Path, column: str) -> float:
    return statistics.median(float(r[column]) for r in measured_rows(path) if r[column])


def p95_of(path: Path, column: str) -> float:
    values = [float(r[column]) for r in measured_rows(path) if r[column]]
    return statistics.quantiles(values, n=100, method="inclusive")[94]


@pytest.mark.slow
def test_html_for_one_session_holds_the_figures_from_the_csv(sessions, tmp_path):
    out = tmp_path / "one.html"
    run = run_cli("report", sessions["fp32"], "--out", out)
    assert run.returncode == 0, run.stderr
    assert "report" in run.stdout and run.stderr == ""
    page = out.read_text(encoding="utf-8")
    for stage in ("queue", "preprocess", "inference", "postprocess", "end_to_end"):
        median, p95 = median_of(sessions["fp32"], f"{stage}_ms"), p95_of(sessions["fp32"], f"{stage}_ms")
        assert f"{median:.2f} / {p95:.2f}" in page, stage
    assert f'<td class="num">{median_of(sessions["fp32"], "inference_cpu_ms"):.2f}</td>' in page
    ratio = median_of(sessions["fp32"], "inference_cpu_ms") / median_of(sessions["fp32"], "inference_ms")
    assert f">{ratio:.2f}<" in page
    rows = measured_rows(sessions["fp32"])
    span = float(rows[-1]["t_s"]) - float(rows[0]["t_s"])
    assert f">{(len(rows) - 1) / span:.1f}<" in page  # inference fps
    assert f">{len(rows)} (+" in page  # measured inferences, warm-up counted apart
    # Self-contained: the plots are data URIs, nothing is fetched, no script runs.
    assert page.count("src='data:image/png;base64,") == 5  # latency, distribution, throughput and CPU, memory, labels
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert "Latency over time" in page and "Throughput and CPU" in page
    assert "machine" in page and "XNNPACK" in page  # sidecar facts
    # The coverage's summary, and TFLite's line for XNNPACK beside it (computed: this build does not print it).
    assert (
        "61 of 61 nodes delegated in 1 partition. Log line (computed): Replacing 61 out of 61 node(s) with delegate "
        "(TfLiteXNNPackDelegate) node, yielding 1 partitions for subgraph 0 (main)."
    ) in page


@pytest.mark.slow
def test_png_for_several_sessions_is_a_real_picture(sessions, tmp_path, forked_cli: ForkedCli):
    out = tmp_path / "three.png"
    run = forked_cli.run("report", sessions["fp32"], sessions["int8"], sessions["coreml"], "--out", out)
    assert run.returncode == 0, run.stderr
    image = Image.open(out).convert("RGB")
    assert image.width >= 1200 and image.height >= 1500
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 500  # plots, text and table, not a blank canvas
    white = max(colours)[1]
    assert white == (255, 255, 255) and max(colours)[0] < 0.9 * image.width * image.height
    present = {rgb for _, rgb in colours}
    for hex_colour in ("#1f77b4", "#ff7f0e", "#2ca02c"):  # one colour per session, drawn solid somewhere
        rgb = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        assert rgb in present, hex_colour


@pytest.mark.slow
def test_comparison_ratios_match_the_medians(sessions, tmp_path):
    out = tmp_path / "cmp.html"
    written = build_report([sessions["fp32"], sessions["int8"], sessions["coreml"]], out)
    assert written.sessions == 3
    page = out.read_text(encoding="utf-8")
    base_inf, base_cpu = median_of(sessions["fp32"], "inference_ms"), median_of(sessions["fp32"], "inference_cpu_ms")
    for name in ("int8", "coreml"):
        inf, cpu = median_of(sessions[name], "inference_ms"), median_of(sessions[name], "inference_cpu_ms")
        r = base_inf / inf
        expected = f"{r:.3g}× faster" if r > 1 else f"{1 / r:.3g}× slower"
        if abs(r - 1) < 0.005:  # Core ML falls back to the same CPU model off macOS: medians can tie
            expected = "same"
        assert re.search(f"<td[^>]*>{expected}</td>", page), (name, expected)
        change = (cpu - base_cpu) / base_cpu * 100
        sign = "\u2212" if change < 0 else "+"
        if f"{abs(change):.0f}" != "0":
            assert re.search(f"<td[^>]*>\\{sign}{abs(change):.0f}%</td>", page), name
    assert "efficientnet_lite0_int8 on cpu: inference" in page  # the headline sentence
    # Core ML off macOS: the fallback is flagged with its reason.
    assert "coreml→cpu FALLBACK" in page and "Core ML needs macOS" in page
    # Label agreement on frames both runs inferred in their measured spans (the demo clip: frame id = the
    # same pixels), as the figures count inferences: warm-up left out.
    labels = {name: {r["frame_id"]: r["top1_label"] for r in measured_rows(sessions[name])}
              for name in ("fp32", "int8")}  # fmt: skip
    common = labels["fp32"].keys() & labels["int8"].keys()
    assert common, "two runs of the paced demo clip share frame ids"
    agree = sum(labels["fp32"][k] == labels["int8"][k] for k in common)
    assert f"{agree / len(common):.1%} of {len(common)} common frames" in page


def recording(path: Path, rows: list[dict]) -> Path:
    recorder = RecordingWriter(path, {"machine_note": HOSTILE})
    for row in rows:
        recorder.add_row(row)
    recorder.stop()
    return path


def inference_row(frame: int, label: str, source: str = "video:clip.mp4", ms: float = 10.0) -> dict:
    return {
        "frame_id": frame,
        "source": source,
        "model": "m",
        "backend_requested": "cpu",
        "backend_used": "cpu",
        "queue_ms": 1,
        "preprocess_ms": 1,
        "inference_ms": ms + frame % 3,
        "postprocess_ms": 0.5,
        "end_to_end_ms": ms + 3,
        "inference_cpu_ms": ms,
        "capture_fps": 30,
        "process_cpu_pct": 20,
        "top1_index": 1,
        "top1_label": label,
    }


@pytest.mark.slow
def test_labels_from_user_files_are_escaped_and_never_mathtext(tmp_path):
    hostile = [
        {"event": "open", "model": "<b>m</b>", "backend_used": "cpu", "message": HOSTILE},
        *[inference_row(i, label) for i, label in enumerate([HOSTILE, "$\\frac{1}{0}$ $", "=1+1", "ok & <i>"] * 5)],
        {"event": "error", "message": "<img src=x onerror=alert(2)>"},
    ]
    path = recording(tmp_path / "hostile.csv", hostile)
    other = recording(tmp_path / "other.csv", [inference_row(i, "x", source="synthetic") for i in range(10)])
    page_path = tmp_path / "h.html"
    build_report([path, other], page_path)
    page = page_path.read_text(encoding="utf-8")
    assert HOSTILE not in page and "<img src=x" not in page and "<b>m</b>" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "=1+1" in page  # the recorder's spreadsheet quote is taken off again for display
    # No frame in common (different sources): said, not invented.
    assert "not comparable (no common frames)" in page
    build_report([path, other], tmp_path / "h.png")  # "$...$" labels are text, not TeX: no crash
    assert Image.open(tmp_path / "h.png").size[0] > 1000


def test_dropped_frames_are_frame_id_gaps_within_one_source():
    rows = [{"source": "a", "frame_id": str(i)} for i in (1, 2, 5, 6, 10)]  # 2 + 3 dropped
    rows += [{"source": "b", "frame_id": str(i)} for i in (0, 2)]  # new source: counts afresh, 1 dropped
    rows += [{"source": "b", "frame_id": ""}, {"source": "b", "frame_id": "7"}]  # unknown id: no guess
    assert dropped_frames(rows) == 6


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(sessions, tmp_path):
    good = sessions["fp32"]
    # The CLI contract in a fresh process, as a user runs it (main() reroutes the process's fds,
    # so the other cases call the report directly and check the error the CLI turns into that line).
    assert_one_line_error(run_cli("report", tmp_path / "nope.csv", "--out", tmp_path / "r.html"), 2, "no such file")
    assert_one_line_error(run_cli("report", good, "--out", "/proc/report.html"), 2, "cannot write")

    def fails(*args: Path | str, fragment: str = "") -> None:
        *paths, out = map(Path, args)
        with pytest.raises(UsageError) as caught:
            build_report(paths, out)
        assert caught.value.exit_code == 2 and "\n" not in str(caught.value)
        assert fragment in str(caught.value), (fragment, str(caught.value))

    text = tmp_path / "notes.csv"
    text.write_text("a,b\n1,2\n")
    fails(text, tmp_path / "r.html", fragment="not a Delegate Scope recording")
    binary = tmp_path / "photo.csv"
    binary.write_bytes(bytes(range(256)) * 8)
    fails(binary, tmp_path / "r.html", fragment="not a Delegate Scope recording")
    empty = recording(tmp_path / "empty.csv", [{"event": "open"}, {"event": "stop"}])
    fails(good, empty, tmp_path / "r.html", fragment="empty recording")
    fails(tmp_path, tmp_path / "r.html", fragment="is a folder")
    fails(good, tmp_path / "r.pdf", fragment="use .html or .png")
    fails(good, tmp_path / "no" / "such" / "r.png", fragment="does not exist")
    fails(good, tmp_path)  # a folder, suffix-less
    folder_named_html = tmp_path / "x.html"
    folder_named_html.mkdir()
    fails(good, folder_named_html, fragment="is a folder")
    assert not list(tmp_path.glob("r.*")) and not list(tmp_path.glob(".r.*"))


def test_other_commands_never_import_matplotlib():
    code = "import sys, app.cli.main; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
    assert re.search(r"^\s+report\s", run_cli("--help").stdout, re.MULTILINE)


def test_a_switch_is_labelled_with_what_changed(tmp_path):
    from app.report.data import load_session

    rows = [{"event": "open", "model": "m", "backend_used": "cpu", "message": "m on cpu"}]
    rows += [inference_row(i, "cat") for i in range(3)]
    rows += [{"event": "switch", "model": "m", "backend_used": "cpu", "message": "threads 2→1: m on cpu"}]
    rows += [inference_row(i, "cat") for i in range(3, 6)]
    data = load_session(recording(tmp_path / "r.csv", rows), 0)
    texts = [e.text for e in data.events]
    assert "switch: threads 2→1" in texts and "open: m on cpu" in texts, texts


def parts_by_switch(path: Path) -> list[list[dict]]:
    """Inference rows cut at each `switch` row's time, with nothing but the csv module."""
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    cuts = [float(r["t_s"]) for r in rows if r["event"] == "switch"]
    parts: list[list[dict]] = [[] for _ in range(len(cuts) + 1)]
    for r in rows:
        if not r["event"]:
            parts[sum(float(r["t_s"]) >= c for c in cuts)].append(r)
    return parts


@pytest.mark.slow
def test_a_recording_across_switches_is_one_column_per_segment(across_switches, tmp_path, forked_cli: ForkedCli):
    """A real window-style recording (threads 2→1, then the int8 model): one column per segment, labelled
    with what changed, figures of that segment alone, each compared with the one before; the delegation
    facts head each column, before the plots."""
    out = tmp_path / "segments.html"
    run = forked_cli.run("report", across_switches, "--out", out)
    assert run.returncode == 0, run.stderr
    page = out.read_text(encoding="utf-8")
    parts = parts_by_switch(across_switches)
    assert len(parts) == 3 and all(len(p) > 30 for p in parts)
    heads = re.findall(r"<thead><tr><th></th>(.*?)</tr></thead>", page)[0]
    assert "#1 efficientnet_lite0 on cpu" in heads and "#2 threads 2→1" in heads
    assert "#3 model efficientnet_lite0→efficientnet_lite0_int8" in heads
    medians = []
    for part in parts:
        values = [float(r["inference_ms"]) for r in part]
        median, p95 = statistics.median(values), statistics.quantiles(values, n=100, method="inclusive")[94]
        assert f"{median:.2f} / {p95:.2f}" in page
        medians.append(median)
    r = medians[1] / medians[2]  # the int8 part against the part before it (1 thread, float32)
    # Worded as a factor above 1 either way ("1.07× slower", not "0.932× slower"); which way depends on
    # the machine (int8 runs no faster than float32 without AVX2), so the test reads the ratio, not a side.
    expected = "same" if abs(r - 1) < 0.005 else f"{r:.3g}× faster" if r > 1 else f"{1 / r:.3g}× slower"
    assert re.search(f"<td[^>]*>{expected}</td>", page), (r, expected)
    assert "#3 model efficientnet_lite0→efficientnet_lite0_int8: inference" in page and "than #2 threads 2→1" in page
    # The delegation facts head the columns (item 9), before the first figure, not in a collapsed block.
    first_figure = page.index("<img")
    for fact in ("threads", "nodes delegated", "ops left on CPU", "runs on"):
        assert page.index(f"<th>{fact}</th>") < first_figure, fact
    assert re.search(r"<th>threads</th><td[^>]*>2</td><td[^>]*>1</td><td[^>]*>1</td>", page)
    assert "XNNPACK (CPU, 2 threads)" in page and "XNNPACK (CPU, 1 thread)" in page
    assert page.index("61 of 61 nodes delegated") < first_figure


@pytest.mark.slow
def test_the_png_of_a_segmented_recording_has_a_header_per_segment(across_switches, tmp_path, forked_cli: ForkedCli):
    out = tmp_path / "segments.png"
    run = forked_cli.run("report", across_switches, "--out", out)
    assert run.returncode == 0, run.stderr
    # At the top of the picture, one header box per segment in its colour ...
    image = Image.open(out).convert("RGB")
    top = image.crop((0, 0, image.width, int(image.height * 0.07)))
    present = {rgb for _, rgb in top.getcolors(maxcolors=1 << 20)}
    for hex_colour in ("#1f77b4", "#ff7f0e", "#2ca02c"):
        assert tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)) in present, hex_colour
    # ... holding what ran and the delegation facts.
    from app.report.data import load_segments
    from app.report.tables import header_lines

    lines = [dict(header_lines(s)) for s in load_segments(across_switches, 0)]
    assert [x["threads"] for x in lines] == ["2", "1", "1"]
    assert all("nodes delegated" in x["nodes delegated"] and "ops left on CPU" in x for x in lines)
    assert lines[2]["model"] == "efficientnet_lite0_int8"


def test_segments_are_labelled_by_the_change_not_by_the_reopen_that_follows(tmp_path):
    from app.recording.segments import split_segments
    from app.recording.writer import read_recording

    rows = [{"event": "start", "message": "recording from the window"}]
    rows += [inference_row(i, "cat") for i in range(3)]
    rows += [{"event": "compare", "message": "A/B comparison with m8 on cpu"}]
    rows += [{"event": "open", "model": "m", "backend_used": "cpu", "message": "m on cpu"}]
    rows += [inference_row(i, "cat") for i in range(3, 6)]
    rows += [{"event": "switch", "model": "m", "backend_used": "cpu", "message": "delegate cpu→gpu: m on cpu"}]
    rows += [{"event": "fallback", "backend_requested": "gpu", "backend_used": "cpu", "message": "no GPU adapter"}]
    rows += [inference_row(i, "cat") for i in range(6, 9)]
    rows += [{"event": "stop"}]
    segments = split_segments(read_recording(recording(tmp_path / "r.csv", rows)).rows)
    assert [g.change for g in segments] == [
        "",
        "A/B comparison with m8 on cpu",
        "delegate cpu→gpu; fell back to cpu: no GPU adapter",
    ]
    assert [len(g.inferences) for g in segments] == [3, 3, 3] and segments[-1].rows[-1]["event"] == "stop"


@pytest.mark.slow
def test_the_power_state_is_in_the_report_or_said_to_be_missing(sessions, tmp_path):
    """A GPU recording with the power columns (values recorded on an H200: SM clock 1980 MHz, 135 W, at
    100 inferences per second) beside one made here (no NVML, no cpufreq in this VM): the figures, or
    "not recorded"."""
    path = tmp_path / "gpu.csv"
    recorder = RecordingWriter(path)
    for i in range(101):  # 100 intervals of 10 ms: 100 inferences per second
        row = {**inference_row(i, "x"), "backend_requested": "gpu", "backend_used": "gpu",
               "gpu_sm_clock_mhz": 1980 if i % 10 else 1965, "gpu_power_w": 135.0, "cpu_mhz": 2400}  # fmt: skip
        recorder.add_row(row, monotonic=recorder._t0 + 1.0 + i * 0.01)
    recorder.stop()
    page_path = tmp_path / "p.html"
    build_report([path, sessions["fp32"]], page_path)
    page = page_path.read_text(encoding="utf-8")
    assert "1980 MHz (median) / 135 W (mean)" in page
    assert "1350.00 mJ (mean recorded power / inference rate, idle included)" in page  # 135 W / 100 per s
    assert "2400 MHz" in page
    here = measured_rows(sessions["fp32"])
    if not any(r["gpu_sm_clock_mhz"] for r in here):
        assert "not recorded (not readable where it ran, or a recording before format 3)" in page
