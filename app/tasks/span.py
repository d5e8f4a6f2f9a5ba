"""A measured span's rules and its two ends, one home for a single run and each side of an A/B run.

The warm-up rule says when a span opens; each end is read the same way in both runs: the monotonic time,
the process's CPU mark, the power counters (their difference is the span's energy) and, at the close, the
resident set of the process and its children (a GPU process): its VmHWM is the span's peak, because the
open reset this process's; a child's counts from its start, and the sum of their peaks bounds the tree's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.metrics.memory import MemoryReading, peak_reset, read_tree
from app.metrics.resources import CpuMark, cpu_mark
from app.system.power_counters import PowerReading
from app.tasks.plan import RunPlan


def warmed_up(plan: RunPlan, inferences: int, since_first_s: float) -> bool:
    """Whether the warm-up is over: `warmup` inferences in and `warm_s` seconds since the first result."""
    return inferences >= plan.warmup and since_first_s >= plan.warm_s


def warm_up_done(plan: RunPlan) -> str:
    """The `measure` event's message in a recording: the warm-up that ended."""
    warm = f" over {plan.warm_s:g} s or more" if plan.warm_s > 0 else ""
    return f"warm-up of {plan.warmup} inferences{warm} done"


@dataclass(frozen=True)
class SpanEnd:
    """What one end of a measured span read."""

    t: float  # monotonic
    cpu: tuple[CpuMark, float]  # the process's CPU times, and the wall time they were read at
    power: PowerReading | None  # None: no power counter here
    memory: MemoryReading | None = None  # read at the close only


def open_span(read_power: Callable[[], PowerReading | None]) -> SpanEnd:
    """Open a span: the kernel's peak resident set counts from here, so the close reads the span's own."""
    peak_reset()
    return SpanEnd(time.monotonic(), (cpu_mark(), time.time()), read_power())


def close_span(read_power: Callable[[], PowerReading | None], at: float | None = None) -> SpanEnd:
    """Close a span `at` a monotonic time already taken (the moment its figures were cut), else now."""
    return SpanEnd(time.monotonic() if at is None else at, (cpu_mark(), time.time()), read_power(), read_tree())
