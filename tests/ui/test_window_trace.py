"""The window's trace (`gui --trace`, Record → Trace…): the pipeline's threads and the GUI thread's paints on one
timeline, valid as Perfetto reads it, each paint naming the frame it showed; written when it stops and at
exit, across the pipelines a window runs one after another."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from app.live.paint import DEFER_MAX_S
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.trace import improperly_nested, thread_names


def check_window_trace(path: Path, paints_at_least: int) -> list[dict]:
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = thread_names(events)
    assert {"capture", "gui"} <= set(names.values()), names
    assert {"inference", "results"} <= set(names.values()) or {"inference A", "results B"} <= set(names.values())
    assert improperly_nested(events) == []
    assert all((e["pid"], e["tid"]) in names for e in events if e["ph"] == "X")  # every slice on a named track
    paints = [e for e in events if e["ph"] == "X" and e["name"] == "paint"]
    assert len(paints) >= paints_at_least
    assert {names[(e["pid"], e["tid"])] for e in paints} == {"gui"}

    def frame(e: dict) -> tuple[object, object]:
        return e["args"].get("pipeline"), e["args"]["frame"]

    # A painted frame is one the pipeline inferred (the paint waits for the frame's inference to end), but
    # where the trace says why not: the paint waited the window's whole deferral (a model slower than it, as
    # a loaded machine makes one), the frame was overwritten before inference took it (a `dropped` instant),
    # or its pipeline was not inferring yet (a session opening) or any more (the trace's end).
    inferences = [e for e in events if e["ph"] == "X" and e["name"] == "inference"]
    inferred = {frame(e) for e in inferences}
    dropped = {frame(e) for e in events if e["ph"] == "i" and e["name"] == "dropped"}
    span: dict[object, tuple[float, float]] = {}
    for e in inferences:
        first, last = span.get(e["args"].get("pipeline"), (e["ts"] + e["dur"], e["ts"]))
        span[e["args"].get("pipeline")] = (min(first, e["ts"] + e["dur"]), max(last, e["ts"]))
    unexplained = [
        p for p in paints
        if frame(p) not in inferred | dropped and p["args"]["held_back_ms"] < DEFER_MAX_S * 1e3
        and span.get(p["args"].get("pipeline"), (float("inf"), 0.0))[0] <= p["ts"] <= span[p["args"]["pipeline"]][1]
    ]  # fmt: skip
    assert unexplained == [], unexplained[:5]
    shared = [p for p in paints if frame(p) in inferred]
    # Each frame is painted after it was read: its read slice starts before its paint.
    reads = {(e["args"]["pipeline"], e["args"]["frame"]): e["ts"] for e in events if e["name"] == "read"}
    assert all(reads[(p["args"]["pipeline"], p["args"]["frame"])] < p["ts"] for p in shared
               if (p["args"]["pipeline"], p["args"]["frame"]) in reads)  # fmt: skip
    return events


@pytest.mark.slow
def test_gui_trace_writes_the_paints_beside_the_pipeline_at_exit(tmp_path):
    path = tmp_path / "window.json"
    run = run_cli(
        "gui", "--source", "demo", "--threads", "1", "--settings", tmp_path / "s.ini",
        "--exit-after", "6", "--trace", path, env={"QT_QPA_PLATFORM": "offscreen"}, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    events = check_window_trace(path, paints_at_least=20)
    assert json.loads(path.read_text())["otherData"]["pipelines"] == 1
    assert any(e["ph"] == "i" and e["name"] == "open" for e in events)
    assert any(e["ph"] == "C" and e["name"] == "process memory" for e in events)


def test_gui_trace_into_a_missing_folder_is_refused_before_the_window_opens(tmp_path, forked_cli: ForkedCli):
    run = forked_cli.run("gui", "--exit-after", "1", "--trace", tmp_path / "missing" / "t.json",
                         env={"QT_QPA_PLATFORM": "offscreen"})  # fmt: skip
    assert_one_line_error(run, 2, "--trace")
    run = forked_cli.run("gui", "--exit-after", "1", "--trace-seconds", "0", env={"QT_QPA_PLATFORM": "offscreen"})
    assert run.returncode == 2 and "--trace-seconds: must be more than 0" in run.stderr


@pytest.mark.slow
def test_record_trace_starts_and_stops_and_spans_the_pipelines_it_ran(qtbot, make_window, tmp_path):
    window = make_window()
    window.saved.recordings_dir = str(tmp_path)  # where the menu's trace goes (no dialog: dialogs=False)
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    assert window.live.trace is None and window.live._running().trace is None  # off: the pipeline has no log
    action = window.recording_actions.trace
    action.trigger()  # Record → Trace…: start
    assert action.isChecked() and window.live.trace is not None
    assert window.live._running().trace is not None  # the pipeline restarted with a log
    shown = window.probes.frames_displayed
    qtbot.waitUntil(lambda: window.probes.frames_displayed >= shown + 10, timeout=30_000)
    window.set_compare(("efficientnet_lite0_int8", "cpu"))  # a new pipeline: both in the trace
    qtbot.waitUntil(lambda: window.live.snapshot("b").inferences_total >= 5, timeout=60_000)
    qtbot.wait(1000)
    action.trigger()  # stop: written, and the pipeline runs on without a log
    assert not action.isChecked() and window.live.trace is None
    assert window.live._running().trace is None
    written = window.trace_control.last
    assert written is not None and written.path.parent == tmp_path and written.path.exists()
    events = check_window_trace(written.path, paints_at_least=5)
    assert json.loads(written.path.read_text())["otherData"]["pipelines"] == 2
    names = set(thread_names(events).values())
    assert {"inference A", "inference B", "results A", "results B"} <= names, names
    by_pipeline = Counter(e["args"]["pipeline"] for e in events if e["ph"] == "X" and e["name"] == "inference")
    assert len(by_pipeline) == 2, by_pipeline
    # Started again and left running, it is written when the window closes.
    last = tmp_path / "at-close.json"
    assert window.trace_control.start(last)
    shown = window.probes.frames_displayed
    qtbot.waitUntil(lambda: window.probes.frames_displayed >= shown + 5, timeout=30_000)
    window.close()
    check_window_trace(last, paints_at_least=1)


@pytest.mark.slow
def test_with_the_ops_view_on_the_profilers_runs_are_a_track_with_each_op_nested(qtbot, make_window, tmp_path):
    path = tmp_path / "ops.json"
    # The live inference held to one start per 200 ms: the profiler's thread runs at nice +10 and, on a busy
    # machine, waited on the live inferences, which ran all the while.
    window = make_window(trace=path, throttle_ms=200.0)
    view = window.ops_view
    view.set_profiling(True)
    qtbot.waitUntil(lambda: "a" in view.latest and view.latest["a"].profile is not None, timeout=60_000)
    qtbot.wait(1500)  # the trace takes the Ops view's newest profile once a second
    profile = view.latest["a"].profile
    window.trace_control.stop()
    events = json.loads(path.read_text())["traceEvents"]
    assert improperly_nested(events) == []
    names = thread_names(events)
    track = [key for key, name in names.items() if name == "ops profiler"]
    assert len(track) == 1
    on_track = [e for e in events if e["ph"] == "X" and (e["pid"], e["tid"]) == track[0]]
    runs = [e for e in on_track if e["name"] == "profiled run"]
    ops = [e for e in on_track if e["cat"] == "op"]
    assert runs and len(ops) >= len(runs) * len(profile.ops) // 2
    # Every op lies inside one of the profiler's runs: the Ops table in time.
    assert all(any(r["ts"] <= o["ts"] and o["ts"] + o["dur"] <= r["ts"] + r["dur"] for r in runs) for o in ops)
    assert {o["args"]["placement"] for o in ops} == {str(op.placement) for op in profile.ops}
