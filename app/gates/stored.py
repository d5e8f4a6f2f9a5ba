"""Summaries written by `--json` read back: their kind, what they ran (identity and settings) and their
figures per group (one bench run; a sweep's rows; inspect's delegates), typed.

Any file that is not such a summary is one UsageError line (exit 2): unreadable, not JSON, not an
object, a newer schema_version, or an object no command of this version writes. Values of the wrong
type read as missing figures, never as a crash.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from app.errors import UsageError
from app.gates.figures import FIGURES, SummaryKind, figures_of, side_path
from app.schemas import SCHEMA_VERSION  # the newest this version reads; files without one read as 1


@dataclass(frozen=True)
class Measure:
    """A figure: its value (the median of its rounds, when it has rounds) and its noise band, the
    interquartile range of its rounds (inclusive quartiles, as statistics.quantiles computes them)."""

    value: float
    low: float  # the rounds' first quartile
    high: float  # ... and third
    rounds: int = 0  # 0: one whole-span value (a zero-width band)

    @classmethod
    def single(cls, value: float) -> Measure:
        return cls(value, value, value, 0)

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "min": self.low, "max": self.high, "rounds": self.rounds}


@dataclass(frozen=True)
class Group:
    """What one part of a summary measured: one bench run, one sweep row, one delegate of inspect."""

    label: str  # "" for a bench run; a sweep row's label; an inspect delegate's name
    key: tuple[str, ...]  # how groups of two summaries are matched
    measured: bool
    reason: str | None
    figures: Mapping[str, Measure | None]
    model_sha256: str | None = None  # sweep rows: matched by it when both summaries have it
    model_ref: str | None = None


@dataclass(frozen=True)
class StoredSummary:
    path: str  # as the user gave it
    kind: SummaryKind
    identity: Mapping[str, str]  # what must match for --baseline (docs/gates.md)
    settings: Mapping[str, str]  # what may differ (shown as a difference)
    groups: tuple[Group, ...]
    rounds: int = 0  # a bench run's rounds (0: none recorded)
    extra: Mapping[str, str] = field(default_factory=dict)


def read_summary(path: Path | str, role: str = "") -> StoredSummary:
    """The summary in `path`; `role` ("--baseline", ...) prefixes the one-line error."""
    name = f"{role} {path}".strip()  # for messages
    return summary_of(read_json(path, role), name, str(path))


@dataclass(frozen=True)
class StoredFile:
    """A JSON file read and parsed once (its content untrusted), for the several readings `compare` makes of
    one file: which kind of summary, its figures, its clocks."""

    path: Path
    data: object

    @classmethod
    def read(cls, path: Path | str) -> StoredFile:
        return cls(Path(path), read_json(path))

    @cached_property
    def summary(self) -> StoredSummary:
        """Its summary, made once (compare asks for it in its bench-beside-sweep check and its gate)."""
        return summary_of(self.data, str(self.path))


def read_json(path: Path | str, role: str = "") -> object:
    """The JSON value in `path`, or one UsageError line saying why there is none."""
    name = f"{role} {path}".strip()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" (line {exc.lineno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UsageError(f"{name}: not JSON{where}") from None
    return data


def summary_of(data: object, name: str, path: str | None = None) -> StoredSummary:
    """A summary already parsed from JSON (a run's own `to_dict()`, or a file's content); `name` says
    it in messages, `path` in the gate's table (default: `name`)."""
    if not isinstance(data, dict):
        raise UsageError(f"{name}: not a summary written by bench, sweep or inspect --json (not a JSON object)")
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise UsageError(f"{name}: its schema_version {version!r} is not a number")
    if version > SCHEMA_VERSION:
        raise UsageError(f"{name}: written with schema_version {version}; this version reads up to {SCHEMA_VERSION}")
    kind = _kind(data)
    if kind is None:
        raise UsageError(f"{name}: not a summary written by bench, sweep or inspect --json")
    reader = {
        SummaryKind.BENCH: _bench,
        SummaryKind.BENCH_AB: _ab,
        SummaryKind.SWEEP: _sweep,
        SummaryKind.INSPECT: _inspect,
    }[kind]
    return replace(reader(data, name), path=path or name)


def _kind(data: dict[str, object]) -> SummaryKind | None:
    if data.get("mode") == "compare" and isinstance(data.get("agreement"), dict):
        return SummaryKind.BENCH_AB
    if isinstance(data.get("metrics"), dict) and isinstance(data.get("config"), dict):
        return SummaryKind.BENCH
    if isinstance(data.get("rows"), list) and "frames" in data and "source" in data:
        return SummaryKind.SWEEP
    if isinstance(data.get("coverage"), dict) and isinstance(data.get("model"), dict):
        return SummaryKind.INSPECT
    return None


def at(data: object, path: str) -> object:
    """The value at a dotted path of nested objects; None where any step is missing or not an object."""
    for step in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(step)
    return data


def number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True) if value else "none"
    return str(value)


def bench_identity(
    config: Mapping[str, object], source_spec: object, sha256: object
) -> tuple[dict[str, str], dict[str, str]]:
    """(identity, settings) of a bench run: identity is the workload (which model file, on which
    delegate, fed from which source, read as which task): it must match a baseline's. Settings are
    how it ran (threads, precision, ...): they may differ, and the gate then shows them (docs/gates.md)."""
    options = config.get("options")
    options = options if isinstance(options, dict) else {}
    identity = {
        "model sha256": _text(sha256) if sha256 else "unknown",
        "delegate": _text(config.get("delegate")),
        "source": _text(source_spec),
        "model options": _text(config.get("model_options") or {}),
    }
    settings = {
        "threads": _text(options.get("threads")),
        "precision": _text(options.get("precision")),
        "compute units": _text(options.get("compute_units")),
        "gpu wait hint": _text(options.get("wait_hint")),
        "software gpu": _text(options.get("allow_software")),
        # bench runs an unpaced GPU classifier in a child by default (--gpu-process auto): a baseline from
        # before that, or with it off, ran in this process, and the gate says so. No key: this process.
        "gpu process": "yes" if options.get("own_process") is True else "no",
        "fallback": _text(config.get("fallback")),
        "throttle ms": _text(config.get("throttle_ms")),
    }
    return identity, settings


def opened_sha(data: object) -> object:
    """The sha256 of the model a bench run opened (its first `open` event's), None if not recorded."""
    events = at(data, "events")
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and event.get("kind") == "open":
            sha = at(event, "model.sha256")
            if sha:
                return sha
    return None


def _rounds_figures(data: object) -> tuple[int, dict[str, Measure]]:
    figures = at(data, "rounds.figures")
    count = number(at(data, "rounds.count"))
    out: dict[str, Measure] = {}
    for name, spread in figures.items() if isinstance(figures, dict) else ():
        values = at(spread, "values")
        numbers = [v for v in map(number, values) if v is not None] if isinstance(values, list) else []
        if not numbers:
            continue
        if len(numbers) == 1:
            out[name] = Measure.single(numbers[0])
            continue
        q1, _, q3 = statistics.quantiles(numbers, n=4, method="inclusive")
        out[name] = Measure(statistics.median(numbers), q1, q3, len(numbers))
    return int(count or 0), out


def _figures(
    data: object, kind: SummaryKind, rounds: Mapping[str, Measure], side: str | None = None
) -> dict[str, Measure | None]:
    """Each figure of `kind` (or, with `side`, of an A/B side: a bench run's under `a.`/`b.`): the median
    of its rounds, else its whole-span value."""
    out: dict[str, Measure | None] = {}
    for name in figures_of(SummaryKind.BENCH if side else kind):
        path = side_path(FIGURES[name], side) if side else FIGURES[name].path(kind)
        if path is None:  # an A/B side's figure: not the pair's
            continue
        value = number(at(data, path))
        out[name] = rounds.get(name) or (Measure.single(value) if value is not None else None)
    # A figure only rounds carry (a sweep row's run-queue wait) still serves the noise rule.
    out.update({name: m for name, m in rounds.items() if name in FIGURES and name not in out})
    return out


def _bench(data: dict[str, object], name: str) -> StoredSummary:
    config = data["config"]
    assert isinstance(config, dict)  # _kind checked it
    identity, settings = bench_identity(config, at(data, "source.spec"), opened_sha(data))
    settings["delegate used"] = _text(at(data, "delegate.used"))
    count, rounds = _rounds_figures(data)
    state = at(data, "status.state")
    group = Group(
        "",
        (),
        state != "error",
        _text(at(data, "status.message")) if state == "error" else None,
        _figures(data, SummaryKind.BENCH, rounds),
    )
    return StoredSummary(name, SummaryKind.BENCH, identity, settings, (group,), count)


AB_SIDES = ("A", "B")
AB_PAIR = "A/B"  # the group of the figures about the pair (agreement)


def ab_identity(
    sides: Mapping[str, tuple[Mapping[str, object], object]], source_spec: object
) -> tuple[dict[str, str], dict[str, str]]:
    """(identity, settings) of an A/B run: each side's as bench_identity's, named `A model sha256`,
    `B threads`, ...; `sides` maps "A"/"B" to (config, model sha256)."""
    identity: dict[str, str] = {"source": _text(source_spec)}
    settings: dict[str, str] = {}
    for side, (config, sha256) in sides.items():
        ident, sets = bench_identity(config, source_spec, sha256)
        identity |= {f"{side} {k}": v for k, v in ident.items() if k != "source"}
        settings |= {f"{side} {k}": v for k, v in sets.items()}
    return identity, settings


def _ab(data: dict[str, object], name: str) -> StoredSummary:
    sides = {side: at(data, side.lower()) for side in AB_SIDES}
    identity, settings = ab_identity(
        {
            side: (config if isinstance(config := at(facts, "config"), dict) else {}, at(facts, "model_sha256"))
            for side, facts in sides.items()
        },
        at(data, "source.spec"),
    )
    groups, counts = [], []
    for side, facts in sides.items():
        settings[f"{side} delegate used"] = _text(at(facts, "delegate.used"))
        count, rounds = _rounds_figures(facts)
        counts.append(count)
        figures = _figures(data, SummaryKind.BENCH_AB, rounds, side.lower())
        measured = number(at(facts, "inference_ms_median")) is not None
        groups.append(Group(side, (side,), measured, None if measured else "no inference measured", figures))
    groups.append(Group(AB_PAIR, (AB_PAIR,), True, None, _figures(data, SummaryKind.BENCH_AB, {})))
    return StoredSummary(name, SummaryKind.BENCH_AB, identity, settings, tuple(groups), min(counts))


def _sweep(data: dict[str, object], name: str) -> StoredSummary:
    rows = data["rows"]
    assert isinstance(rows, list)
    groups = []
    for row in rows:
        if not isinstance(row, dict):
            raise UsageError(f"{name}: a sweep row that is not an object")
        _, rounds = _rounds_figures(row)
        measured = row.get("outcome") == "measured"
        sha, ref = row.get("model_sha256"), row.get("model_ref")
        label = _text(row.get("label"))
        key = (_text(row.get("delegate")), _text(row.get("setting")))
        groups.append(
            Group(
                label,
                key,
                measured,
                None if measured else _text(row.get("reason")),
                _figures(row, SummaryKind.SWEEP, rounds) if measured else {},
                _text(sha) if sha else None,
                _text(ref) if ref else None,
            )
        )
    identity = {"source": _text(data.get("source"))}
    settings = {
        "frames": _text(data.get("frames")),
        "warmup": _text(data.get("warmup")),
        "pinned": _text(data.get("pinned")),
        "machine": _text(data.get("machine")),
    }
    return StoredSummary(name, SummaryKind.SWEEP, identity, settings, tuple(groups))


def _inspect(data: dict[str, object], name: str) -> StoredSummary:
    coverage = data["coverage"]
    assert isinstance(coverage, dict)
    groups = []
    for delegate, facts in coverage.items():
        if not isinstance(facts, dict):
            continue
        delegated, total, partitions = (number(facts.get(k)) for k in ("nodes_delegated", "nodes_total", "partitions"))
        figures: dict[str, Measure | None] = {
            "nodes": Measure.single(delegated) if delegated is not None else None,
            "partitions": Measure.single(partitions) if partitions is not None else None,
            "fallback_nodes": Measure.single(total - delegated)
            if total is not None and delegated is not None
            else None,
        }
        measured = delegated is not None
        label = f"{delegate} ({_text(facts.get('source'))})"
        groups.append(
            Group(label, (str(delegate),), measured, None if measured else _text(facts.get("reason")), figures)
        )
    identity = {"model sha256": _text(at(data, "model.sha256"))}
    return StoredSummary(name, SummaryKind.INSPECT, identity, {}, tuple(groups))
