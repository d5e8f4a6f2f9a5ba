"""`delegate-scope compare BENCH.json SWEEP.json` (either order): a bench run, or each side of an A/B
bench, beside the sweep configuration that ran the same accelerator on the same model. Nothing runs.

Why: a paced bench and an unpaced sweep can disagree on which delegate is faster (on an H200 a paced
A/B said the GPU was 1.12× slower than 16 CPU threads while the sweep said 1.9× faster), and both are
true at their pace: at 30 fps the GPU stayed at its idle clock. This sets each speed beside the other
with the pace it was measured at and each run's GPU clock, so the user sees why they differ.

A bench and a sweep row are the same configuration when the accelerator each opened is the same (the
backend's own words, "XNNPACK (CPU, 16 threads)", "LiteRT GPU (WebGPU, fp32)": what ran, options
resolved) and, where both files know it, so is the model's sha256.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.backends.describe import ratio_words
from app.errors import UsageError
from app.gates.figures import SummaryKind
from app.gates.stored import StoredFile, at, number, opened_sha
from app.metrics.energy import PowerFigures, clock_state_sentence, stored_clocks

BENCH_KINDS = (SummaryKind.BENCH, SummaryKind.BENCH_AB)


@dataclass(frozen=True)
class StoredSpeed:
    """One configuration's speed as a file stored it, and what it was measured under."""

    accelerator: str | None  # the backend's words for what ran
    delegate: str | None  # the delegate used
    model_sha256: str | None
    model_ref: str | None  # the bundled name or path it was given
    inference_p50_ms: float | None
    inference_fps: float | None
    pace: str  # the bench's source as it described itself ("..., unpaced"); a sweep's: unpaced
    clocks: PowerFigures

    def to_dict(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "delegate": self.delegate,
            "inference_p50_ms": self.inference_p50_ms,
            "inference_fps": self.inference_fps,
            "pace": self.pace,
            "sm_clock_mhz": self.clocks.sm_clock_mhz,
            "idle_sm_clock_mhz": self.clocks.idle_sm_clock_mhz,
        }


@dataclass(frozen=True)
class PacePair:
    """A bench run (or one side of an A/B bench) and the sweep row of the same configuration."""

    side: str  # "bench", "A" or "B"
    bench: StoredSpeed
    row_label: str | None  # the sweep row's label; None: no row matched
    sweep: StoredSpeed | None
    unmatched: str | None  # why no sweep row stands beside it
    clock_sentence: str | None  # the two ran at different GPU clocks: said with the figures

    @property
    def bench_over_sweep(self) -> float | None:
        """The bench's median inference time over the sweep's (above 1: slower in the bench)."""
        a, b = self.bench.inference_p50_ms, self.sweep.inference_p50_ms if self.sweep else None
        return a / b if a and b else None

    def lines(self) -> list[str]:
        out = [f"{self.side}: {self.bench.accelerator or 'accelerator not recorded'}"]
        out.append(f"  bench: {_speed(self.bench)} ({self.bench.pace})")
        if self.sweep is None:
            return [*out, f"  sweep: {self.unmatched}"]
        out.append(f"  sweep: {_speed(self.sweep)} (unpaced; row '{self.row_label}')")
        if (ratio := self.bench_over_sweep) is not None:
            out.append(f"  the bench's median inference time is {ratio:.2f}× the sweep's")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "bench": self.bench.to_dict(),
            "sweep_row": self.row_label,
            "sweep": self.sweep.to_dict() if self.sweep else None,
            "unmatched": self.unmatched,
            "bench_over_sweep": self.bench_over_sweep,
            "clock_sentence": self.clock_sentence,
        }


@dataclass(frozen=True)
class BenchAgainstSweep:
    bench: str  # the paths as given
    sweep: str
    pairs: tuple[PacePair, ...]
    ab_sentence: str | None  # an A/B bench: B against A in the bench and in the sweep

    def lines(self) -> list[tuple[str, str]]:
        """(tag, text) lines for the terminal: one per pair, the A/B sentence, the clock sentences."""
        out = [("pace", f"{self.bench} (bench) beside {self.sweep} (sweep), by the accelerator each ran")]
        out += [("pace", line) for pair in self.pairs for line in pair.lines()]
        if self.ab_sentence:
            out.append(("speed", self.ab_sentence))
        out += [("clocks", pair.clock_sentence) for pair in self.pairs if pair.clock_sentence]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "bench": self.bench,
            "sweep": self.sweep,
            "pairs": [pair.to_dict() for pair in self.pairs],
            "ab_sentence": self.ab_sentence,
        }


def _speed(s: StoredSpeed) -> str:
    p50 = f"{s.inference_p50_ms:.2f} ms" if s.inference_p50_ms is not None else "not measured"
    fps = f", {s.inference_fps:.1f} inferences/s" if s.inference_fps is not None else ""
    known = s.delegate == "gpu" and s.clocks.sm_clock_mhz is not None  # a CPU run's speed is not the GPU clock's
    clock = f", GPU SM clock {s.clocks.sm_clock_mhz:.0f} MHz" if known else ""
    return f"median inference {p50}{fps}{clock}"


def bench_against_sweep(a: StoredFile, b: StoredFile, budgets: list[str] | None = None) -> BenchAgainstSweep | None:
    """The bench run(s) of one file beside the matching rows of the other's sweep (either order); None when
    the two are not a bench (or A/B bench) and a sweep. One that is not a summary is the UsageError
    `StoredFile.summary` raises, as for any `compare`."""
    kinds = [(f, f.summary.kind) for f in (a, b)]
    benches = [(f, kind) for f, kind in kinds if kind in BENCH_KINDS]
    sweeps = [f for f, kind in kinds if kind == SummaryKind.SWEEP]
    if len(benches) != 1 or len(sweeps) != 1:
        return None
    if budgets:
        raise UsageError("--budget judges two summaries of one kind; a bench beside a sweep is shown, not judged")
    (bench_file, bench_kind), sweep_file = benches[0], sweeps[0]
    bench, listed = bench_file.data, at(sweep_file.data, "rows")
    rows = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
    pace = _pace(bench)
    clocks = stored_clocks(at(bench, "power"))  # one power section for a run (both A/B sides ran together)
    if bench_kind == SummaryKind.BENCH_AB:
        sides = [(side, _bench_side(at(bench, side.lower()), pace, clocks)) for side in ("A", "B")]
    else:
        sides = [("bench", _bench_run(bench, pace, clocks))]
    pairs = tuple(_pair(side, speed, rows, sweep_file.path.name, bench_file.path.name) for side, speed in sides)
    return BenchAgainstSweep(str(bench_file.path), str(sweep_file.path), pairs, _ab_sentence(pairs))


def _pace(bench: object) -> str:
    """A bench's source as it described itself ("..., unpaced"); an A/B's spec and whether it was paced
    (files written before A/B recorded that: the spec alone)."""
    if description := _text(at(bench, "source.description")):
        return description
    spec, paced = _text(at(bench, "source.spec")), at(bench, "source.paced")
    said = f"source {spec}" if spec else "source not recorded"
    if isinstance(paced, bool):  # a JSON boolean, not 1 or "yes"
        said += ", paced" if paced else ", unpaced"
    return said


def _bench_run(data: object, pace: str, clocks: PowerFigures) -> StoredSpeed:
    return StoredSpeed(
        _text(at(data, "delegate.accelerator")),
        _text(at(data, "delegate.used")),
        _text(opened_sha(data)),
        _text(at(data, "config.model")),
        number(at(data, "metrics.latency.inference.p50")),
        number(at(data, "metrics.inference_fps")),
        pace,
        clocks,
    )


def _bench_side(facts: object, pace: str, clocks: PowerFigures) -> StoredSpeed:
    return StoredSpeed(
        _text(at(facts, "delegate.accelerator")),
        _text(at(facts, "delegate.used")),
        _text(at(facts, "model_sha256")),
        _text(at(facts, "config.model")),
        number(at(facts, "inference_ms_median")),
        number(at(facts, "together.inference_fps")),
        pace,
        clocks,
    )


def _row_speed(row: dict[str, Any]) -> StoredSpeed:
    return StoredSpeed(
        _text(row.get("accelerator")),
        _text(row.get("delegate")),
        _text(row.get("model_sha256")),
        _text(row.get("model_ref")),
        number(row.get("latency_p50_ms")),
        number(row.get("inference_fps")),
        "unpaced",
        stored_clocks(row.get("power")),
    )


def _pair(side: str, speed: StoredSpeed, rows: list[dict[str, Any]], sweep_name: str, bench_name: str) -> PacePair:
    if speed.accelerator is None:
        return PacePair(side, speed, None, None, "the bench did not record its accelerator: no row to match", None)
    ran = [(r, _row_speed(r)) for r in rows if r.get("outcome") == "measured"]
    same = [(r, s) for r, s in ran if s.accelerator == speed.accelerator and _same_model(speed, s)]
    if not same:
        return PacePair(side, speed, None, None, f"no measured row ran {speed.accelerator} on the same model", None)
    row, sweep = same[0]  # one row per accelerator and model in a sweep
    sentence = None
    if speed.delegate == "gpu":  # the GPU's clock is what a pace changes; a CPU side's speed is not its
        sentence = clock_state_sentence(
            f"{side} in the bench ({bench_name})", speed.clocks, f"in the sweep ({sweep_name})", sweep.clocks
        )
    return PacePair(side, speed, _text(row.get("label")), sweep, None, sentence)


def _same_model(a: StoredSpeed, b: StoredSpeed) -> bool:
    """By sha256 where both files recorded it, else by the name or path the model was given."""
    if a.model_sha256 and b.model_sha256:
        return a.model_sha256 == b.model_sha256
    return a.model_ref is not None and a.model_ref == b.model_ref


def _ab_sentence(pairs: tuple[PacePair, ...]) -> str | None:
    """B against A by median inference time, in the bench and in the sweep, when both have both."""
    if len(pairs) != 2:
        return None
    a, b = pairs
    if a.sweep is None or b.sweep is None:
        return None
    bench_a, bench_b = a.bench.inference_p50_ms, b.bench.inference_p50_ms
    sweep_a, sweep_b = a.sweep.inference_p50_ms, b.sweep.inference_p50_ms
    if not (bench_a and bench_b and sweep_a and sweep_b):
        return None
    return (
        f"B against A: in the bench ({a.bench.pace}) {ratio_words(bench_a, bench_b)}; in the sweep (unpaced) "
        f"{ratio_words(sweep_a, sweep_b)} (median inference times)"
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
