"""Budget expressions (`--budget`), parsed into typed budgets: `FIGURE<=VALUE` or `FIGURE>=VALUE`.

A signed value is relative to a baseline: `+10%` / `-5%` a percentage of the baseline's figure,
`+2ms` a change in the figure's unit. An unsigned value is an absolute limit: `20ms`, `0.98`. The
rule that judges them against a baseline's spread is in verdict.py; both are in docs/gates.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from app.errors import UsageError
from app.gates.figures import FIGURES, Figure, SummaryKind, figures_of

DEFAULT_BUDGETS = ("inference.p50<=+10%", "rate>=-10%")  # --baseline without --budget (docs/gates.md)


class Op(StrEnum):
    AT_MOST = "<="
    AT_LEAST = ">="


class Reference(StrEnum):
    ABSOLUTE = "absolute"  # the value is the limit
    PERCENT = "percent"  # the limit is the baseline's figure changed by this percentage
    DELTA = "delta"  # ... changed by this amount, in the figure's unit


# How a budget may spell each unit (a bare number is always the figure's own unit).
_UNITS = {"ms": "ms", "/s": "/s", "fps": "/s", "x": "x", "MB": "MB"}
_EXPR = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9_.]+)\s*(?P<op><=|>=)\s*(?P<sign>[+-])?\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>%|ms|/s|fps|x|MB)?\s*$"
)


@dataclass(frozen=True)
class Budget:
    text: str  # as the user wrote it
    figure: Figure
    op: Op
    amount: float  # signed for a relative budget
    reference: Reference
    group: str | None = None  # inspect: the delegate it is about (`gpu.partitions<=1`); None: every group

    @property
    def relative(self) -> bool:
        return self.reference != Reference.ABSOLUTE

    def limit(self, base: float | None) -> float:
        """The limit the run's figure is held to (a relative budget needs the baseline's figure)."""
        if self.reference == Reference.ABSOLUTE:
            return self.amount
        assert base is not None
        return base * (1 + self.amount / 100) if self.reference == Reference.PERCENT else base + self.amount

    def holds(self, value: float, limit: float) -> bool:
        return value <= limit if self.op == Op.AT_MOST else value >= limit

    def shown(self) -> str:
        """The expression, written back without spaces."""
        unit = "%" if self.reference == Reference.PERCENT else _unit_suffix(self.figure)
        sign = "+" if self.relative and self.amount >= 0 else ""
        return f"{self.op.value}{sign}{self.amount:g}{unit}"


def _unit_suffix(figure: Figure) -> str:
    return figure.unit if figure.unit in ("ms", "/s", "x") else ""


def parse_budget(text: str, kind: SummaryKind) -> Budget:
    """`text` as a budget on a summary of `kind`; UsageError (one line) for anything else."""
    m = _EXPR.match(text)
    if not m:
        raise UsageError(
            f"--budget {text!r}: write FIGURE<=VALUE or FIGURE>=VALUE, e.g. inference.p50<=+10%, "
            "end_to_end.p95<=20ms, agreement.top1>=0.98"
        )
    name, group = m["name"], None
    if kind == SummaryKind.INSPECT and "." in name:  # gpu.partitions: a delegate's figure
        group, name = name.split(".", 1)
    elif kind == SummaryKind.BENCH_AB and name[:2] in ("A.", "B."):  # B.inference.p50: one side's figure
        group, name = name[0], name[2:]
    known = figures_of(kind)
    if name not in known:
        shown = [f"DELEGATE.{n}" for n in known] if kind == SummaryKind.INSPECT else known
        raise UsageError(f"--budget {text!r}: {m['name']} is no figure of a {kind} summary; known: {', '.join(shown)}")
    figure = FIGURES[name]
    unit, sign = m["unit"], m["sign"]
    if unit == "%":
        if not sign:
            raise UsageError(f"--budget {text!r}: a percentage is a change against the baseline: write +N% or -N%")
        reference = Reference.PERCENT
    else:
        if unit is not None and _UNITS[unit] != figure.unit:
            raise UsageError(f"--budget {text!r}: {name} is in {figure.unit}, not {unit}")
        reference = Reference.DELTA if sign else Reference.ABSOLUTE
    amount = float(m["num"]) * (-1 if sign == "-" else 1)
    return Budget(text.strip(), figure, Op(m["op"]), amount, reference, group)


def parse_budgets(texts: list[str] | None, kind: SummaryKind, baseline: bool) -> list[Budget]:
    """Every --budget (the defaults with a baseline and none given); a relative one without a baseline
    is a usage error."""
    if not texts:  # the defaults are about latency and rate: a bench run's or a sweep row's
        timed = kind in (SummaryKind.BENCH, SummaryKind.BENCH_AB, SummaryKind.SWEEP)
        return [parse_budget(t, kind) for t in DEFAULT_BUDGETS] if baseline and timed else []
    budgets = [parse_budget(t, kind) for t in texts]
    for budget in budgets:
        if budget.relative and not baseline:
            raise UsageError(
                f"--budget {budget.text!r} is relative to a baseline: give --baseline FILE.json, or an absolute limit"
            )
    return budgets
