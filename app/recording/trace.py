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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from app.errors import UsageError
from app.metrics.resources import ResourceReading
from app.metrics.trace import CAPTURED, DROPPED, PUBLISHED, Captured, Dropped, Published, TraceLog
from app.pipeline import Event, EventKind, Feed
from app.profile.types import Profile

_SOURCE_EVENTS = {EventKind.SOURCE_LOST, EventKind.SOURCE_RECONNECTED, EventKind.SOURCE_ENDED}
_WAIT_MAX_US = 1_000_000  # a longer gap between two inferences is not a wait for a frame (a switch, a pause)
_FLOW = "frame"  # the flows' category and name
_NESTING_PASSES = 50  # each pass settles the overlaps one level deep
_RUN_FLOW_IDS = 10_000_000  # flow ids one run's trace may use (join_runs)
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
    build = _TraceBuilder(log, threads)
    for record in list(log.records):
        if log.taken_at(record) < build.horizon:
            continue
        kind = record[0]
        if kind == CAPTURED:
            build.captured(cast(Captured, record))
        elif kind == DROPPED:
            build.dropped(cast(Dropped, record))
        elif kind == PUBLISHED:
            build.published(cast(Published, record))
    build.waits()
    out = build.out
    out.extend(build.tracks.nested())
    out.extend(build.flows())
    out.extend(build.instants(events))
    horizon_us = build.us(build.horizon) if build.horizon > -float("inf") else None
    out.extend(_counters(readings, build.pid, build.us_mono, horizon_us=horizon_us))
    out.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    return {
        "traceEvents": build.metadata(process_name) + out,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": process_name,
            "clock": "perf_counter, microseconds from the start of the trace",
            "perf_origin_s": log.origin,  # the start on perf_counter: runs of one process joined on one clock
            "truncated": log.full(),
        },
    }


def join_runs(runs: Sequence[tuple[str, dict[str, Any]]], process_name: str) -> dict[str, Any]:
    """Traces of runs one process made one after another (a sweep's configurations) as one, on one clock:
    each run a process of its own in the viewer, a track group named `N. label` (a GPU process of its own,
    the run's too, named after it) in the order given."""
    if not runs:
        return {"traceEvents": [], "displayTimeUnit": "ms", "otherData": {"tool": process_name, "runs": 0}}
    origin = min(trace["otherData"]["perf_origin_s"] for _, trace in runs)
    meta: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for k, (label, trace) in enumerate(runs):
        shift = round((trace["otherData"]["perf_origin_s"] - origin) * 1e6)
        pids: dict[int, int] = {}  # the run's pids (the first its own) -> pids of its own in the joined trace
        for e in trace["traceEvents"]:
            e = {**e, "pid": pids.setdefault(e["pid"], (k + 1) * 100 + len(pids))}
            if e["ph"] == "M":
                if e["name"] == "process_name":
                    own = e["pid"] == (k + 1) * 100
                    e["args"] = {"name": f"{k + 1}. {label}" + ("" if own else f" · {e['args']['name']}")}
                meta.append(e)
                continue
            e["ts"] += shift
            if e["ph"] in "stf":
                e["id"] += k * _RUN_FLOW_IDS
            out.append(e)
        meta.append({"name": "process_sort_index", "ph": "M", "pid": (k + 1) * 100, "args": {"sort_index": k}})
    out.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": process_name,
            "clock": "perf_counter, microseconds from the start of the first run's trace",
            "runs": len(runs),
            "truncated": any(trace["otherData"].get("truncated") for _, trace in runs),
        },
    }


class _TraceBuilder:
    """The trace's events gathered record by record: slices by thread, instants, and what links a frame's
    slices across threads (flows)."""

    def __init__(self, log: TraceLog, threads: TraceThreads) -> None:
        self.log, self.threads = log, threads
        self.pid = os.getpid()
        self.sides = sorted(threads.inference)
        self.ab = len(self.sides) > 1
        # A thread that never started has no native id: its records (if any) go to a made-up one.
        fallback = iter(range(1, 1000))
        self.capture = threads.capture or next(fallback)
        self.preprocess = threads.preprocess or self.capture
        self.inference = {side: tid or next(fallback) for side, tid in threads.inference.items()}
        self.results = {side: tid or next(fallback) for side, tid in threads.results.items()}
        # The GPU process of a side (made up: the child's own pid is not kept), when it ran queued frames.
        self.child = {side: self.pid * 10 + k + 1 for k, side in enumerate(self.sides)}
        self.child_used: set[str] = set()
        self.tracks = _Tracks()
        self.out: list[dict[str, Any]] = []
        self.reads: dict[int, tuple[int, int, int]] = {}  # frame -> (tid, ts, dur) of its read, for flows
        self.preps: dict[int, tuple[int, int, int]] = {}  # frame -> its preprocessing on a thread of its own
        self.horizon = -float("inf")
        if log.seconds is not None and log.records:
            self.horizon = log.taken_at(log.records[-1]) - log.seconds
        self.inferred: dict[str, list[tuple[int, int, int, int]]] = {s: [] for s in self.sides}  # frame, tid, ts, end
        self.published_at: list[tuple[str, int, tuple[int, int, int], tuple[int, int, int]]] = []

    def us(self, perf: float) -> int:
        return round((perf - self.log.origin) * 1e6)

    def us_mono(self, mono: float) -> int:
        return self.us(self.log.perf_of_mono(mono))

    def _side_name(self, role: str, side: str) -> str:
        return f"{role} {side.upper()}" if self.ab else role

    def _instant(self, name: str, cat: str, ts: int, tid: int, args: dict[str, object]) -> dict[str, Any]:
        return {"name": name, "cat": cat, "ph": "i", "s": "t", "ts": ts, "pid": self.pid, "tid": tid, "args": args}

    def captured(self, record: Captured) -> None:
        """A frame's read, its wait for its time (paced) and its preprocessing ahead."""
        _, frame, captured_at, read_ms, paced_ms, prep_from, prep_ms, own = record
        pid, capture, us = self.pid, self.capture, self.us
        at = self.log.perf_of_mono(captured_at)
        start, decoded = us(at - read_ms / 1e3), us(at - paced_ms / 1e3)
        self.tracks.add(pid, capture, "read", start, decoded, "capture", frame=frame)
        self.reads[frame] = (capture, start, decoded - start)
        if paced_ms:
            self.tracks.add(pid, capture, "wait for the frame's time", decoded, us(at), "capture", frame=frame)
        if prep_ms:
            tid = self.preprocess if own else capture
            p0, p1 = us(prep_from), us(prep_from + prep_ms / 1e3)
            self.tracks.add(pid, tid, "preprocess", p0, p1, "preprocess", frame=frame)
            if own and tid != capture:
                self.preps[frame] = (tid, p0, p1 - p0)

    def dropped(self, record: Dropped) -> None:
        _, frame, at, where = record
        sides = self.sides
        where_said: dict[str, object] = (
            {"side": sides[where]} if 0 <= where < len(sides) else {"where": "the preprocessing thread's slot"}
        )
        args: dict[str, object] = {"frame": frame, **where_said}
        self.out.append(self._instant("dropped", "drop", self.us_mono(at), self.capture, args))

    def published(self, record: Published) -> None:
        """A frame's inference (on the inference thread, or the GPU process's estimated on this clock), its
        inline preprocessing, and its publishing and postprocessing on the results thread."""
        (_, side, frame, started, invoked, inference_ms, preprocess_ms, ahead, queued, pub_from, pub_to, finished,
         postprocess_ms, backend) = record  # fmt: skip
        assert isinstance(side, str) and isinstance(frame, int)
        pid, tracks, us = self.pid, self.tracks, self.us
        s0 = self.us_mono(started)
        i0, i1 = us(invoked), us(invoked + inference_ms / 1e3)
        itid = self.inference[side]
        if queued:  # the run is the child's: the inference thread only queued the frame
            child = self.child[side]
            self.child_used.add(side)
            tracks.add(child, child, "inference", i0, i1, "inference", frame=frame, side=side, backend=backend,
                       estimated=_ESTIMATED)  # fmt: skip
            self.out.append(self._instant("queued", "inference", s0, itid, {"frame": frame, "side": side}))
            at_inference = (child, i0, i1 - i0)
        else:
            if not ahead and preprocess_ms:
                # preprocess_ms is what the frame's preprocessing cost wherever it ran (a stage an A/B side
                # took from the shared cache, a repeated image's first computing): on this thread it ended
                # by the invoke's start at the latest.
                tracks.add(pid, itid, "preprocess", s0, min(s0 + round(preprocess_ms * 1e3), i0), "preprocess",
                           frame=frame, side=side, inline=True)  # fmt: skip
            tracks.add(pid, itid, "inference", i0, i1, "inference", frame=frame, side=side, backend=backend)
            self.inferred[side].append((frame, itid, s0, i1))
            at_inference = (itid, i0, i1 - i0)
        r0, r1 = us(pub_from), us(pub_to)
        rtid = self.results[side]
        tracks.add(pid, rtid, "publish", r0, r1, "results", frame=frame, side=side)
        f = self.us_mono(finished)
        post0 = max(r0, f - round(postprocess_ms * 1e3))
        tracks.add(pid, rtid, "postprocess", post0, max(post0, min(f, r1)), "results", frame=frame, side=side)
        self.published_at.append((side, frame, at_inference, (rtid, r0, r1 - r0)))

    def waits(self) -> None:
        """The inference thread between two inferences: handing the last on, then waiting for a frame (or the
        throttle). Derived from the two stamps around the gap, so it costs the pipeline nothing."""
        for side, rows in self.inferred.items():
            rows.sort(key=lambda r: r[2])
            for (_, tid, _, end), (frame, _, start, _) in itertools.pairwise(rows):
                if 0 < start - end < _WAIT_MAX_US:
                    self.tracks.add(self.pid, tid, "wait for a frame", end, start, "inference", frame=frame, side=side)

    def flows(self) -> list[dict[str, Any]]:
        """One flow per frame and side: read -> (preprocessing thread) -> inference -> publish."""
        out = []
        for k, (side, frame, at_inference, at_results) in enumerate(self.published_at):
            points = [p for p in (self.reads.get(frame), self.preps.get(frame), at_inference, at_results) if p]
            for n, (tid, ts, dur) in enumerate(points):
                phase = "s" if n == 0 else "f" if n == len(points) - 1 else "t"
                flow: dict[str, Any] = {
                    "name": _FLOW,
                    "cat": _FLOW,
                    "ph": phase,
                    "id": k + 1,
                    "ts": ts + dur // 2,
                    "pid": self.child[side] if tid == self.child[side] else self.pid,
                    "tid": tid,
                }
                if phase == "f":
                    flow["bp"] = "e"  # bound to the slice it is in, not the next one to begin
                out.append(flow)
        return out

    def instants(self, events: Iterable[tuple[str, Event]]) -> list[dict[str, Any]]:
        """The pipeline's events (open, switch, fallback, source lost, ...) on the thread they concern."""
        out = []
        for side, event in events:
            if self.log.perf_of_mono(event.at) < self.horizon:  # before the ring's last seconds
                continue
            tid = self.capture if event.kind in _SOURCE_EVENTS else self.inference.get(side, self.capture)
            said: dict[str, object] = {"message": event.message, "side": side}
            for name in ("changes", "close_ms", "open_ms", "first_inference_ms"):
                value = getattr(event, name)
                if value is not None:
                    said[name] = value
            out.append(self._instant(str(event.kind), "event", self.us_mono(event.at), tid, said))
        return out

    def metadata(self, process_name: str) -> list[dict[str, Any]]:
        """The process's and threads' names, and the threads' order top to bottom."""
        pid, capture = self.pid, self.capture
        meta = [_meta("process_name", pid, 0, process_name), _meta("thread_name", pid, capture, "capture")]
        order = [capture]
        if self.threads.preprocess is not None:
            meta.append(_meta("thread_name", pid, self.preprocess, "preprocessing"))
            order.append(self.preprocess)
        for side in self.sides:
            meta.append(_meta("thread_name", pid, self.inference[side], self._side_name("inference", side)))
            meta.append(_meta("thread_name", pid, self.results[side], self._side_name("results", side)))
            order += [self.inference[side], self.results[side]]
            if side in self.child_used:
                name = "GPU process" + (f" {side.upper()}" if self.ab else "") + \
                    " (slices estimated on this process's clock)"  # fmt: skip
                meta.append(_meta("process_name", self.child[side], 0, name))
                meta.append(_meta("thread_name", self.child[side], self.child[side], "GPU session"))
        meta += [
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": k}}
            for k, tid in enumerate(order)
        ]
        return meta


def _meta(kind: str, pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


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


def profile_span_us(profile: Profile) -> int:
    """How long `profile_runs` lays the profile's runs out, in microseconds."""
    runs, invokes = _profile_runs(profile)
    return sum(max(sum(round(ms * 1e3) for ms in r), round(invokes[k] * 1e3) if invokes else 0)
               for k, r in enumerate(runs))  # fmt: skip


def _profile_runs(profile: Profile) -> tuple[list[list[float]], list[float]]:
    """Each profiled run's op times (a profile without per-run times, the GPU's: one run of its rows), and
    each run's Invoke span where the profile has one per run."""
    runs = [list(r) for r in profile.per_run_ms] or [[op.ms for op in profile.ops]]
    invokes = list(profile.per_run_invoke_ms) if len(profile.per_run_invoke_ms) == len(runs) else []
    return runs, invokes


def profile_runs(
    tracks: _Tracks, pid: int, tid: int, profile: Profile, start: int, run: str = "inference", **more: object
) -> int:
    """Each profiled run a slice named `run` from `start` (microseconds), the ops inside it back to back in
    run order, the runs back to back; returns where the last ends. `more`: arguments every slice carries."""
    runs, invokes = _profile_runs(profile)
    for k, times in enumerate(runs):
        ops_us = [round(ms * 1e3) for ms in times]
        invoke_us = round(invokes[k] * 1e3) if invokes else 0
        end = start + max(sum(ops_us), invoke_us)
        tracks.add(pid, tid, run, start, end, "inference", run=k, used=profile.used,
                   invoke_ms=invokes[k] if invokes else None, **more)  # fmt: skip
        at = start
        for op, us_ in zip(profile.ops, ops_us, strict=False):
            args: dict[str, object] = {
                "order": op.order,
                "kernel": op.kernel,
                "placement": str(op.placement),
                "source": str(op.source),
                **more,
            }
            if op.node is not None:
                args["node"] = op.node
            if op.partition is not None:
                args["partition"] = op.partition
            tracks.add(pid, tid, op.op, at, at + us_, "op", **args)
            at += us_
        start = end
    return start


def profile_trace(profile: Profile, process_name: str = "delegate-scope profile") -> dict[str, Any]:
    """A per-op profile as a trace: each profiled run an `inference` slice on one thread, the ops inside it as
    slices in run order (`args`: the TFLite node, the kernel that ran it, on the accelerator or the CPU).

    LiteRT's profiler gives each op's duration and order, not its start: the ops are laid back to back from
    the run's start, and the runs back to back, so the picture is true of each op's length and place in
    the run, not of the gaps between them (the run's slice is its Invoke span, the ops' sum where longer).
    A profile without per-run times (the GPU's, by difference) is one run of its rows' times."""
    pid, tid = os.getpid(), 1
    tracks = _Tracks()
    profile_runs(tracks, pid, tid, profile, 0)
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
