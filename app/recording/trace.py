"""A pipeline's timeline as Chrome's trace event format (JSON), for ui.perfetto.dev and chrome://tracing.

Built after the run from what `TraceLog` (app/metrics/trace.py) collected, the pipeline's events and the
resource sampler's readings (docs/guide.md, "A timeline in Perfetto", lists the tracks):

- one track per pipeline thread, named by `thread_name` metadata (capture, preprocessing where it has a
  thread of its own, inference and results per side), with complete slices (`ph: "X"`) for each frame's
  stages, each carrying `args.frame`, and flow events (`s`/`t`/`f`, one flow per frame and side) that
  link a frame's slices from thread to thread;
- a GPU session in a process of its own as a process of its own: its runs' slices are placed on this
  process's clock, ending when their output came back and as long as the child measured them (the child
  keeps no stamps on a shared clock), so they are an estimate that ends late by the hand-back;
- counter tracks (`ph: "C"`): process and system CPU %, resident memory and, where NVML reads them, GPU
  utilisation, SM clock and power;
- instant events (`ph: "i"`): the pipeline's events (open, switch, fallback, source lost...) and each
  dropped frame.

Timestamps are whole microseconds from the log's origin, on one clock (perf_counter). Slices on one
thread are made properly nested: a slice that overlaps the one before by the few microseconds between
two stamps of one moment starts where that one ends.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from app.errors import UsageError
from app.metrics.resources import ResourceReading
from app.metrics.trace import CAPTURED, DROPPED, PUBLISHED, Captured, Dropped, Published, Record, TraceLog
from app.pipeline import Event, EventKind, Feed
from app.profile.types import Profile

_SOURCE_EVENTS = {EventKind.SOURCE_LOST, EventKind.SOURCE_RECONNECTED, EventKind.SOURCE_ENDED}
_WAIT_MAX_US = 1_000_000  # a longer gap between two inferences is not a wait for a frame (a switch, a pause)
_FLOW = "frame"  # the flows' category and name
_NESTING_PASSES = 50  # each pass settles the overlaps one level deep
_ESTIMATED = "placed on this process's clock: ends when its output came back, as long as the child measured"


@dataclass(frozen=True)
class TraceThreads:
    """The pipeline's threads by role, as the kernel numbers them (threading's native_id)."""

    capture: int | None
    preprocess: int | None  # None: preprocessing ahead runs on the capture thread
    inference: dict[str, int | None]  # by side
    results: dict[str, int | None]


def threads_of(feed: Feed) -> TraceThreads:
    capture = feed.capture.threads()
    return TraceThreads(
        capture=capture[0].native_id,
        preprocess=capture[1].native_id if len(capture) > 1 else None,
        inference={side: w.inference_thread.native_id for side, w in feed.workers.items()},
        results={side: w.results_thread.native_id for side, w in feed.workers.items()},
    )


@dataclass(frozen=True)
class TraceFacts:
    """The trace a run wrote: what bench prints and its JSON says."""

    path: Path
    events: int  # trace events in the file
    frames: int  # frames with an inference slice
    threads: tuple[str, ...]  # the named tracks
    truncated: bool  # the log was full: its oldest records were pushed out

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "events": self.events,
            "frames": self.frames,
            "threads": list(self.threads),
            "truncated": self.truncated,
        }


def write_trace(
    path: Path,
    log: TraceLog,
    feed: Feed,
    readings: Iterable[ResourceReading] = (),
    process_name: str = "delegate-scope",
) -> TraceFacts:
    """Write the trace of `feed`'s run (stopped) to `path`; what it holds."""
    events = [(side, e) for side in feed.sides for e in feed.events(side)]
    trace = build_trace(log, threads_of(feed), events, readings, process_name)
    try:
        path.write_text(json.dumps(trace, separators=(",", ":")) + "\n", encoding="utf-8")
    except OSError as exc:  # checked before the run (check_writable); a disk that filled up meanwhile
        raise UsageError(f"--trace: cannot write {path} ({exc.strerror})") from None
    names = tuple(e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name")
    frames = {
        (e["args"]["side"], e["args"]["frame"])
        for e in trace["traceEvents"]
        if e["ph"] == "X" and e["name"] == "inference"
    }
    return TraceFacts(path, len(trace["traceEvents"]), len(frames), names, log.full())


class _Tracks:
    """Slices by (pid, tid) while they are gathered; made properly nested once all are in."""

    def __init__(self) -> None:
        self.slices: dict[tuple[int, int], list[dict[str, Any]]] = {}

    def add(self, pid: int, tid: int, name: str, start_us: int, end_us: int, cat: str, **args: object) -> None:
        if end_us < start_us:
            end_us = start_us
        self.slices.setdefault((pid, tid), []).append(
            {
                "name": name,
                "cat": cat,
                "ph": "X",
                "ts": start_us,
                "dur": end_us - start_us,
                "pid": pid,
                "tid": tid,
                "args": args,
            }
        )

    def nested(self) -> list[dict[str, Any]]:
        """Every track's slices, each inside the one it starts in or after its end: one that starts inside
        another and ends after it (two readings of one moment, microseconds apart) starts where that one
        ends, at zero length if nothing is left. Repeated until no slice moves: a move only ever delays a
        start, so it ends."""
        out: list[dict[str, Any]] = []
        for track in self.slices.values():
            for _ in range(_NESTING_PASSES):
                track.sort(key=lambda s: (s["ts"], -s["dur"]))
                moved = False
                open_ends: list[int] = []  # the ends of the slices the current one may lie in
                for s in track:
                    while open_ends and open_ends[-1] <= s["ts"]:
                        open_ends.pop()
                    end = s["ts"] + s["dur"]
                    if open_ends and end > open_ends[-1]:
                        s["ts"], s["dur"], moved = open_ends[-1], max(0, end - open_ends[-1]), True
                        continue  # placed again on the next pass, after the one it overlapped
                    open_ends.append(end)
                if not moved:
                    break
            out.extend(track)
        return out


def build_trace(
    log: TraceLog,
    threads: TraceThreads,
    events: Iterable[tuple[str, Event]],
    readings: Iterable[ResourceReading] = (),
    process_name: str = "delegate-scope",
) -> dict[str, Any]:
    """The trace as the JSON object Chrome's trace event format describes (`traceEvents`, ...)."""
    pid = os.getpid()
    sides = sorted(threads.inference)
    ab = len(sides) > 1

    def us(perf: float) -> int:
        return round((perf - log.origin) * 1e6)

    def us_mono(mono: float) -> int:
        return us(log.perf_of_mono(mono))

    def side_name(role: str, side: str) -> str:
        return f"{role} {side.upper()}" if ab else role

    # A thread that never started has no native id: its records (if any) go to a made-up one.
    fallback = iter(range(1, 1000))
    capture = threads.capture or next(fallback)
    preprocess = threads.preprocess or capture
    inference = {side: tid or next(fallback) for side, tid in threads.inference.items()}
    results = {side: tid or next(fallback) for side, tid in threads.results.items()}
    # The GPU process of a side (made up: the child's own pid is not kept), when it ran queued frames.
    child = {side: pid * 10 + k + 1 for k, side in enumerate(sides)}
    child_used: set[str] = set()

    tracks = _Tracks()
    out: list[dict[str, Any]] = []
    reads: dict[int, tuple[int, int, int]] = {}  # frame -> (tid, ts, dur) of its read, for flows
    preps: dict[int, tuple[int, int, int]] = {}  # frame -> its preprocessing ahead on a thread of its own
    horizon = -float("inf")
    if log.seconds is not None and log.records:
        horizon = _record_perf(log, log.records[-1]) - log.seconds
    inferred: dict[str, list[tuple[int, int, int, int]]] = {s: [] for s in sides}  # (frame, tid, ts, dur)
    published: list[tuple[str, int, tuple[int, int, int], tuple[int, int, int]]] = []

    for record in list(log.records):
        if _record_perf(log, record) < horizon:
            continue
        kind = record[0]
        if kind == CAPTURED:
            _, frame, captured_at, read_ms, paced_ms, prep_from, prep_ms, own = cast(Captured, record)
            at = log.perf_of_mono(captured_at)
            start, decoded = us(at - read_ms / 1e3), us(at - paced_ms / 1e3)
            tracks.add(pid, capture, "read", start, decoded, "capture", frame=frame)
            reads[frame] = (capture, start, decoded - start)
            if paced_ms:
                tracks.add(pid, capture, "wait for the frame's time", decoded, us(at), "capture", frame=frame)
            if prep_ms:
                tid = preprocess if own else capture
                p0, p1 = us(prep_from), us(prep_from + prep_ms / 1e3)
                tracks.add(pid, tid, "preprocess", p0, p1, "preprocess", frame=frame)
                if own and tid != capture:
                    preps[frame] = (tid, p0, p1 - p0)
        elif kind == DROPPED:
            _, frame, at, where = cast(Dropped, record)
            where_said: dict[str, object] = (
                {"side": sides[where]} if 0 <= where < len(sides) else {"where": "the preprocessing thread's slot"}
            )
            out.append(
                {
                    "name": "dropped",
                    "cat": "drop",
                    "ph": "i",
                    "s": "t",
                    "ts": us_mono(at),
                    "pid": pid,
                    "tid": capture,
                    "args": {"frame": frame, **where_said},
                }
            )
        elif kind == PUBLISHED:
            (
                _,
                side,
                frame,
                started,
                invoked,
                inference_ms,
                preprocess_ms,
                ahead,
                queued,
                pub_from,
                pub_to,
                finished,
                postprocess_ms,
                backend,
            ) = cast(Published, record)
            assert isinstance(side, str) and isinstance(frame, int)
            s0 = us_mono(started)
            i0, i1 = us(invoked), us(invoked + inference_ms / 1e3)
            itid = inference[side]
            if queued:  # the run is the child's: the inference thread only queued the frame
                child_used.add(side)
                tracks.add(
                    child[side],
                    child[side],
                    "inference",
                    i0,
                    i1,
                    "inference",
                    frame=frame,
                    side=side,
                    backend=backend,
                    estimated=_ESTIMATED,
                )
                out.append(
                    {
                        "name": "queued",
                        "cat": "inference",
                        "ph": "i",
                        "s": "t",
                        "ts": s0,
                        "pid": pid,
                        "tid": itid,
                        "args": {"frame": frame, "side": side},
                    }
                )
                at_inference = (child[side], i0, i1 - i0)
            else:
                if not ahead and preprocess_ms:
                    # preprocess_ms is what the frame's preprocessing cost wherever it ran (a stage an A/B side
                    # took from the shared cache, a repeated image's first computing): on this thread it ended
                    # by the invoke's start at the latest.
                    tracks.add(
                        pid,
                        itid,
                        "preprocess",
                        s0,
                        min(s0 + round(preprocess_ms * 1e3), i0),
                        "preprocess",
                        frame=frame,
                        side=side,
                        inline=True,
                    )
                tracks.add(pid, itid, "inference", i0, i1, "inference", frame=frame, side=side, backend=backend)
                inferred[side].append((frame, itid, s0, i1))
                at_inference = (itid, i0, i1 - i0)
            r0, r1 = us(pub_from), us(pub_to)
            rtid = results[side]
            tracks.add(pid, rtid, "publish", r0, r1, "results", frame=frame, side=side)
            f = us_mono(finished)
            post0 = max(r0, f - round(postprocess_ms * 1e3))
            tracks.add(pid, rtid, "postprocess", post0, max(post0, min(f, r1)), "results", frame=frame, side=side)
            published.append((side, frame, at_inference, (rtid, r0, r1 - r0)))

    # The inference thread between two inferences: handing the last on, then waiting for a frame (or the
    # throttle). Derived from the two stamps around the gap, so it costs the pipeline nothing.
    for side, rows in inferred.items():
        rows.sort(key=lambda r: r[2])
        for (_, tid, _, end), (frame, _, start, _) in itertools.pairwise(rows):
            if 0 < start - end < _WAIT_MAX_US:
                tracks.add(pid, tid, "wait for a frame", end, start, "inference", frame=frame, side=side)

    out.extend(tracks.nested())
    # Flows: one per frame and side, read -> (preprocessing thread) -> inference -> publish.
    for k, (side, frame, at_inference, at_results) in enumerate(published):
        points = [p for p in (reads.get(frame), preps.get(frame), at_inference, at_results) if p is not None]
        for n, (tid, ts, dur) in enumerate(points):
            phase = "s" if n == 0 else "f" if n == len(points) - 1 else "t"
            flow: dict[str, Any] = {
                "name": _FLOW,
                "cat": _FLOW,
                "ph": phase,
                "id": k + 1,
                "ts": ts + dur // 2,
                "pid": child[side] if tid == child[side] else pid,
                "tid": tid,
            }
            if phase == "f":
                flow["bp"] = "e"  # bound to the slice it is in, not the next one to begin
            out.append(flow)

    for side, event in events:
        if log.perf_of_mono(event.at) < horizon:  # before the ring's last seconds
            continue
        tid = capture if event.kind in _SOURCE_EVENTS else inference.get(side, capture)
        said: dict[str, object] = {"message": event.message, "side": side}
        for name in ("changes", "close_ms", "open_ms", "first_inference_ms"):
            value = getattr(event, name)
            if value is not None:
                said[name] = value
        out.append(
            {
                "name": str(event.kind),
                "cat": "event",
                "ph": "i",
                "s": "t",
                "ts": us_mono(event.at),
                "pid": pid,
                "tid": tid,
                "args": said,
            }
        )

    out.extend(_counters(readings, pid, us_mono, horizon_us=us(horizon) if horizon > -float("inf") else None))
    meta = [_meta("process_name", pid, 0, process_name), _meta("thread_name", pid, capture, "capture")]
    order = [capture]
    if threads.preprocess is not None:
        meta.append(_meta("thread_name", pid, preprocess, "preprocessing"))
        order.append(preprocess)
    for side in sides:
        meta.append(_meta("thread_name", pid, inference[side], side_name("inference", side)))
        meta.append(_meta("thread_name", pid, results[side], side_name("results", side)))
        order += [inference[side], results[side]]
        if side in child_used:
            name = "GPU process" + (f" {side.upper()}" if ab else "") + " (slices estimated on this process's clock)"
            meta.append(_meta("process_name", child[side], 0, name))
            meta.append(_meta("thread_name", child[side], child[side], "GPU session"))
    meta += [
        {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": k}}
        for k, tid in enumerate(order)
    ]
    out.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": process_name,
            "clock": "perf_counter, microseconds from the start of the trace",
            "truncated": log.full(),
        },
    }


def _meta(kind: str, pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def _record_perf(log: TraceLog, record: Record) -> float:
    """When a record was taken, on the trace's clock (the ring's horizon)."""
    kind = record[0]
    if kind == PUBLISHED:
        return cast(Published, record)[10]
    return log.perf_of_mono(cast(Captured | Dropped, record)[2])


def _counters(
    readings: Iterable[ResourceReading], pid: int, us_mono: Callable[[float], int], horizon_us: int | None
) -> list[dict[str, Any]]:
    """The sampler's readings as counter tracks; a value it could not read is left out, never drawn as 0."""
    out = []
    for r in readings:
        if r.sampled_at is None:
            continue
        ts = us_mono(r.sampled_at)
        if horizon_us is not None and ts < horizon_us:
            continue
        gpu = r.power.gpu if r.power is not None else None
        values = {
            ("process CPU", "% summed over cores"): r.process_cpu_pct_cores,
            ("system CPU", "% of the machine"): r.system_cpu_pct,
            ("process memory", "RSS MiB"): r.rss_mb,
            ("GPU utilisation", "%"): r.gpu_util_pct,
            ("GPU SM clock", "MHz"): gpu.sm_clock_mhz if gpu is not None else None,
            ("GPU power", "W"): gpu.power_w if gpu is not None else None,
        }
        for (name, key), value in values.items():
            if value is not None:
                out.append({"name": name, "ph": "C", "ts": ts, "pid": pid, "args": {key: round(float(value), 3)}})
    return out


def profile_trace(profile: Profile, process_name: str = "delegate-scope profile") -> dict[str, Any]:
    """A per-op profile as a trace: each profiled run an `inference` slice on one thread, the ops inside it as
    slices in run order (`args`: the TFLite node, the kernel that ran it, on the accelerator or the CPU).

    LiteRT's profiler gives each op's duration and order, not its start: the ops are laid back to back from
    the run's start, and the runs back to back, so the picture is true of each op's length and place in
    the run, not of the gaps between them (the run's slice is its Invoke span, the ops' sum where longer).
    A profile without per-run times (the GPU's, by difference) is one run of its rows' times."""
    pid, tid = os.getpid(), 1
    runs = [list(r) for r in profile.per_run_ms] or [[op.ms for op in profile.ops]]
    invokes = list(profile.per_run_invoke_ms) if len(profile.per_run_invoke_ms) == len(runs) else []
    tracks = _Tracks()
    start = 0
    for k, times in enumerate(runs):
        ops_us = [round(ms * 1e3) for ms in times]
        invoke_us = round(invokes[k] * 1e3) if invokes else 0
        end = start + max(sum(ops_us), invoke_us)
        tracks.add(
            pid,
            tid,
            "inference",
            start,
            end,
            "inference",
            run=k,
            used=profile.used,
            invoke_ms=invokes[k] if invokes else None,
        )
        at = start
        for op, us_ in zip(profile.ops, ops_us, strict=False):
            args: dict[str, object] = {
                "order": op.order,
                "kernel": op.kernel,
                "placement": str(op.placement),
                "source": str(op.source),
            }
            if op.node is not None:
                args["node"] = op.node
            if op.partition is not None:
                args["partition"] = op.partition
            tracks.add(pid, tid, op.op, at, at + us_, "op", **args)
            at += us_
        start = end
    return {
        "traceEvents": [
            _meta("process_name", pid, 0, process_name),
            _meta("thread_name", pid, tid, f"{profile.model} on {profile.accelerator}"),
            *tracks.nested(),
        ],
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": process_name,
            "clock": "laid out from the profiler's durations: each op back to back in run order, runs back to back",
        },
    }
