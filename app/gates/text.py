"""A gate report as text: the lines printed after a command's usual output (bench, sweep, compare)."""

from __future__ import annotations

from pathlib import PurePath

from app.gates.stored import Measure
from app.gates.verdict import GateReport, GateRow, Verdict


def _value(m: Measure | None, unit: str) -> str:
    if m is None:
        return "-"
    text = _num(m.value)
    if m.rounds and m.high > m.low:
        text += f" [{_num(m.low)}-{_num(m.high)}]"
    return text


def _num(value: float) -> str:
    if value == int(value) and (abs(value) >= 100 or value == 0):
        return f"{value:.0f}"
    return f"{value:.3f}" if abs(value) < 1 else f"{value:.2f}"


def _delta(row: GateRow) -> tuple[str, str]:
    d, pct = row.delta, row.delta_pct
    return ("-" if d is None else f"{d:+.3g}", "-" if pct is None else f"{pct:+.1f}%")


def _budget(row: GateRow) -> str:
    if row.budget is None:
        return ""
    limit = f" ({_num(row.limit)})" if row.limit is not None and row.budget.relative else ""
    return row.budget.shown() + limit


def report_lines(report: GateReport) -> list[str]:
    """The gate: what is compared, what differs, the table, what is on one side only, the verdict."""
    rounds = report.rounds
    column = PurePath(report.run).name  # compare: the second file's name; bench and sweep: "this run"
    head = f"gate      {report.kind} " + (f"baseline {report.baseline}" if report.baseline else "(no baseline)")
    if report.run != "this run":
        head += f", against it {report.run}"
    if report.baseline and (rounds[0] or rounds[1]):
        head += f"; medians over rounds (baseline {rounds[0] or 'none'}, {column} {rounds[1] or 'none'})"
        head += ", [interquartile range of the rounds]"
    lines = [head]
    lines += [f"differs   {d}" for d in report.differences]
    grouped = any(r.group for r in report.rows)
    header = ("configuration",) * grouped + (
        "figure",
        "unit",
        "baseline",
        column,
        "delta",
        "delta %",
        "budget",
        "verdict",
    )
    body = []
    for r in report.rows:
        if not r.figure:  # the group itself: not measured
            body.append((r.group,) * grouped + ("-", "", "", "", "", "", "", f"{r.verdict or ''} {r.note}".strip()))
            continue
        delta, pct = _delta(r)
        verdict = (r.verdict.value if r.verdict else "") + (f": {r.note}" if r.note and r.verdict else "")
        body.append(
            (r.group,) * grouped
            + (r.figure, r.unit, _value(r.base, r.unit), _value(r.run, r.unit), delta, pct, _budget(r), verdict)
        )
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]
    for row in (header, *body):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    lines += [f"unmatched {u}" for u in report.unmatched]
    failed = report.failures
    judged = [r for r in report.rows if r.verdict is not None]
    if not judged:
        lines.append("verdict   no budget given: figures shown only")
    elif failed:
        lines.append(f"verdict   FAIL: {len(failed)} of {_checks(len(judged))} failed")
    else:
        soft = [
            f"{n} {v.value}" for v in (Verdict.NOISE, Verdict.CONTENTION) if (n := sum(r.verdict == v for r in judged))
        ]
        lines.append(f"verdict   pass: {_checks(len(judged))} held" + (f" ({', '.join(soft)})" if soft else ""))
    return lines


def _checks(n: int) -> str:
    return f"{n} budget check{'s' if n != 1 else ''}"
