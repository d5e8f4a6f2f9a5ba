"""`delegate-scope compare A.json B.json`: two stored summaries of one kind (bench, bench A/B, sweep,
inspect) side by side, with deltas and, given budgets, verdicts; A is the baseline. Nothing runs."""

from __future__ import annotations

from app.errors import UsageError
from app.gates.budget import parse_budgets
from app.gates.stored import StoredFile
from app.gates.verdict import GateReport, evaluate
from app.metrics.energy import clock_state_sentence, stored_clocks


def compare_summaries(a: StoredFile, b: StoredFile, budgets: list[str] | None) -> GateReport:
    """B judged against A. Summaries of two kinds are a UsageError; so is any file that is not a
    summary (app/gates/stored.py). Their settings and even their models may differ: shown, not refused."""
    base, run = a.summary, b.summary
    if base.kind != run.kind:
        article = "an" if base.kind[0] in "aeiou" else "a"
        raise UsageError(
            f"{a.path} holds {article} {base.kind} summary and {b.path} one of {run.kind}: compare needs two of one "
            "kind, or a bench and a sweep"
        )
    # No --budget: the figures side by side, no verdict (compare shows; bench and sweep gate by default).
    return evaluate(run, base, parse_budgets(budgets, run.kind, baseline=True) if budgets else [])


def clock_sentences(a: StoredFile, b: StoredFile) -> list[str]:
    """Where A's and B's speeds were measured at different GPU clocks (a paced bench beside an unpaced
    one, a sweep warmed beside one that was not), one sentence each with the figures: a bench's (or A/B
    bench's) power section, or each sweep configuration both files measured; figures that are not numbers
    are left out (nothing is said of them)."""
    da, db = a.data, b.data
    if not isinstance(da, dict) or not isinstance(db, dict):
        return []
    if "rows" in da and "rows" in db:  # sweeps: configuration by configuration
        rows_a = {r.get("label"): r for r in da["rows"] if isinstance(r, dict)} if isinstance(da["rows"], list) else {}
        rows_b = [r for r in db["rows"] if isinstance(r, dict)] if isinstance(db["rows"], list) else []
        pairs = [(f"{r['label']}: A", rows_a[r["label"]].get("power"), "B", r.get("power"))
                 for r in rows_b if r.get("label") in rows_a]  # fmt: skip
    else:
        pairs = [(f"A ({a.path.name})", da.get("power"), f"B ({b.path.name})", db.get("power"))]
    sentences = []
    for label_a, pa, label_b, pb in pairs:
        sentence = clock_state_sentence(label_a, stored_clocks(pa), label_b, stored_clocks(pb))
        if sentence:
            sentences.append(sentence)
    return sentences
