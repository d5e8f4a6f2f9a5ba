"""The error of a delegate's tensor against the reference's: the figures LiteRT's accuracy debugger
reports (max and mean absolute difference, cosine similarity, signal-to-noise ratio in dB), and the
threshold that says a node breaks the output (cosine 0.99 and SNR 30 dB by default, as that tool's)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.model.decode import dequantize

DEFAULT_MIN_COSINE = 0.99
DEFAULT_MIN_SNR_DB = 30.0


@dataclass(frozen=True)
class ErrorStats:
    """One tensor's error over every input set. `nonfinite`: values that are inf or NaN on the delegate
    where the reference's are finite (an fp16 overflow); the other figures are over the values finite on
    both sides. `snr_db` is inf where the two agree exactly."""

    values: int
    max_abs: float
    mean_abs: float
    cosine: float
    snr_db: float
    nonfinite: int = 0

    def to_dict(self) -> dict[str, object]:
        # JSON has no inf: an exact agreement's SNR is written as null, with "exact" beside it.
        return {
            "values": self.values,
            "max_abs": _finite_or_none(self.max_abs),
            "mean_abs": _finite_or_none(self.mean_abs),
            "cosine": _finite_or_none(self.cosine),
            "snr_db": _finite_or_none(self.snr_db),
            "exact": self.max_abs == 0 and self.nonfinite == 0,
            "nonfinite": self.nonfinite,
        }

    @classmethod
    def from_dict(cls, d: dict) -> ErrorStats:
        """Back from to_dict() (a stored `numerics --json`); a null figure is NaN, an exact SNR inf."""

        def number(key: str) -> float:
            value = d.get(key)
            return math.nan if value is None else float(value)

        snr = math.inf if d.get("exact") and d.get("snr_db") is None else number("snr_db")
        return cls(int(d["values"]), number("max_abs"), number("mean_abs"), number("cosine"), snr,
                   int(d.get("nonfinite", 0)))  # fmt: skip

    def cells(self) -> tuple[str, str, str, str]:
        """max abs, mean abs, cosine, SNR as a table shows them."""
        if self.values == 0:  # no value finite on both sides
            return "-", "-", "-", "-"
        snr = "inf" if self.snr_db == math.inf else f"{self.snr_db:.1f}"
        return f"{self.max_abs:.3g}", f"{self.mean_abs:.3g}", f"{self.cosine:.6f}", snr


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def error_stats(delegate: Sequence[np.ndarray], reference: Sequence[np.ndarray]) -> ErrorStats:
    """The error of `delegate` against `reference`, pairwise arrays (one per input set and output) taken
    together as one vector each, in float64 (already dequantized: `dequantized`)."""
    if len(delegate) != len(reference):
        raise ValueError("the delegate and the reference gave different numbers of tensors")
    d = np.concatenate([np.asarray(a, np.float64).reshape(-1) for a in delegate]) if delegate else np.zeros(0)
    r = np.concatenate([np.asarray(a, np.float64).reshape(-1) for a in reference]) if reference else np.zeros(0)
    if d.shape != r.shape:
        raise ValueError(f"the delegate gave {d.size} values, the reference {r.size}")
    ref_finite = np.isfinite(r)
    both = ref_finite & np.isfinite(d)
    nonfinite = int(np.count_nonzero(ref_finite & ~both))
    d, r = d[both], r[both]
    if d.size == 0:
        return ErrorStats(0, math.nan, math.nan, math.nan, math.nan, nonfinite)
    diff = d - r
    noise = float(np.dot(diff, diff))
    signal = float(np.dot(r, r))
    norms = math.sqrt(float(np.dot(d, d)) * signal)
    if norms > 0:
        cosine = float(np.dot(d, r)) / norms
    else:  # a zero vector: alike only if both are zero
        cosine = 1.0 if noise == 0 else 0.0
    if noise == 0:
        snr = math.inf
    elif signal == 0:
        snr = -math.inf
    else:
        snr = 10 * math.log10(signal / noise)
    return ErrorStats(int(d.size), float(np.max(np.abs(diff))), float(np.mean(np.abs(diff))), cosine, snr, nonfinite)


def dequantized(array: np.ndarray, quantization: tuple[float, int] | None) -> np.ndarray:
    """An integer tensor as the real values it stands for; others as float64 (app/model/decode.py)."""
    return dequantize(array, *(quantization or (None, None)))


@dataclass(frozen=True)
class Threshold:
    """When a node breaks the output: its cosine below `min_cosine`, or its SNR below `min_snr_db`, or a
    value the reference has finite gone inf or NaN on the delegate."""

    min_cosine: float = DEFAULT_MIN_COSINE
    min_snr_db: float = DEFAULT_MIN_SNR_DB

    def breaks(self, stats: ErrorStats) -> bool:
        if stats.nonfinite:
            return True
        if stats.values == 0:
            return False
        return not (stats.cosine >= self.min_cosine and stats.snr_db >= self.min_snr_db)

    def why(self, stats: ErrorStats) -> str | None:
        """What crossed the threshold, in words; None when nothing did."""
        said = []
        if stats.nonfinite:
            said.append(f"{stats.nonfinite} value{'s' if stats.nonfinite != 1 else ''} inf or NaN")
        if stats.values and not stats.cosine >= self.min_cosine:
            said.append(f"cosine {stats.cosine:.6f} < {self.min_cosine:g}")
        if stats.values and not stats.snr_db >= self.min_snr_db:
            said.append(f"SNR {stats.snr_db:.1f} dB < {self.min_snr_db:g} dB")
        return "; ".join(said) or None

    def describe(self) -> str:
        return f"cosine < {self.min_cosine:g} or SNR < {self.min_snr_db:g} dB"

    def to_dict(self) -> dict[str, float]:
        return {"min_cosine": self.min_cosine, "min_snr_db": self.min_snr_db}
