"""The window's trace (app/live/trace.py, app/recording/window_trace.py) and a sweep's (join_runs): the logic on
recorded records and readings; the window itself in tests/ui/test_window_trace.py."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from app.live.trace import LiveTrace
from app.metrics.trace import CAPTURED, PUBLISHED, TraceLog
from app.pipeline import Event, EventKind
from app.recording.trace import TraceThreads, build_trace, join_runs
from app.recording.window_trace import Paint, PipelinePart, window_trace
from tests.helpers.cli import run_cli
from tests.helpers.trace import improperly_nested, thread_names

THREADS = TraceThreads(capture=10, preprocess=None, inference={"a": 11}, results={"a": 12})


def frames(log: TraceLog, first: int, count: int, at: float) -> None:
    """`count` frames from `first`, one every 0.1 s from monotonic `at`: read, inferred, published."""
    for k in range(count):
        t = at + k * 0.1
        log.append((CAPTURED, first + k, t, 5.0, 0.0, log.perf_of_mono(t), 1.0, False))
        log.append((PUBLISHED, "a", first + k, t + 0.01, log.perf_of_mono(t + 0.02), 10.0, 1.0, True, False,
                    log.perf_of_mono(t + 0.03), log.perf_of_mono(t + 0.04), t + 0.035, 0.5, "cpu"))  # fmt: skip


def test_a_log_drops_its_records_older_than_a_moment_and_knows_when_each_was_taken():
    log = TraceLog()
    at = time.monotonic() - 10
    frames(log, 0, 30, at)
    assert log.taken_at(log.records[0]) == pytest.approx(log.perf_of_mono(at), abs=1e-9)
    # a publish: when its output was taken
    assert log.taken_at(log.records[1]) == pytest.approx(log.perf_of_mono(at + 0.03), abs=1e-9)
    assert log.drop_before(log.perf_of_mono(at + 1.0)) == 20  # frames 0-9: a read and a publish each
    assert log.records[0][1] == 10 and len(log.records) == 40
    assert log.drop_before(log.perf_of_mono(at)) == 0


def test_two_pipelines_and_the_paints_make_one_valid_trace():
    origin = time.perf_counter()
    first, second = TraceLog(origin=origin), TraceLog(origin=origin)
    assert second.origin == first.origin  # one clock for the window's pipelines
    now = time.monotonic()
    frames(first, 0, 10, now)
    frames(second, 0, 10, now + 2)  # the second pipeline numbers its frames from 0 again
    open_event = Event(EventKind.OPEN, now + 2, time.time(), "opened")
    parts = [PipelinePart(1, first, THREADS, ()),
             PipelinePart(2, second, TraceThreads(20, None, {"a": 21}, {"a": 22}), (("a", open_event),))]  # fmt: skip
    # Each frame of the second pipeline painted once its result was published.
    paints = [Paint(second.perf_of_mono(now + 2 + k * 0.1 + 0.05), second.perf_of_mono(now + 2 + k * 0.1 + 0.06), k, 2,
                    (k, None), 1.0) for k in range(10)]  # fmt: skip
    trace = window_trace(parts, paints, gui_tid=99)
    events = trace["traceEvents"]
    assert improperly_nested(events) == []
    names = thread_names(events)
    assert Counter(names.values()) == {"capture": 2, "inference": 2, "results": 2, "gui": 1}
    assert all((e["pid"], e["tid"]) in names for e in events if e["ph"] == "X")
    sort = {e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"}
    assert sort[10] == sort[20] < sort[11] == sort[21] < sort[12] < sort[99]  # the frame's way, then the paints
    inferred = {(e["args"]["pipeline"], e["args"]["frame"]) for e in events if e["name"] == "inference"}
    assert inferred == {(p, f) for p in (1, 2) for f in range(10)}
    painted = [e for e in events if e["name"] == "paint"]
    assert [(e["args"]["pipeline"], e["args"]["frame"], e["tid"]) for e in painted] == [(2, k, 99) for k in range(10)]
    assert all(e["dur"] == 10_000 for e in painted)
    # Flows stay one per frame and side: the second pipeline's ids follow the first's.
    flows = defaultdict(list)
    for e in events:
        if e["ph"] in "stf":
            flows[e["id"]].append(e["ph"])
    assert len(flows) == 20 and all(p.count("s") == 1 and p.count("f") == 1 for p in flows.values())
    opened = [e for e in events if e["ph"] == "i" and e["name"] == "open"]
    assert len(opened) == 1 and opened[0]["args"]["pipeline"] == 2 and opened[0]["tid"] == 21
    assert trace["otherData"]["pipelines"] == 2
    # A horizon (the ring's last seconds) leaves out what came before it: the first pipeline, the event too.
    horizon = second.perf_of_mono(now + 2.5)
    for part in parts:  # the ring's records were pruned (LiveTrace.prune): the rest is left out here
        part.log.drop_before(horizon)
    late = window_trace([p for p in parts if p.log.records], paints, 99, horizon=horizon)
    kept = {(e["args"]["pipeline"], e["args"]["frame"]) for e in late["traceEvents"] if e["name"] == "inference"}
    assert kept == {(2, f) for f in range(5, 10)} or kept == {(2, f) for f in range(4, 10)}
    assert not any(e["name"] == "open" for e in late["traceEvents"])
    assert min(e["args"]["frame"] for e in late["traceEvents"] if e["name"] == "paint") == 5


def test_the_ring_keeps_the_last_seconds_of_records_paints_and_pipelines(tmp_path: Path):
    trace = LiveTrace(tmp_path / "t.json", seconds=5.0)
    old = trace.log_for(1)
    now = time.monotonic()
    frames(old, 0, 10, now - 20)  # a pipeline that ran 20 s ago

    trace._current = None  # kept as a pipeline that ended (pipeline_ended reads a stopped Feed's threads)
    trace._parts.append(PipelinePart(1, old, THREADS, ()))
    new = trace.log_for(2)
    frames(new, 0, 80, now - 7.95)  # frames 0-79 over the last 8 s
    perf = time.perf_counter()
    trace.painted(1, 2, perf - 30, (1, None), 0.0)  # 30 s ago
    trace.painted(70, 2, perf - 0.1, (70, None), 0.0)
    trace.prune()
    assert trace._parts == []  # nothing of the old pipeline is in the last 5 s
    kept = {r[1] for r in new.records if r[0] == CAPTURED}
    assert min(kept) in (30, 31) and max(kept) == 79
    assert [p.frame for p in trace._paints] == [70]
    assert trace.gui_tid is not None


def test_join_runs_puts_each_run_in_a_named_process_of_its_own_on_one_clock():
    runs = []
    for k in range(2):
        log = TraceLog()
        frames(log, 0, 5, time.monotonic())
        runs.append((f"config {k}", build_trace(log, THREADS, [], (), "delegate-scope bench")))
        time.sleep(0.01)
    joined = join_runs(runs, "delegate-scope sweep")
    events = joined["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {100: "1. config 0", 200: "2. config 1"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events if e["name"] == "process_sort_index"}
    assert order == {100: 0, 200: 1}
    assert {e["pid"] for e in events} == {100, 200}
    assert improperly_nested(events) == []
    # On one clock: the second run's first slice starts after its own origin, later than the first run's.
    first = {pid: min(e["ts"] for e in events if e["ph"] == "X" and e["pid"] == pid) for pid in (100, 200)}
    shift = round((runs[1][1]["otherData"]["perf_origin_s"] - runs[0][1]["otherData"]["perf_origin_s"]) * 1e6)
    assert shift >= 10_000 and first[200] - first[100] == pytest.approx(shift, abs=50_000)
    flows = defaultdict(set)
    for e in events:
        if e["ph"] in "stf":
            flows[e["id"]].add(e["pid"])
    assert len(flows) == 10 and all(len(pids) == 1 for pids in flows.values())  # no id shared by two runs
    assert join_runs([], "delegate-scope sweep")["traceEvents"] == []


@pytest.mark.slow
def test_sweep_trace_has_a_named_track_group_per_configuration(tmp_path: Path):
    path = tmp_path / "sweep.json"
    run = run_cli("sweep", "--model", "efficientnet_lite0_int8", "--frames", "12", "--warmup", "2", "--trace", path,
                  timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "trace     " in run.stdout and "configurations, each a track group" in run.stdout
    events = json.loads(path.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert len(processes) >= 2 and all("EfficientNet-Lite0 (int8) · CPU" in n for n in processes.values())
    assert improperly_nested(events) == []
    for pid in processes:
        names = {n for (p, _), n in thread_names(events).items() if p == pid}
        assert {"capture", "inference", "results"} <= names
        assert sum(1 for e in events if e["pid"] == pid and e["name"] == "inference") >= 12


def test_sweep_trace_into_a_missing_folder_is_refused_before_the_run(tmp_path: Path):
    from tests.helpers.cli import assert_one_line_error

    run = run_cli("sweep", "--model", "efficientnet_lite0_int8", "--trace", tmp_path / "no" / "t.json")
    assert_one_line_error(run, 2, "--trace")
