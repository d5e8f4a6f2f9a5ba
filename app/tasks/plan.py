"""RunPlan: every setting of a bench run, one side or A/B, as one frozen object.

Built once, by one function, from where the run is asked for (`app/cli/commands/bench.py` `plan_of`,
a sweep per configuration); `run_bench` and `run_compare_bench` take it whole and hand each part to
whom it belongs: the feed part to the pipeline (capture and workers), each side's `InferenceConfig` to
its worker, the measuring part to the span. A setting an A/B run cannot honour is refused where the plan
is built, by name, never dropped on the way. The summaries record the plan as it ran (`to_dict`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.metrics.rounds import DEFAULT_ROUNDS
from app.metrics.window import MetricsSnapshot
from app.pipeline import InferenceConfig
from app.pipeline.plan import FeedPlan
from app.system.power_counters import PowerReading

DEFAULT_FRAMES = 300
DEFAULT_ALONE_S = 5.0


@dataclass(frozen=True)
class RunPlan:
    config: InferenceConfig  # side A: what runs (the only side of a single run)
    feed: FeedPlan = field(default_factory=FeedPlan)  # the source, its pace, decoding, pinning, preprocessing
    compare: InferenceConfig | None = None  # side B: A/B on the same frames
    alone_s: float = DEFAULT_ALONE_S  # A/B: each side first runs alone this long (0: not)
    frames: int | None = DEFAULT_FRAMES  # inferences to measure after warm-up (None: use seconds)
    seconds: float | None = None
    warmup: int = 10  # inferences left out of the figures
    # The warm-up lasts at least this many seconds too, at the run's pace: unpaced, the device is held
    # busy (and its clocks up) before measuring; 0: `warmup` inferences only.
    warm_s: float = 0.0
    rounds: int = DEFAULT_ROUNDS  # the measured span cut into this many rounds (app/metrics/rounds.py)
    # Seconds the machine idles before the pipeline starts, read by the power counters: what "above
    # idle" takes off. None: IDLE_S where an energy counter is readable (NVML, RAPL), else none.
    idle_s: float | None = None
    # Readings of the idle machine taken before this run (a sweep measures idle once, before its first
    # configuration); None: measured here, as `idle_s` says.
    idle_readings: tuple[PowerReading, ...] | None = field(default=None, compare=False)
    csv: Path | None = None  # record one row per inference (A/B: the comparison, and each side beside it)
    gpu_process: str = "auto"  # as asked (auto, on, off); what it decided: config.options.own_process
    trace: Path | None = None  # write the run's timeline here (Chrome's trace event JSON: app/recording/trace.py)
    # After the run, this many interleaved rounds of it against LiteRT's benchmark_litert_model on the same
    # model, threads and accelerator (app/tasks/versus_litert.py); None: no comparison.
    versus_litert: int | None = None

    @property
    def compares(self) -> bool:
        return self.compare is not None

    @property
    def loops(self) -> bool:
        """A file starts again at its end when the run is bounded by frames or seconds."""
        return self.frames is not None or self.seconds is not None

    def to_dict(self) -> dict[str, object]:
        """The plan as it ran, for a summary's JSON and a recording's settings."""
        return {
            **self.feed.to_dict(),
            "frames": self.frames,
            "seconds": self.seconds,
            "warmup": self.warmup,
            "warm_s": self.warm_s,
            "rounds": self.rounds,
            "idle_s": self.idle_s,
            "csv": str(self.csv) if self.csv else None,
            "gpu_process": self.gpu_process,
            **({"alone_s": self.alone_s} if self.compares else {}),
            **({"trace": str(self.trace)} if self.trace else {}),  # said when asked for: the JSON stays as it was
            **({"versus_litert": self.versus_litert} if self.versus_litert else {}),
        }


@dataclass(frozen=True)
class RunState:
    """How a caller follows and stops a long run (Orange3's `state`): `progress(done, total, latest)` is
    called at least once per measured run, as it ends too; once `cancel` is set the run ends at its next
    poll and its summary says it was cancelled."""

    progress: Callable[[int, int | None, MetricsSnapshot], None] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()
