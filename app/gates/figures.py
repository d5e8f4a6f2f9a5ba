"""The figures a budget can name, and where each kind of summary keeps them: the one table of names.

A bench summary's figure is the median of its rounds (`rounds.figures`, app/metrics/rounds.py) with
their spread; a summary without rounds (written before they existed, or a sweep row) gives its
whole-span value, a spread of zero width. Names are listed in docs/gates.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.metrics.rounds import ROUND_STATS
from app.metrics.window import LATENCY_KEYS


class SummaryKind(StrEnum):
    """What wrote a JSON summary."""

    BENCH = "bench"  # bench --json, one run
    BENCH_AB = "bench A/B"  # bench --compare-with/--compare-model --json
    SWEEP = "sweep"
    INSPECT = "inspect"  # inspect --json


@dataclass(frozen=True)
class Figure:
    """A figure's gate name, its unit (the units a budget may spell it in) and where each kind keeps it:
    a dotted path in the summary (bench, A/B, inspect with `{d}` for each delegate) or a sweep row's key."""

    name: str
    unit: str  # "ms", "/s", "x", "share" (0-1), "nodes", "partitions"
    bench: str | None = None
    sweep: str | None = None
    ab: str | None = None
    inspect: str | None = None
    lower_is_better: bool = True

    def path(self, kind: SummaryKind) -> str | None:
        return {
            SummaryKind.BENCH: self.bench,
            SummaryKind.SWEEP: self.sweep,
            SummaryKind.BENCH_AB: self.ab,
            SummaryKind.INSPECT: self.inspect,
        }[kind]


_SWEEP_LATENCY = {
    "inference.p50": "latency_p50_ms",
    "inference.p95": "latency_p95_ms",
    "end_to_end.p50": "end_to_end_p50_ms",
}


def _table() -> dict[str, Figure]:
    figures = [
        Figure(
            f"{stage}.{stat}",
            "ms",
            bench=f"metrics.latency.{stage}.{stat}",
            sweep=_SWEEP_LATENCY.get(f"{stage}.{stat}"),
        )
        for stage in LATENCY_KEYS
        for stat in ROUND_STATS
    ]
    figures += [
        Figure("rate", "/s", bench="metrics.inference_fps", sweep="inference_fps", lower_is_better=False),
        Figure("capture_rate", "/s", bench="metrics.capture_fps", lower_is_better=False),
        Figure("cpu_per_inference", "ms", bench="metrics.cpu_ms_per_inference", sweep="cpu_ms_per_inference"),
        # The inference thread's run-queue wait and its own CPU: the machine's contention, which a relative
        # budget allows for (app/gates/verdict.py).
        Figure("waited_per_inference", "ms", bench="metrics.waited_ms_per_inference"),
        Figure("thread_cpu_per_inference", "ms", bench="metrics.thread_cpu_ms_per_inference"),
        Figure("cpu_per_wall", "x", bench="metrics.cpu_per_wall", sweep="cpu_per_wall"),
        Figure("init", "ms", bench="delegate.init_ms", sweep="init_ms"),
        Figure("first_inference", "ms", bench="delegate.first_inference_ms", sweep="first_inference_ms"),
        # Memory (app/metrics/memory.py): the model's open, the span's peak and median resident set, GPU memory.
        Figure("memory.init_mb", "MB", bench="memory.init_mb"),
        Figure("memory.peak_mb", "MB", bench="memory.peak_mb"),
        Figure("memory.steady_mb", "MB", bench="memory.steady_mb"),
        Figure("memory.gpu_mb", "MB", bench="memory.gpu_mb"),
        Figure("agreement.top1", "share", sweep="top1_agreement", ab="agreement.top1_agreement", lower_is_better=False),
        Figure("agreement.top5", "share", ab="agreement.top5_overlap", lower_is_better=False),
        Figure("nodes", "nodes", inspect="coverage.{d}.nodes_delegated", lower_is_better=False),
        Figure("partitions", "partitions", inspect="coverage.{d}.partitions"),
        Figure("fallback_nodes", "nodes", inspect="coverage.{d}.fallback_nodes"),  # nodes_total - nodes_delegated
    ]
    return {f.name: f for f in figures}


FIGURES = _table()
# Shown in the table of a bench or sweep gate whether or not a budget names them.
SHOWN = (
    "inference.p50",
    "inference.p95",
    "end_to_end.p50",
    "rate",
    "cpu_per_inference",
    "thread_cpu_per_inference",
    "waited_per_inference",
)
INSPECT_SHOWN = ("nodes", "partitions", "fallback_nodes")


def figures_of(kind: SummaryKind) -> list[str]:
    """The names a summary of this kind has (in the table's order); an A/B summary has each side's
    figures (a bench run's, under `a.`/`b.`: app/gates/stored.py) and the pair's agreement."""
    if kind == SummaryKind.BENCH_AB:
        return [name for name, f in FIGURES.items() if f.ab is not None or f.bench is not None]
    return [name for name, f in FIGURES.items() if f.path(kind) is not None]


def side_path(figure: Figure, side: str) -> str | None:
    """Where an A/B summary keeps one side's figure: bench's path under `a.`/`b.`, the metrics of the
    span both sides ran together (`a.together.latency.inference.p50`)."""
    if figure.bench is None:
        return None
    head, _, rest = figure.bench.partition(".")
    return f"{side}.{'together' if head == 'metrics' else head}.{rest}"
