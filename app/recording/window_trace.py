"""The window's timeline as one Chrome trace: the pipelines it ran while tracing (a source switch, A/B on
or off, a pace change or a pause replaces the pipeline, and its threads with it), each built as `bench`'s
trace is (app/recording/trace.py), on one clock, with the GUI thread's paints as a track of its own.

A window's pipelines each number their frames from 0: every slice and instant says which pipeline it
belongs to (`args.pipeline`, counting the window's pipelines), so `args.frame` with `args.pipeline`
follows one frame from its read to its paint."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import UsageError
from app.metrics.resources import ResourceReading
from app.metrics.trace import TraceLog
from app.pipeline import Event
from app.profile.types import Profile
from app.recording.trace import (
    TraceFacts,
    TraceThreads,
    _counters,
    _meta,
    _Tracks,
    build_trace,
    profile_runs,
    profile_span_us,
)

GUI_THREAD = "gui"  # the paints' track
PROFILED_RUN = "profiled run"  # a run of the Ops view's profiler: not one of the pipeline's inferences
PROCESS_NAME = "delegate-scope gui"
_FLOW_IDS = 10_000_000  # flow ids a pipeline may use: the next one's start after
# Tracks top to bottom: the frame's way through the pipeline, then the window.
_ORDER = ("capture", "preprocessing", "inference", "results", "inference A", "results A", "inference B",
          "results B", GUI_THREAD, "ops profiler", "ops profiler A", "ops profiler B")  # fmt: skip
_PROFILER_TID = 2**30  # the Ops view's profiler's tracks (its thread's own id is not kept): made up, one a side
_PROFILED = "laid out from the profiler's durations, back to back, ending when the profile was taken"


@dataclass(frozen=True, slots=True)
class Paint:
    """One paint of the video on the GUI thread: a new frame, or a newer result over the frame shown."""

    started: float  # perf_counter
    ended: float
    frame: int  # the frame shown
    pipeline: int  # the window's pipeline that read it
    results: tuple[int | None, int | None]  # the frames the shown results of side A and B were inferred on
    held_back_ms: float  # how long the frame waited for an inference to end before it was painted


@dataclass(frozen=True)
class ProfileTaken:
    """A per-op profile the Ops view's profiler took (its own runs of the side's model and backend, on a
    thread of its own, not the pipeline's inferences) and when it was done."""

    side: str
    taken_at: float  # perf_counter
    profile: Profile


@dataclass(frozen=True)
class PipelinePart:
    """One of the window's pipelines while it was traced: its log, threads and events."""

    pipeline: int
    log: TraceLog
    threads: TraceThreads
    events: tuple[tuple[str, Event], ...]  # (side, event)


def window_trace(
    parts: Sequence[PipelinePart],
    paints: Iterable[Paint],
    gui_tid: int | None,
    readings: Iterable[ResourceReading] = (),
    origin: float | None = None,
    horizon: float | None = None,  # perf_counter: no event, paint or reading before it (a ring's last seconds)
    profiles: Iterable[ProfileTaken] = (),
) -> dict[str, Any]:
    """The trace as the JSON object Chrome's trace event format describes. The logs hold the records to
    show: a ring's were pruned to its horizon as it ran (app/live/trace.py)."""
    pid = os.getpid()
    clock = parts[0].log if parts else TraceLog(capacity=1, origin=origin)
    meta: dict[tuple[str, int, int], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for k, part in enumerate(parts):
        events = [(s, e) for s, e in part.events if horizon is None or part.log.perf_of_mono(e.at) >= horizon]
        built = build_trace(part.log, part.threads, events, (), PROCESS_NAME)["traceEvents"]
        for e in built:
            if e["ph"] == "M":
                if e["name"] != "thread_sort_index":  # made again below for every pipeline's threads
                    meta.setdefault((e["name"], e["pid"], e["tid"]), e)
                continue
            if e["ph"] in "stf":
                e["id"] += k * _FLOW_IDS
            else:
                e["args"]["pipeline"] = part.pipeline
            out.append(e)
    gui = gui_tid or 0
    us = lambda perf: round((perf - clock.origin) * 1e6)  # noqa: E731
    tracks = _Tracks()
    for p in paints:
        if horizon is not None and p.started < horizon:
            continue
        a, b = p.results
        args = {"frame": p.frame, "pipeline": p.pipeline, "result_frame": a, "held_back_ms": round(p.held_back_ms, 3)}
        if b is not None:
            args["result_frame_b"] = b
        tracks.add(pid, gui, "paint", us(p.started), us(p.ended), "gui", **args)
    for name, tid in _profiles(tracks, pid, [p for p in profiles if horizon is None or p.taken_at >= horizon], us):
        meta.setdefault(("thread_name", pid, tid), _meta("thread_name", pid, tid, name))
    out.extend(tracks.nested())
    meta.setdefault(("thread_name", pid, gui), _meta("thread_name", pid, gui, GUI_THREAD))
    horizon_us = us(horizon) if horizon is not None else None
    out.extend(_counters(readings, pid, lambda mono: us(clock.perf_of_mono(mono)), horizon_us))
    out.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    return {
        "traceEvents": [*meta.values(), *_sort_indices(meta.values()), *out],
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": PROCESS_NAME,
            "clock": "perf_counter, microseconds from the start of the trace",
            "pipelines": len(parts),
            "truncated": any(p.log.full() for p in parts),
        },
    }


def _profiles(
    tracks: _Tracks, pid: int, profiles: list[ProfileTaken], us: Callable[[float], int]
) -> list[tuple[str, int]]:
    """The Ops view's profiles as a track a side: each profile's runs with their ops nested, ending when it
    was taken (LiveProfile.taken_at); their names and tids."""
    sides = sorted({p.side for p in profiles})
    letters = sides != ["a"]
    for p in profiles:
        tid = _PROFILER_TID + sides.index(p.side)
        end = us(p.taken_at)
        start = end - profile_span_us(p.profile)
        profile_runs(tracks, pid, tid, p.profile, start, PROFILED_RUN, side=p.side, estimated=_PROFILED)
    return [(f"ops profiler {side.upper()}" if letters else "ops profiler", _PROFILER_TID + k)
            for k, side in enumerate(sides)]  # fmt: skip


def _sort_indices(meta: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each thread's place top to bottom, by its name: a later pipeline's capture thread beside the first's."""
    rank = {name: k for k, name in enumerate(_ORDER)}
    out = []
    for e in meta:
        if e["name"] == "thread_name":
            index = rank.get(e["args"]["name"], len(_ORDER))
            out.append({"name": "thread_sort_index", "ph": "M", "pid": e["pid"], "tid": e["tid"],
                        "args": {"sort_index": index}})  # fmt: skip
    return out


def write_window_trace(path: Path, trace: dict[str, Any]) -> TraceFacts:
    """Write `trace` to `path`; what it holds. UsageError when it cannot be written."""
    try:
        path.write_text(json.dumps(trace, separators=(",", ":")) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--trace: cannot write {path} ({exc.strerror})") from None
    events = trace["traceEvents"]
    names = tuple(e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name")
    frames = {
        (e["args"]["pipeline"], e["args"]["side"], e["args"]["frame"])
        for e in events
        if e["ph"] == "X" and e["name"] == "inference"
    }
    return TraceFacts(path, len(events), len(frames), names, bool(trace["otherData"]["truncated"]))
