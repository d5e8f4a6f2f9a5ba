"""`delegate-scope compare A.json B.json`: two stored summaries of one kind (bench, bench A/B, sweep,
inspect) side by side, with deltas and, given budgets, verdicts; A is the baseline. Nothing runs."""

from __future__ import annotations

from pathlib import Path

from app.errors import UsageError
from app.gates.budget import parse_budgets
from app.gates.stored import read_summary
from app.gates.verdict import GateReport, evaluate


def compare_summaries(a: Path, b: Path, budgets: list[str] | None) -> GateReport:
    """B judged against A. Summaries of two kinds are a UsageError; so is any file that is not a
    summary (app/gates/stored.py). Their settings and even their models may differ: shown, not refused."""
    base, run = read_summary(a), read_summary(b)
    if base.kind != run.kind:
        raise UsageError(f"{a} holds a {base.kind} summary and {b} one of {run.kind}: compare needs two of one kind")
    # No --budget: the figures side by side, no verdict (compare shows; bench and sweep gate by default).
    return evaluate(run, base, parse_budgets(budgets, run.kind, baseline=True) if budgets else [])
