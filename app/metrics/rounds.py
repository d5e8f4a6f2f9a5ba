"""A measured span cut into rounds: each figure as the median of its per-round values, with their spread.

One window's p50 moves with whatever else the machine did meanwhile; a gate (app/gates, docs/gates.md)
compares a run with its baseline by the medians over rounds and judges a difference against the rounds'
spread. The span is cut into `count` consecutive slices of equal time (a paced source gives each the
same number of inferences; an unpaced one gives the rate its own time base); a slice in which no
inference finished is left out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from app.metrics.window import Metrics, MetricsSnapshot

DEFAULT_ROUNDS = 5
ROUND_STATS = ("mean", "p50", "p95", "max")


def snapshot_figures(snap: MetricsSnapshot) -> dict[str, float]:
    """The figures a round gives, by their gate names (`inference.p50`, `rate`, ...; app/gates/figures.py)."""
    figures = {
        f"{stage}.{stat}": float(getattr(st, stat)) for stage, st in snap.latency.items() for stat in ROUND_STATS
    }
    figures["rate"] = snap.inference_fps
    figures["capture_rate"] = snap.capture_fps
    figures["cpu_per_inference"] = snap.cpu_ms_per_inference
    figures["cpu_per_wall"] = snap.cpu_per_wall
    # The run-queue wait a gate allows for, and the thread's own CPU it is in proportion to (app/gates/verdict.py).
    if snap.waited_ms_per_inference is not None and snap.thread_cpu_ms_per_inference is not None:
        figures["waited_per_inference"] = snap.waited_ms_per_inference
        figures["thread_cpu_per_inference"] = snap.thread_cpu_ms_per_inference
    return figures


@dataclass(frozen=True)
class Spread:
    """One figure over the rounds: their median, lowest and highest value, and each round's."""

    median: float
    low: float
    high: float
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(float(statistics.median(values)), min(values), max(values), tuple(values))

    def to_dict(self) -> dict[str, object]:
        return {"median": self.median, "min": self.low, "max": self.high, "values": list(self.values)}


@dataclass(frozen=True)
class Rounds:
    """The measured span as `count` rounds of `round_s` seconds each (`inferences` per round)."""

    count: int
    round_s: float
    inferences: tuple[int, ...]
    figures: dict[str, Spread]

    def to_dict(self) -> dict[str, object]:
        return {
            "count": self.count,
            "round_s": self.round_s,
            "inferences": list(self.inferences),
            "figures": {name: spread.to_dict() for name, spread in self.figures.items()},
        }


def measure_rounds(metrics: Metrics, start: float, end: float, count: int) -> Rounds | None:
    """The span (start, end] of `metrics`' clock cut into `count` rounds; None when no round has an inference."""
    if count < 1 or end <= start:
        return None
    step = (end - start) / count
    snaps = [metrics.snapshot(now=start + (i + 1) * step, since=start + i * step) for i in range(count)]
    snaps = [s for s in snaps if s.latency["inference"].count]
    if not snaps:
        return None
    per_round = [snapshot_figures(s) for s in snaps]
    # A figure some round could not read (the run-queue wait, where schedstat is missing) is left out whole.
    names = [name for name in per_round[0] if all(name in r for r in per_round)]
    figures = {name: Spread.of([r[name] for r in per_round]) for name in names}
    return Rounds(len(snaps), step, tuple(s.latency["inference"].count for s in snaps), figures)
