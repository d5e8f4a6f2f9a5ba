"""What the window's own work costs and delivers: displayed fps, GUI-thread time per displayed
frame, plot refresh rate (benchmarks/suite/window.py and --stats read these). Cf. the small
FrameCounter of pyqtgraph's examples, plus the cost of each frame."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DisplayTiming:
    """When the GUI thread started on a display tick: wall and CPU clocks."""

    wall: float
    cpu: float


@dataclass(frozen=True)
class DisplayFigures:
    display_fps: float
    frames_displayed: int
    gui_work_ms_p50: float
    gui_work_ms_p95: float
    gui_work_ms_max: float
    gui_cpu_ms_p50: float | None
    gui_cpu_ms_p95: float | None
    plot_refresh_hz: float


class WindowProbes:
    def __init__(self) -> None:
        self._display_times: deque[float] = deque(maxlen=4096)  # when each new frame was shown
        self.gui_work_ms: deque[float] = deque(maxlen=20_000)  # GUI-thread wall time per displayed frame
        self.gui_cpu_ms: deque[float] = deque(maxlen=20_000)  # ... and its CPU time (excludes waiting for a core)
        self._plot_times: deque[float] = deque(maxlen=4096)
        self._first_count: tuple[float, int] | None = None  # (when, inferences) at the first result seen

    @staticmethod
    def start() -> DisplayTiming:
        return DisplayTiming(time.perf_counter(), time.thread_time())

    def frame_shown(self, started: DisplayTiming) -> None:
        """A new frame was painted; its cost is everything since `started`."""
        self._display_times.append(time.monotonic())
        self.gui_work_ms.append((time.perf_counter() - started.wall) * 1000)
        self.gui_cpu_ms.append((time.thread_time() - started.cpu) * 1000)

    def plots_refreshed(self, inferences_total: int) -> None:
        self._plot_times.append(time.monotonic())
        if self._first_count is None and inferences_total:
            self._first_count = (time.monotonic(), inferences_total)

    @property
    def frames_displayed(self) -> int:
        return len(self._display_times)

    def display_fps(self, window_s: float = 5.0) -> float:
        now = time.monotonic()
        times = [t for t in self._display_times if t > now - window_s]
        if len(times) < 2:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0]) if times[-1] > times[0] else 0.0

    def inference_fps_run(self, inferences_total: int) -> float | None:
        """Inferences per second since the first result: over the whole run, comparable with bench's figure."""
        if self._first_count is None:
            return None
        since, count = self._first_count
        span = time.monotonic() - since
        return (inferences_total - count) / span if span > 0 else None

    def figures(self) -> DisplayFigures:
        work = np.array(self.gui_work_ms) if self.gui_work_ms else np.zeros(1)
        plot_times = np.array(self._plot_times)
        plot_hz = (len(plot_times) - 1) / (plot_times[-1] - plot_times[0]) if len(plot_times) > 2 else 0.0
        cpu = self.gui_cpu_ms
        return DisplayFigures(
            display_fps=self.display_fps(),
            frames_displayed=self.frames_displayed,
            gui_work_ms_p50=float(np.percentile(work, 50)),
            gui_work_ms_p95=float(np.percentile(work, 95)),
            gui_work_ms_max=float(work.max()),
            gui_cpu_ms_p50=float(np.percentile(cpu, 50)) if cpu else None,
            gui_cpu_ms_p95=float(np.percentile(cpu, 95)) if cpu else None,
            plot_refresh_hz=plot_hz,
        )
