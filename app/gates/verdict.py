"""A run's figures judged against its budgets and its baseline: one row per figure and budget.

The rule (docs/gates.md, "The noise rule"): an absolute budget holds when the run's figure is within
its limit. A relative budget's limit is the baseline's figure changed by the budget; a run over that
limit FAILs only when the difference of the two medians, on the failing side, is also larger than the
noise: the mean of the two interquartile ranges of rounds (the baseline's and the run's); otherwise it
is "within noise" and passes. A latency or rate beyond the noise by no more than the extra time the
run's inference thread waited for a core (its run-queue wait, measured per inference) is "within
contention" and passes: the machine was busier, not the model slower. Figures are medians over rounds
(app/metrics/rounds.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.gates.budget import Budget, Op
from app.gates.figures import FIGURES, INSPECT_SHOWN, SHOWN, SummaryKind, figures_of
from app.gates.stored import Group, Measure, StoredSummary


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "FAIL"
    NOISE = "within noise"  # over a relative budget, but not beyond the rounds' spread: passes
    CONTENTION = "within contention"  # ... beyond it by no more than the run's extra wait for a core: passes


@dataclass(frozen=True)
class GateRow:
    group: str  # a sweep row's label, an inspect delegate; "" for one bench run
    figure: str  # "" for a row about the group itself (not measured)
    unit: str
    base: Measure | None
    run: Measure | None
    budget: Budget | None
    limit: float | None
    verdict: Verdict | None  # None: shown, no budget on it
    note: str = ""

    @property
    def delta(self) -> float | None:
        return self.run.value - self.base.value if self.run and self.base else None

    @property
    def delta_pct(self) -> float | None:
        d = self.delta
        return 100 * d / self.base.value if d is not None and self.base and self.base.value else None

    def to_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "figure": self.figure,
            "unit": self.unit,
            "baseline": self.base.to_dict() if self.base else None,
            "run": self.run.to_dict() if self.run else None,
            "delta": self.delta,
            "delta_pct": self.delta_pct,
            "budget": self.budget.text if self.budget else None,
            "limit": self.limit,
            "verdict": self.verdict.value if self.verdict else None,
            "note": self.note or None,
        }


@dataclass(frozen=True)
class GateReport:
    kind: SummaryKind
    baseline: str | None  # the baseline's file (compare: the first file)
    run: str  # "this run", or compare's second file
    differences: tuple[str, ...]  # settings that differ between the two ("threads 2 there, 1 here")
    rows: tuple[GateRow, ...]
    unmatched: tuple[str, ...]  # groups found on one side only, said so
    budgets: tuple[str, ...]
    rounds: tuple[int, int] = (0, 0)  # the baseline's and the run's rounds (bench)

    @property
    def failures(self) -> list[GateRow]:
        return [r for r in self.rows if r.verdict == Verdict.FAIL]

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "baseline": self.baseline,
            "run": self.run,
            "budgets": list(self.budgets),
            "differences": list(self.differences),
            "unmatched": list(self.unmatched),
            "rows": [r.to_dict() for r in self.rows],
            "failed": len(self.failures),
            "passed": not self.failures,
        }

    def failure_line(self) -> str:
        """The one line of the exit-7 error: every failed budget."""
        parts = []
        for r in self.failures:
            where = f"{r.group}: " if r.group else ""
            parts.append(f"{where}{r.budget.text if r.budget else r.figure or 'run'} ({r.note})")
        return f"{len(parts)} budget{'s' if len(parts) > 1 else ''} failed: " + "; ".join(parts)


def differences(base: StoredSummary, run: StoredSummary) -> list[str]:
    """Each setting (and identity field) that differs, as `threads 2 there, 1 here`."""
    out = []
    for fields in ("identity", "settings"):
        there, here = getattr(base, fields), getattr(run, fields)
        for key in there.keys() & here.keys():
            if there[key] != here[key]:
                out.append(f"{key} {there[key]} there, {here[key]} here")
    order = [*base.identity, *base.settings]
    return sorted(out, key=lambda line: next((i for i, k in enumerate(order) if line.startswith(k + " ")), 99))


def evaluate(run: StoredSummary, base: StoredSummary | None, budgets: Sequence[Budget]) -> GateReport:
    """Every group of `run` (matched with `base`'s) with its shown figures and budgets judged."""
    pairs, unmatched = _pair(run, base)
    differ = tuple(differences(base, run)) if base else ()
    rows: list[GateRow] = []
    for b, r in pairs:
        # Contention is allowed for only between two runs of one configuration: a setting that differs
        # changes how the thread waits too (measured: 1 pinned thread waited 2.0 ms per ms of its CPU where
        # 2 threads waited 1.5, on the same loaded machine), and that is part of what the setting costs.
        rows += _group_rows(run.kind, b, r, budgets, allow_contention=not differ)
    rows += _unjudged(run, base, budgets, rows)
    return GateReport(
        kind=run.kind,
        baseline=base.path if base else None,
        run=run.path,
        differences=differ,
        rows=tuple(rows),
        unmatched=tuple(unmatched),
        budgets=tuple(b.text for b in budgets),
        rounds=(base.rounds if base else 0, run.rounds),
    )


def _unjudged(
    run: StoredSummary, base: StoredSummary | None, budgets: Sequence[Budget], rows: Sequence[GateRow]
) -> list[GateRow]:
    """A FAIL row for each budget judged on no group: a gate never passes on figures nobody measured
    (its groups not measured on either side, or no group of its name). A group that fell off its delegate
    has failed already."""
    if any(r.verdict == Verdict.FAIL and not r.figure for r in rows):
        return []
    judged = {id(r.budget) for r in rows if r.budget is not None and r.verdict is not None}
    out = []
    for budget in budgets:
        if id(budget) in judged:
            continue
        groups = [g for g in run.groups if _names(budget, g)]
        base_groups = [g for g in base.groups if _names(budget, g)] if base is not None else []
        said = [g.reason for g in groups if not g.measured and g.reason]
        said += [
            f"in the baseline, {g.reason}" for g in base_groups if not g.measured and g.reason not in (*said, None)
        ]
        reasons = list(dict.fromkeys(said))
        groups += base_groups
        if not groups:
            note = f"not measured: no {budget.group} in {'either summary' if base is not None else 'this run'}"
        else:
            note = "not measured" + (f": {'; '.join(reasons)}" if reasons else "")
        unit = budget.figure.unit
        out.append(GateRow(budget.group or "", budget.figure.name, unit, None, None, budget, None, Verdict.FAIL, note))
    return out


def _names(budget: Budget, group: Group) -> bool:
    """Whether a budget is about this group: every group, or the one its name gives (`gpu.nodes`, `B.rate`)."""
    return budget.group is None or bool(group.key and group.key[0] == budget.group)


def _pair(run: StoredSummary, base: StoredSummary | None) -> tuple[list[tuple[Group | None, Group]], list[str]]:
    if base is None:
        return [(None, g) for g in run.groups], []
    groups = [*run.groups, *base.groups]
    by_sha = all(g.model_sha256 for g in groups) if run.kind == SummaryKind.SWEEP else False

    def key(g: Group) -> tuple[str | None, ...]:
        if run.kind != SummaryKind.SWEEP:
            return g.key
        return (g.model_sha256 if by_sha else g.model_ref, *g.key)

    base_by_key = {key(g): g for g in base.groups}
    run_keys = {key(g) for g in run.groups}
    pairs = [(base_by_key.get(key(g)), g) for g in run.groups]
    unmatched = [f"{g.label or 'the run'}: only in {run.path}" for b, g in pairs if b is None]
    unmatched += [f"{g.label}: only in {base.path}" for g in base.groups if key(g) not in run_keys]
    return [(b, g) for b, g in pairs if b is not None], unmatched


def _shown(kind: SummaryKind) -> tuple[str, ...]:
    if kind == SummaryKind.INSPECT:
        return INSPECT_SHOWN
    if kind == SummaryKind.SWEEP:
        return ("inference.p50", "rate")
    if kind == SummaryKind.BENCH_AB:
        return (*SHOWN, "agreement.top1", "agreement.top5")
    return tuple(n for n in SHOWN if n in figures_of(kind)) or tuple(figures_of(kind))


def _group_rows(
    kind: SummaryKind, b: Group | None, r: Group, budgets: Sequence[Budget], allow_contention: bool = True
) -> list[GateRow]:
    # A budget is about the groups that have its figure (an A/B run: latency on each side, agreement on the pair).
    mine = [x for x in budgets if (x.group is None or (r.key and x.group == r.key[0])) and x.figure.name in r.figures]
    if not r.measured:
        # A configuration measured in the baseline that this run could not measure has regressed.
        failed = b is not None and b.measured and bool(mine)
        note = f"not measured: {r.reason}" if r.reason else "not measured"
        return [GateRow(r.label, "", "", None, None, None, None, Verdict.FAIL if failed else None, note)]
    if b is not None and not b.measured:
        return [GateRow(r.label, "", "", None, None, None, None, None, f"not measured in the baseline: {b.reason}")]
    names = [n for n in _shown(kind) if n in r.figures] + [x.figure.name for x in mine]
    rows = []
    for name in dict.fromkeys(names):
        figure = FIGURES[name]
        base_m, run_m = (b.figures.get(name) if b else None), r.figures.get(name)
        on_it = [x for x in mine if x.figure.name == name]
        if not on_it and (base_m or run_m):  # a figure neither side read (an older summary's wait) is left out
            rows.append(GateRow(r.label, name, figure.unit, base_m, run_m, None, None, None))
        for budget in on_it:
            row = _judge(r.label, budget, base_m, run_m, _contention(b, r) if allow_contention else None, b is not None)
            rows.append(_vacuous(kind, row, r))
    return rows


def _vacuous(kind: SummaryKind, row: GateRow, run: Group) -> GateRow:
    """An inspect budget that holds of a delegate that takes no node holds of nothing (0 partitions is
    "at most 1"): it fails, saying so, unless it asks for none (`nodes<=0`), as `inspect --require` does."""
    taken = run.figures.get("nodes")
    if kind != SummaryKind.INSPECT or row.verdict != Verdict.PASS or taken is None or taken.value != 0:
        return row
    asks_none = row.limit == 0 and row.budget is not None and row.budget.op == Op.AT_MOST
    if row.budget is None or (asks_none and row.figure in ("nodes", "partitions")):
        return row
    delegate = run.key[0] if run.key else run.label
    rule = f"{row.figure}{row.budget.shown()}"
    note = f"{delegate} takes no node of this model: {rule} holds only vacuously"
    return replace(row, verdict=Verdict.FAIL, note=note)


# Figures whose time holds the inference thread's wait for a core: latencies that contain the inference,
# and the rate, their inverse. Not CPU time (a thread waiting uses none), not start-up.
_WAIT_IN = ("inference.", "end_to_end.")
WAITED, THREAD_CPU = "waited_per_inference", "thread_cpu_per_inference"


@dataclass(frozen=True)
class Contention:
    """The inference thread's run-queue wait per inference on both sides (medians over rounds, ms), and
    the part of the run's that the baseline's contention does not explain."""

    base_ms: float
    run_ms: float
    extra_ms: float  # the allowance: the run's wait less what the baseline's rate of waiting gives its CPU

    def sentence(self) -> str:
        return (
            f"its inference thread waited {_num(self.run_ms)} ms per inference for a core ({_num(self.base_ms)} ms "
            f"in the baseline), {_num(self.extra_ms)} ms more than its CPU time explains at the baseline's contention"
        )


def _contention(base: Group | None, run: Group) -> Contention | None:
    """On a busy machine a thread waits in proportion to the CPU it needs (a fair scheduler shares each
    core's time), so the baseline waited `w_b / c_b` ms per ms of its own CPU. What the run waited beyond
    that share of its own CPU is the machine's extra contention: `w_r - c_r * w_b / c_b`. Measured, a
    run at 1 thread against a baseline at 2 on a loaded machine waits about twice as long (its thread
    does all the work) though the contention did not change: the allowance must not absorb that.
    None (no allowance) when either side lacks the readings or the run's share of waiting is no larger."""
    if base is None:
        return None
    w_b, c_b = base.figures.get(WAITED), base.figures.get(THREAD_CPU)
    w_r, c_r = run.figures.get(WAITED), run.figures.get(THREAD_CPU)
    if w_b is None or c_b is None or w_r is None or c_r is None or c_b.value <= 0:
        return None
    extra = w_r.value - c_r.value * w_b.value / c_b.value
    return Contention(w_b.value, w_r.value, extra) if extra > 0 else None


def _allowance(name: str, base: float, contention: Contention | None) -> float:
    """How much worse `name` gets when each inference waits `extra_ms` longer for a core."""
    if contention is None:
        return 0.0
    if name.startswith(_WAIT_IN):
        return contention.extra_ms
    if name == "rate" and base > 0:  # one inference after another: each period longer by the extra wait
        return base - 1000 / (1000 / base + contention.extra_ms)
    return 0.0


def _judge(
    group: str,
    budget: Budget,
    base: Measure | None,
    run: Measure | None,
    contention: Contention | None = None,
    has_baseline: bool = False,
) -> GateRow:
    name, unit = budget.figure.name, budget.figure.unit
    if run is None:
        return GateRow(group, name, unit, base, run, budget, None, Verdict.FAIL, "not measured in this run")
    if base is None and (budget.relative or has_baseline):
        # A baseline given but without the figure: nothing to compare, even for an absolute budget.
        return GateRow(group, name, unit, base, run, budget, None, Verdict.FAIL, "not measured in the baseline")
    limit = budget.limit(base.value if base else None)
    if budget.holds(run.value, limit):
        return GateRow(group, name, unit, base, run, budget, limit, Verdict.PASS)
    over = f"{_num(run.value)} against a limit of {_num(limit)}{_unit(unit)}"
    if not budget.relative or base is None:
        return GateRow(group, name, unit, base, run, budget, limit, Verdict.FAIL, over)
    # The noise rule (docs/gates.md): the medians' difference, on the failing side, against the mean of
    # the two interquartile ranges, then against the run's extra wait for a core.
    worse = run.value - base.value if budget.op == Op.AT_MOST else base.value - run.value
    noise = ((base.high - base.low) + (run.high - run.low)) / 2
    if worse <= noise:
        return GateRow(
            group, name, unit, base, run, budget, limit, Verdict.NOISE, f"{over}, by less than the rounds' spread"
        )
    allowance = _allowance(name, base.value, contention)
    if not allowance or contention is None:
        return GateRow(group, name, unit, base, run, budget, limit, Verdict.FAIL, over)
    if worse <= noise + allowance:
        return GateRow(
            group, name, unit, base, run, budget, limit, Verdict.CONTENTION, f"{over}; {contention.sentence()}"
        )
    return GateRow(group, name, unit, base, run, budget, limit, Verdict.FAIL, f"{over}, though {contention.sentence()}")


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def _unit(unit: str) -> str:
    return f" {unit}" if unit in ("ms", "/s") else ""
