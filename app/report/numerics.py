"""The numerics table of a report, for recordings that carry one (`<name>.numerics.json` beside the CSV,
app/numerics/sidecar.py): each node's error on the delegate against the reference, the first breaking
node highlighted. A file that is absent or malformed is skipped: the report still renders."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from app.numerics.sidecar import StoredNumerics, numerics_path, read_numerics
from app.numerics.table import HEAD, cells
from app.report.page import esc


class _Session(Protocol):
    path: Path
    label: str


def html_sections(sessions: Sequence[_Session]) -> list[str]:
    """One section per recording that carries a table (a recording cut into parts carries one for all)."""
    out = []
    seen: set[Path] = set()
    for session in sessions:
        if session.path in seen:
            continue
        seen.add(session.path)
        stored = read_numerics(session.path)
        if stored is not None:
            out.append(_section(session, stored))
    return out


def _section(session: _Session, t: StoredNumerics) -> str:
    max_abs, mean_abs, cosine, snr = t.end_to_end.cells()
    first = f"node {t.first_breaking}" if t.first_breaking is not None else "none"
    facts = (
        f"{t.model}: {t.delegate} ({t.precision}) against {t.against}; inputs: {t.inputs}; a node breaks below "
        f"cosine {t.threshold.get('min_cosine', 0):g} or SNR {t.threshold.get('min_snr_db', 0):g} dB. End to end: "
        f"max abs {max_abs}, mean abs {mean_abs}, cosine {cosine}, SNR {snr} dB. First breaking node: {first}."
    )
    head = "".join(f"<th>{esc(h)}</th>" for h in HEAD)
    body = []
    for row in t.rows:
        style = " style='background:#ffebee'" if row.node == t.first_breaking else ""
        values = cells(row)
        if row.stats is None:  # why there are no figures, across the figures' columns
            tds = "".join(f"<td>{esc(v)}</td>" for v in values[:3]) + f"<td colspan='6'>{esc(values[3])}</td>"
        else:
            tds = "".join(f"<td>{esc(v)}</td>" for v in values)
        body.append(f"<tr{style}>{tds}</tr>")
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in t.notes)
    return (
        f"<h2>Numerics: {esc(session.label or session.path.name)}</h2><p class='note'>{esc(facts)}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{notes}"
        f"<p class='note'>From {esc(numerics_path(session.path).name)} (delegate-scope numerics --json); "
        "docs/numerics.md says how each row is measured.</p>"
    )
