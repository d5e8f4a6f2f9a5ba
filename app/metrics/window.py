"""Rolling pipeline metrics: FPS, per-stage latency, CPU cost per inference (the resources: resources.py).

`Metrics` is fed by the capture and inference threads and read by the UI a few times a second.
Rates are events in a sliding window divided by the time the window really covers, never
1 / last latency: a window that has only been running for 1 s is 1 s long, not `window_s`.

Definitions (what the numbers mean, so they can be checked):

- The window is the half-open interval (lo, now] with lo = max(start, now - window_s), where
  start is construction or the last reset(). Frames and drops are placed by their timestamp,
  inferences by `finished_at`. `MetricsSnapshot.window_s` is now - lo.
- Percentiles: numpy's "linear" method (Hyndman & Fan type 7, numpy's default): p95 of a window
  can fall between two observed latencies.
- cpu_per_wall: mean CPU time of the inference (its thread and its runtime's threads, read per
  thread: app/system/thread_cpu.py) during `invoke` over mean `invoke` wall time. About the number of
  busy threads when the CPU does the work; on a GPU the calling thread may spin while it waits,
  so near 1 there says nothing about where the model runs (the GPU's own busy time does).

Memory: every stream is a numpy ring buffer of float64 rows, trimmed by age on insert and on
snapshot, so it holds rate x window_s rows; its storage doubles as needed (never shrinks before
reset()). At 1000 inferences/s and 1000 frames/s over 5 s: 5000 rows of 7 floats in an
8192-row buffer (459 kB) plus 8192 frame timestamps (66 kB). A hard cap of `max_rows` rows per
stream (default 200 000: 11 MB for inferences) holds even for a clock that never advances or a
very long window; when the cap pushes rows out, lo moves up to the newest pushed-out timestamp,
so rates and stats still describe one consistent, shorter span (window_s says which).
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Final

import numpy as np

from app.metrics.resources import ResourceReading, ResourceSampler

PERCENTILE_METHOD: Final = "linear"
LATENCY_KEYS = ("queue", "preprocess", "inference", "postprocess", "end_to_end")
DEFAULT_MAX_ROWS = 200_000


@dataclass(frozen=True)
class InferenceTiming:
    frame_index: int
    captured_at: float  # time.monotonic() when the frame was captured
    started_at: float  # monotonic, when the inference thread took the frame
    finished_at: float  # monotonic, when the result was published
    preprocess_ms: float
    inference_ms: float
    postprocess_ms: float
    # CPU time during the invoke: the inference thread + the threads its runtime started at open
    # (XNNPACK's workers, a GPU driver's), read per thread (app/system/thread_cpu.py). Not the process's:
    # capture, OpenCV's pool and the GUI run at the same time and are not the inference.
    inference_cpu_ms: float
    inference_thread_cpu_ms: float | None = None  # ... of which the calling thread
    runtime_threads_cpu_ms: float | None = None  # ... and the runtime's threads (None: not readable here)
    rest_of_process_cpu_ms: float | None = None  # every other thread of the process meanwhile
    # The inference thread's time waiting for a core during the invoke (runnable, not running:
    # schedstat); None where not readable. Wall time - its own CPU - this = the time it slept.
    inference_waited_ms: float | None = None
    preprocessed_ahead: bool = True  # False: preprocessing ran on the inference thread, before the invoke

    @property
    def queue_ms(self) -> float:
        return (self.started_at - self.captured_at) * 1e3

    @property
    def end_to_end_ms(self) -> float:
        return (self.finished_at - self.captured_at) * 1e3

    @property
    def cpu_per_wall(self) -> float:
        return self.inference_cpu_ms / self.inference_ms if self.inference_ms > 0 else 0.0


@dataclass(frozen=True)
class Stats:
    """Milliseconds over the window's inferences; all zero with count 0 when there are none."""

    mean: float
    p50: float
    p95: float
    max: float
    count: int

    @classmethod
    def of(cls, values: np.ndarray) -> Stats:
        if values.size == 0:
            return cls(0.0, 0.0, 0.0, 0.0, 0)
        p50, p95 = np.percentile(values, (50, 95), method=PERCENTILE_METHOD)
        return cls(float(values.mean()), float(p50), float(p95), float(values.max()), int(values.size))


@dataclass(frozen=True)
class StageBusy:
    """Busy share of wall time per stage over the window: ms per item x items per second / 1000.
    1.0 = the stage's thread never waited (app/metrics/bottleneck.py reads them)."""

    source: float  # the capture thread in the source's read (decoding; a live device's wait), pacing apart
    preprocess: float  # ahead on the capture thread, or inline on the inference thread
    inference: float  # the invokes
    results: float  # the results thread: postprocess, publish, callbacks (recording)
    inference_thread: float  # inference + the preprocessing done inline
    capture_thread: float  # source + the preprocessing done ahead on the capture thread
    preprocess_thread: float = 0.0  # the preprocessing done ahead on a thread of its own (0: none)
    paced: float = 0.0  # the capture thread waiting for a paced source's next frame to be due: not work

    @classmethod
    def idle(cls) -> StageBusy:
        return cls(*(0.0 for _ in fields(cls)))

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


STAGES = tuple(f.name for f in fields(StageBusy))


@dataclass(frozen=True)
class MetricsSnapshot:
    window_s: float  # the span the rates below really cover (<= the window)
    capture_fps: float
    inference_fps: float
    frames_total: int
    inferences_total: int
    dropped_total: int
    dropped_in_window: int
    latency: dict[str, Stats]  # keys: LATENCY_KEYS
    cpu_ms_per_inference: float  # mean inference_cpu_ms in the window
    cpu_per_wall: float  # mean inference_cpu_ms / mean inference_ms in the window ("offload ratio")
    process_cpu_pct_machine: float | None  # 0-100 of the whole machine
    process_cpu_pct_cores: float | None  # sum over cores, 0-100*ncores (what `top` shows)
    system_cpu_pct: float | None  # 0-100
    rss_mb: float | None  # MiB
    gpu_util_pct: float | None  # NVML, None when no NVIDIA GPU / nvidia-ml-py
    gpu_name: str | None = None  # "index: name" of the GPU gpu_util_pct is about
    gpu_process_listed: bool | None = None  # NVML lists this process on that GPU (it holds a context there)
    gpu_mem_mb: float | None = None  # MiB, NVML's figure for the process and its children; None where not read
    stage_busy: StageBusy | None = None  # in JSON: a dict keyed by STAGES
    # The GPU's own busy time per inference: NVML's utilisation (share of its last sample period,
    # 1/6 to 1 s, in which a kernel ran) x 1000 / inferences per second. None without NVML.
    gpu_busy_ms_per_inference: float | None = None
    # Where the inference thread's wall time went besides its own CPU (means per inference): waiting
    # for a core (runnable) and asleep (blocked: on a device, a lock, a child process). None where
    # schedstat is not readable. They tell a busy machine from offloaded work (app/backends/describe.py).
    waited_ms_per_inference: float | None = None
    slept_ms_per_inference: float | None = None
    # The inference thread's own CPU per inference (not its runtime's other threads): what its wait is
    # in proportion to on a busy machine (a gate's contention allowance, app/gates/verdict.py).
    thread_cpu_ms_per_inference: float | None = None
    # The power state at the newest sample (app/system/power_counters.py); None where not readable.
    gpu_sm_clock_mhz: float | None = None
    gpu_power_w: float | None = None
    cpu_mhz: float | None = None  # median over the cores
    # Inference outputs a live source's results thread skipped for a newer one (app/pipeline/handoff.py)
    results_dropped_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Ring:
    """float64 rows, oldest first, column 0 a timestamp: a circular buffer that grows to a hard cap."""

    def __init__(self, width: int, cap: int) -> None:
        self._width, self._cap = width, cap
        self.clear()

    def clear(self) -> None:
        self._buf = np.empty((min(256, self._cap), self._width))
        self._head = 0  # index of the oldest row
        self._len = 0
        self.evicted_at = -math.inf  # newest timestamp the cap (not age) pushed out

    def append(self, row: Sequence[float]) -> None:
        if self._len == len(self._buf):
            if self._len < self._cap:
                self._grow()
            else:
                self.evicted_at = max(self.evicted_at, float(self._buf[self._head, 0]))
                self._pop_oldest()
        self._buf[(self._head + self._len) % len(self._buf)] = row
        self._len += 1

    def trim(self, horizon: float) -> None:
        """Drop leading rows at or before `horizon` (amortised O(1): each row leaves once)."""
        while self._len and self._buf[self._head, 0] <= horizon:
            self._pop_oldest()

    def rows(self) -> np.ndarray:
        """A copy, oldest first."""
        end = self._head + self._len
        if end <= len(self._buf):
            return self._buf[self._head : end].copy()
        return np.concatenate((self._buf[self._head :], self._buf[: end - len(self._buf)]))

    def _pop_oldest(self) -> None:
        self._head = (self._head + 1) % len(self._buf)
        self._len -= 1

    def _grow(self) -> None:
        rows = self.rows()
        self._buf = np.empty((min(2 * len(self._buf), self._cap), self._width))
        self._buf[: len(rows)] = rows
        self._head = 0


def _in_window(rows: np.ndarray, lo: float, now: float) -> np.ndarray:
    # Filter by time rather than trusting order: threads may append slightly out of order.
    return rows[(rows[:, 0] > lo) & (rows[:, 0] <= now)]


class Metrics:
    """Thread-safe rolling counters and latency windows; see the module docstring for definitions.

    Inserts are O(1) amortised; snapshot() is O(rows in the window) (numpy, outside the lock).
    The sampler, if given, is only read: its owner starts and stops it.
    """

    def __init__(
        self,
        window_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sampler: ResourceSampler | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
    ) -> None:
        if window_s <= 0 or max_rows < 1:
            raise ValueError("window_s must be > 0 and max_rows >= 1")
        self.window_s = window_s
        self._clock = clock
        self._sampler = sampler
        self._lock = threading.Lock()
        # (captured_at, source read ms, preprocess-ahead ms, 1 if that was on the preprocessing thread)
        self._frames = Ring(5, max_rows)
        self._drops = Ring(2, max_rows)  # (t, n)
        # (finished_at, queue, preprocess, inference, postprocess, end_to_end, inference_cpu) in ms
        # ... + inference thread busy ms, its own CPU ms and its wait for a core (NaN: not readable)
        self._timings = Ring(5 + len(LATENCY_KEYS), max_rows)
        self._published = Ring(2, max_rows)  # (t, results thread busy ms per result)
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._start = self._clock()
            self._frames_total = self._inferences_total = self._dropped_total = self._results_dropped = 0
            for ring in self._rings():
                ring.clear()

    def frame_captured(
        self,
        t: float | None = None,
        read_ms: float = 0.0,
        prepare_ms: float = 0.0,
        own_thread: bool = False,
        paced_ms: float = 0.0,
    ) -> None:
        """`read_ms`: the capture thread's work in the source's read (decoding; a live device's wait for its
        frame); `paced_ms`: the read's wait for a paced source's frame to be due, apart (waiting is not work);
        `prepare_ms`: the preprocessing ahead of the inference thread, on the capture thread or (`own_thread`)
        on the preprocessing thread (app/pipeline/preprocess_thread.py)."""
        with self._lock:
            now = self._clock()
            self._frames_total += 1
            self._frames.append((now if t is None else t, read_ms, prepare_ms, float(own_thread), paced_ms))
            self._frames.trim(now - self.window_s)

    def frames_dropped(self, n: int = 1, t: float | None = None) -> None:
        with self._lock:
            now = self._clock()
            self._dropped_total += n
            self._drops.append((now if t is None else t, n))
            self._drops.trim(now - self.window_s)

    def results_dropped(self, n: int) -> None:
        """Outputs the results thread skipped for a newer one: inferred, never published."""
        with self._lock:
            self._results_dropped += n

    def inference_done(self, timing: InferenceTiming) -> None:
        row = (
            timing.finished_at,
            timing.queue_ms,
            timing.preprocess_ms,
            timing.inference_ms,
            timing.postprocess_ms,
            timing.end_to_end_ms,
            timing.inference_cpu_ms,
            timing.inference_ms + (0.0 if timing.preprocessed_ahead else timing.preprocess_ms),
            math.nan if timing.inference_thread_cpu_ms is None else timing.inference_thread_cpu_ms,
            math.nan if timing.inference_waited_ms is None else timing.inference_waited_ms,
        )
        with self._lock:
            self._inferences_total += 1
            self._timings.append(row)
            self._timings.trim(self._clock() - self.window_s)

    def result_published(self, busy_ms: float, t: float | None = None) -> None:
        """The results thread's time for one result: postprocess, publish and callbacks (recording)."""
        with self._lock:
            now = self._clock()
            self._published.append((now if t is None else t, busy_ms))
            self._published.trim(now - self.window_s)

    @property
    def inferences_total(self) -> int:
        """Inferences since the last reset: O(1), for polling loops (snapshot() is O(rows))."""
        with self._lock:
            return self._inferences_total

    @property
    def started_at(self) -> float:
        """When the window opened: construction or the last reset(), on the metrics' clock."""
        with self._lock:
            return self._start

    def snapshot(self, now: float | None = None, since: float | None = None) -> MetricsSnapshot:
        """`now`: close the window at that moment of the clock (a measured span that ended then) rather
        than at the call; `since`: open it no earlier than that moment (one round of a measured span,
        app/metrics/rounds.py). The totals stay those since the last reset."""
        with self._lock:
            now = self._clock() if now is None else now
            for ring in self._rings():
                ring.trim(now - self.window_s)
            lo = max(self._start, now - self.window_s, *(ring.evicted_at for ring in self._rings()))
            if since is not None:
                lo = max(lo, since)
            frames, drops, timings, published = (ring.rows() for ring in self._rings())
            totals = (self._frames_total, self._inferences_total, self._dropped_total)
            results_dropped = self._results_dropped
        span = max(0.0, now - lo)
        frames, drops, timings, published = (_in_window(r, lo, now) for r in (frames, drops, timings, published))
        reading = self._sampler.latest() if self._sampler else ResourceReading()
        power = reading.power
        cpu_ms, cpu_per_wall = _cpu_cost(timings[:, 3], timings[:, 6])
        waited, slept, own_cpu = _waited_and_slept(timings[:, 3], timings[:, 8], timings[:, 9])
        return MetricsSnapshot(
            window_s=span,
            capture_fps=len(frames) / span if span > 0 else 0.0,
            inference_fps=len(timings) / span if span > 0 else 0.0,
            frames_total=totals[0],
            inferences_total=totals[1],
            dropped_total=totals[2],
            dropped_in_window=int(drops[:, 1].sum()),
            latency={key: Stats.of(timings[:, 1 + i]) for i, key in enumerate(LATENCY_KEYS)},
            cpu_ms_per_inference=cpu_ms,
            cpu_per_wall=cpu_per_wall,
            waited_ms_per_inference=waited,
            slept_ms_per_inference=slept,
            thread_cpu_ms_per_inference=own_cpu,
            process_cpu_pct_machine=reading.process_cpu_pct_machine,
            process_cpu_pct_cores=reading.process_cpu_pct_cores,
            system_cpu_pct=reading.system_cpu_pct,
            rss_mb=reading.rss_mb,
            gpu_util_pct=reading.gpu_util_pct,
            gpu_name=reading.gpu_name,
            gpu_process_listed=reading.gpu_process_listed,
            gpu_mem_mb=reading.gpu_mem_mb,
            stage_busy=_stage_busy(frames, timings, published, span),
            gpu_sm_clock_mhz=power.gpu.sm_clock_mhz if power and power.gpu else None,
            gpu_power_w=power.gpu.power_w if power and power.gpu else None,
            results_dropped_total=results_dropped,
            cpu_mhz=statistics.median(power.cpu_mhz) if power and power.cpu_mhz else None,
            gpu_busy_ms_per_inference=_gpu_busy_ms(reading.gpu_util_pct, len(timings) / span if span > 0 else 0),
        )

    def _rings(self) -> tuple[Ring, Ring, Ring, Ring]:
        return self._frames, self._drops, self._timings, self._published


def _gpu_busy_ms(util_pct: float | None, rate: float) -> float | None:
    if util_pct is None or rate <= 0:
        return None
    return util_pct / 100.0 * 1000.0 / rate


def _stage_busy(frames: np.ndarray, timings: np.ndarray, published: np.ndarray, span: float) -> StageBusy:
    """Each stage's busy milliseconds in the window over the window's milliseconds."""
    if span <= 0:
        return StageBusy.idle()
    wall_ms = span * 1e3
    inline_pre = timings[:, 7] - timings[:, 3]  # preprocessing the inference thread did itself
    return StageBusy(
        source=float(frames[:, 1].sum()) / wall_ms,
        preprocess=float(frames[:, 2].sum() + inline_pre.sum()) / wall_ms,
        inference=float(timings[:, 3].sum()) / wall_ms,
        results=float(published[:, 1].sum()) / wall_ms,
        inference_thread=float(timings[:, 7].sum()) / wall_ms,
        capture_thread=float(frames[:, 1].sum() + (frames[:, 2] * (1.0 - frames[:, 3])).sum()) / wall_ms,
        preprocess_thread=float((frames[:, 2] * frames[:, 3]).sum()) / wall_ms,
        paced=float(frames[:, 4].sum()) / wall_ms,
    )


def _waited_and_slept(
    inference_ms: np.ndarray, own_cpu_ms: np.ndarray, waited_ms: np.ndarray
) -> tuple[float | None, float | None, float | None]:
    """Means per inference of the inference thread's wait for a core, of its sleep (the rest of the
    wall time after its own CPU and that wait) and of its own CPU; None when any inference lacks the reading."""
    if inference_ms.size == 0 or np.isnan(waited_ms).any() or np.isnan(own_cpu_ms).any():
        return None, None, None
    slept = np.maximum(0.0, inference_ms - own_cpu_ms - waited_ms)
    return float(waited_ms.mean()), float(slept.mean()), float(own_cpu_ms.mean())


def _cpu_cost(inference_ms: np.ndarray, cpu_ms: np.ndarray) -> tuple[float, float]:
    """(mean CPU ms per inference, that over the mean inference ms); zeros for no inferences."""
    if inference_ms.size == 0:
        return 0.0, 0.0
    wall, cpu = float(inference_ms.mean()), float(cpu_ms.mean())
    return cpu, cpu / wall if wall > 0 else 0.0
