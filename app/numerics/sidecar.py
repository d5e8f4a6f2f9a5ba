"""A numerics table carried by a recording: `<name>.numerics.json` beside its CSV, the output of
`delegate-scope numerics --json > <name>.numerics.json` (the session report shows it: app/report/numerics.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.numerics.metrics import ErrorStats
from app.numerics.scan import NodeError


@dataclass(frozen=True)
class StoredNumerics:
    """What the report shows of a stored table: what was compared on what, the end to end, the rows."""

    model: str
    delegate: str
    precision: str
    against: str
    inputs: str
    threshold: dict[str, float]
    first_breaking: int | None
    end_to_end: ErrorStats
    rows: tuple[NodeError, ...]
    notes: tuple[str, ...]

    @classmethod
    def from_dict(cls, d: dict) -> StoredNumerics:
        model = d.get("model")
        return cls(
            model=str(model.get("name", "")) if isinstance(model, dict) else "",
            delegate=str(d["delegate"]),
            precision=str(d["precision"]),
            against=str(d["against"]),
            inputs=str(d["inputs"]["description"]),
            threshold={k: float(v) for k, v in d["threshold"].items()},
            first_breaking=None if d.get("first_breaking") is None else int(d["first_breaking"]),
            end_to_end=ErrorStats.from_dict(d["end_to_end"]),
            rows=tuple(NodeError.from_dict(r) for r in d["rows"]),
            notes=tuple(str(n) for n in d.get("notes") or ()),
        )


def numerics_path(recording: Path) -> Path:
    return Path(recording).with_suffix(".numerics.json")


def read_numerics(recording: Path) -> StoredNumerics | None:
    """The table beside a recording; None when absent or malformed (the report renders without it)."""
    try:
        data = json.loads(numerics_path(recording).read_text(encoding="utf-8"))
        return StoredNumerics.from_dict(data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
