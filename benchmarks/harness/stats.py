"""Medians, percentiles and ratios as the benchmarks quote them."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

median = statistics.median


def p95(values: Iterable[float]) -> float:
    """The 95th percentile as the scripts quote it: the sorted value at index 0.95 (n - 1)."""
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


def median_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """The median over rounds of a[i] / b[i] (each ratio within its own round)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def spread(values: Iterable[float]) -> str:
    """'median (min-max)' to 3 decimals."""
    v = sorted(values)
    return f"{statistics.median(v):.3f} ({v[0]:.3f}-{v[-1]:.3f})"
