"""`bench --trace FILE.json`: the live pipeline's timeline in Chrome's trace event format (app/metrics/trace.py
collects, app/recording/trace.py writes), checked as Perfetto reads it: named threads, complete slices per
stage with the frame they belong to, proper nesting on each thread, flows, counters and events."""

from __future__ import annotations

import itertools
import json
import time
from collections import defaultdict
from pathlib import Path

from app.metrics.trace import CAPTURED, PUBLISHED, TraceLog
from app.pipeline import InferenceConfig, Pipeline
from app.recording.trace import TraceThreads, _Tracks, build_trace
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.trace import improperly_nested, thread_names

ORDER = ("read", "preprocess", "inference", "postprocess")  # a frame's stages, in the order they happen


def slices_by_frame(events: list[dict], side: str | None = None) -> dict[int, dict[str, dict]]:
    """frame -> stage -> its slice (the first of that name; preprocessing ahead rather than inline)."""
    frames: dict[int, dict[str, dict]] = defaultdict(dict)
    for e in events:
        if e["ph"] != "X" or "frame" not in e["args"]:
            continue
        if side is not None and e["args"].get("side", side) != side:
            continue
        stages = frames[e["args"]["frame"]]
        if e["name"] not in stages or (e["name"] == "preprocess" and not e["args"].get("inline")):
            stages[e["name"]] = e
    return frames


def check_trace(trace: dict, inferences_at_least: int, sides: tuple[str, ...] = ("a",)) -> list[dict]:
    events = trace["traceEvents"]
    names = thread_names(events)
    expected = {"capture"} | {f"{role} {s.upper()}" if len(sides) > 1 else role for role in ("inference", "results")
                              for s in sides}  # fmt: skip
    assert expected <= set(names.values()), names
    assert improperly_nested(events) == []
    for side in sides:
        inference = [e for e in events if e["ph"] == "X" and e["name"] == "inference" and e["args"]["side"] == side]
        assert len(inference) >= inferences_at_least
        assert len({e["args"]["frame"] for e in inference}) == len(inference)  # one inference slice per inference
        frames = slices_by_frame(events, side)
        inferred = [f for f, stages in frames.items() if "inference" in stages]
        # A frame can be followed from thread to thread: the same args.frame on slices of two threads or more.
        followed = [f for f in inferred if len({(s["pid"], s["tid"]) for s in frames[f].values()}) >= 2]
        assert len(followed) >= 0.9 * len(inferred), (len(followed), len(inferred))
        # Each frame's stages in order, each one's start at or after the one before's end (one clock).
        in_order = 0
        for f in inferred:
            stages = [frames[f][name] for name in ORDER if name in frames[f]]
            assert [s["name"] for s in stages][-2:] == ["inference", "postprocess"], frames[f]
            ok = all(a["ts"] + a["dur"] <= b["ts"] for a, b in itertools.pairwise(stages))
            in_order += ok
            if "read" in frames[f]:
                assert frames[f]["read"]["ts"] <= frames[f]["inference"]["ts"]
        assert in_order >= 0.9 * len(inferred), (in_order, len(inferred))
    # Flows: each one starts once and finishes once, every point on a thread the trace names.
    phases = defaultdict(list)
    for e in events:
        if e["ph"] in "stf":
            phases[e["id"]].append(e["ph"])
            assert (e["pid"], e["tid"]) in names
    assert phases and all(p.count("s") == 1 and p.count("f") == 1 for p in phases.values())
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"process memory"} <= counters, counters
    assert any(e["ph"] == "i" and e["name"] == "open" for e in events)
    return events


def test_bench_trace_on_the_demo_clip(tmp_path: Path):
    trace_path, json_path = tmp_path / "run.json", tmp_path / "summary.json"
    run = run_cli("bench", "--frames", "40", "--warmup", "3", "--threads", "1", "--no-pace", "--trace", trace_path,
                  "--json", json_path, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"trace     {trace_path}: " in run.stdout and "ui.perfetto.dev" in run.stdout
    summary = json.loads(json_path.read_text())
    assert summary["trace"]["path"] == str(trace_path) and summary["plan"]["trace"] == str(trace_path)
    trace = json.loads(trace_path.read_text())
    assert trace["displayTimeUnit"] == "ms"
    events = check_trace(trace, 40 + 3)
    assert summary["trace"]["frames"] == len([e for e in events if e["ph"] == "X" and e["name"] == "inference"])
    # The read and the preprocessing ahead are the capture thread's, the invoke the inference thread's.
    names = thread_names(events)
    for name, thread in (("read", "capture"), ("inference", "inference"), ("publish", "results")):
        assert {names[(e["pid"], e["tid"])] for e in events if e["ph"] == "X" and e["name"] == name} == {thread}


def test_bench_a_b_trace_has_both_sides_and_the_shared_capture(tmp_path: Path):
    trace_path = tmp_path / "ab.json"
    run = run_cli("bench", "--source", "synthetic", "--compare-model", "efficientnet_lite0_int8", "--threads", "1",
                  "--frames", "20", "--warmup", "2", "--no-pace", "--compare-alone-seconds", "0", "--trace",
                  trace_path, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"trace      {trace_path}: " in run.stdout
    events = check_trace(json.loads(trace_path.read_text()), 20, sides=("a", "b"))
    # One capture for both: a frame read once is inferred on both sides.
    frames_a, frames_b = slices_by_frame(events, "a"), slices_by_frame(events, "b")
    both = [f for f in frames_a if "inference" in frames_a[f] and "inference" in frames_b.get(f, {})]
    assert len(both) >= 20
    assert len([e for e in events if e["ph"] == "X" and e["name"] == "read" and e["args"]["frame"] in both]) == len(
        both
    )


def test_no_trace_no_file_and_no_hook(tmp_path: Path):
    """Off, the pipeline's hooks hold None (an `is not None` test per frame, nothing else) and nothing is written."""
    pipeline = Pipeline("synthetic", InferenceConfig())
    assert pipeline.trace is None and pipeline.capture._trace is None
    assert pipeline.worker._results._trace is None
    traced = Pipeline("synthetic", InferenceConfig(), trace=TraceLog())
    assert traced.capture._trace is traced.trace and traced.worker._results._trace is not None
    json_path = tmp_path / "summary.json"
    run = run_cli("bench", "--source", "synthetic", "--frames", "5", "--warmup", "1", "--threads", "1", "--json",
                  json_path, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(json_path.read_text())
    assert "trace" not in summary and "trace" not in summary["plan"] and "trace " not in run.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_trace_into_a_missing_folder_is_refused_before_the_run(tmp_path: Path):
    run = run_cli("bench", "--frames", "5", "--trace", tmp_path / "nope" / "t.json")
    assert_one_line_error(run, 2, f"--trace: cannot write {tmp_path / 'nope' / 't.json'}")


def test_slices_that_overlap_by_a_few_microseconds_are_made_proper():
    """Two stamps of one moment differ by microseconds (a frame's capture time is read just before its read
    is timed): the later slice starts where the earlier one ends; one inside another stays inside."""
    tracks = _Tracks()
    tracks.add(1, 1, "preprocess", 0, 100, "c")
    tracks.add(1, 1, "read", 98, 300, "c")  # starts 2 us before the preprocessing ends
    tracks.add(1, 1, "publish", 400, 500, "r")
    tracks.add(1, 1, "postprocess", 410, 450, "r")
    tracks.add(1, 1, "late", 499, 499, "r")  # zero length, inside
    out = tracks.nested()
    assert improperly_nested(out) == []
    assert [(e["name"], e["ts"], e["dur"]) for e in out] == [("preprocess", 0, 100), ("read", 100, 200),
        ("publish", 400, 100), ("postprocess", 410, 40), ("late", 499, 0)]  # fmt: skip


def test_a_ring_keeps_the_last_seconds_only():
    log = TraceLog(seconds=1.0)
    base = 1000.0  # monotonic seconds: any time will do
    for k in range(30):  # a frame every 0.1 s over 3 s
        at = base + k * 0.1
        log.append((CAPTURED, k, at, 5.0, 0.0, log.perf_of_mono(at), 1.0, False))
        log.append((PUBLISHED, "a", k, at + 0.01, log.perf_of_mono(at + 0.02), 10.0, 1.0, True, False,
                    log.perf_of_mono(at + 0.03), log.perf_of_mono(at + 0.04), at + 0.035, 0.5, "cpu"))  # fmt: skip
    trace = build_trace(log, TraceThreads(10, None, {"a": 11}, {"a": 12}), [])
    frames = {e["args"]["frame"] for e in trace["traceEvents"] if e["ph"] == "X"}
    # The newest record ends at 3.94 s: reads from 2.0 s on (frames 20-29), publishes from 1.94 s on (19 too).
    assert set(range(20, 30)) <= frames and min(frames) == 19, frames
    assert improperly_nested(trace["traceEvents"]) == []


def test_profile_trace_nests_each_op_in_its_run(tmp_path: Path):
    trace_path = tmp_path / "ops.json"
    run = run_cli("profile", "--model", "efficientnet_lite0_int8", "--threads", "1", "--runs", "3", "--trace",
                  trace_path, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stderr
    events = json.loads(trace_path.read_text())["traceEvents"]
    assert improperly_nested(events) == []
    runs = [e for e in events if e["ph"] == "X" and e["name"] == "inference"]
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert len(runs) == 3 and len(ops) % 3 == 0 and len(ops) >= 3 * 60  # every op of every profiled run
    for op in ops:
        holders = [r for r in runs if r["ts"] <= op["ts"] and op["ts"] + op["dur"] <= r["ts"] + r["dur"]]
        assert len(holders) == 1, op  # inside exactly one run
        assert "kernel" in op["args"] and "placement" in op["args"]
    assert {op["args"].get("node") for op in ops} >= {0}  # the TFLite node each op ran


def test_a_gpu_process_run_is_a_slice_of_its_own_process_and_the_inference_thread_says_it_queued():
    """A queued run in the GPU process (QueuedRunner): its slice goes on a process of its own, placed on this
    process's clock and said to be estimated; the inference thread shows where it handed the frame over."""
    log = TraceLog()
    base = 1000.0
    for k in range(3):
        at = base + k * 0.01
        log.append((CAPTURED, k, at, 2.0, 0.0, log.perf_of_mono(at), 1.0, False))
        log.append((PUBLISHED, "a", k, at + 0.001, log.perf_of_mono(at + 0.004), 4.0, 1.0, True, True,
                    log.perf_of_mono(at + 0.009), log.perf_of_mono(at + 0.0095), at + 0.0093, 0.2, "gpu"))  # fmt: skip
    events = build_trace(log, TraceThreads(10, None, {"a": 11}, {"a": 12}), [])["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    (child,) = [pid for pid, name in processes.items() if name.startswith("GPU process")]
    runs = [e for e in events if e["ph"] == "X" and e["name"] == "inference"]
    assert {e["pid"] for e in runs} == {child} and len(runs) == 3 and all("estimated" in e["args"] for e in runs)
    assert [e["args"]["frame"] for e in events if e["ph"] == "i" and e["name"] == "queued"] == [0, 1, 2]
    assert improperly_nested(events) == []
    # Each frame's flow goes capture -> GPU process -> results.
    flows = defaultdict(list)
    for e in events:
        if e["ph"] in "stf":
            flows[e["id"]].append(e["pid"] == child)
    assert all(points == [False, True, False] for points in flows.values())


def test_the_sampler_keeps_its_readings_for_the_counter_tracks():
    from app.metrics.resources import ResourceSampler

    with ResourceSampler(interval_s=0.05, gpu=False) as sampler:
        time.sleep(0.4)
    readings = sampler.readings_between(-float("inf"), float("inf"))
    stamps = [r.sampled_at for r in readings]
    assert len(readings) >= 3 and stamps == sorted(stamps)
    assert any(r.rss_mb for r in readings) and any(r.process_cpu_pct_cores is not None for r in readings)
    assert sampler.readings_between(stamps[1], stamps[1]) == [readings[1]]


def test_inline_preprocessing_ends_by_the_invoke():
    """A frame preprocessed on the inference thread: its preprocess_ms is what preprocessing it cost wherever
    that ran (an A/B side takes stage 1 from the shared cache, 26 ms measured on the other side for a first
    frame here), so on this thread its slice ends by the invoke's start at the latest."""
    log = TraceLog()
    at = 1000.0
    log.append((PUBLISHED, "a", 0, at, log.perf_of_mono(at + 0.0004), 5.0, 26.0, False, False,
                log.perf_of_mono(at + 0.006), log.perf_of_mono(at + 0.007), at + 0.0065, 0.2, "cpu"))  # fmt: skip
    events = build_trace(log, TraceThreads(10, None, {"a": 11}, {"a": 12}), [])["traceEvents"]
    slices = {e["name"]: e for e in events if e["ph"] == "X" and e["tid"] == 11}
    assert slices["preprocess"]["ts"] + slices["preprocess"]["dur"] == slices["inference"]["ts"]
    assert slices["preprocess"]["dur"] == 400 and slices["inference"]["dur"] == 5000
