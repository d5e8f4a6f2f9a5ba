"""A baseline checked against the run about to be gated: same kind of summary, same workload.

What must match is the summary's identity (bench: the model file by sha256, the requested delegate,
the source, the model options such as --task; sweep: the source). Its settings (threads, precision,
...) may differ: the gate then says which, above its table, because a CI job that changes a setting
wants to know what it costs (docs/gates.md). `strict` makes a differing setting a usage error too.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.errors import UsageError
from app.gates.figures import SummaryKind
from app.gates.stored import StoredSummary, read_summary


def load_baseline(
    path: Path,
    kind: SummaryKind,
    identity: Mapping[str, str],
    settings: Mapping[str, str],
    strict: bool = False,
) -> StoredSummary:
    """The baseline in `path`, or a UsageError naming what differs
    (`--baseline b.json: delegate gpu there, cpu here`)."""
    base = read_summary(path, "--baseline")
    if base.kind != kind:
        article = "an" if base.kind[0] in "aeiou" else "a"
        raise UsageError(f"--baseline {path}: it holds {article} {base.kind} summary, and this is {kind}")
    checked = {**identity, **settings} if strict else identity
    there = {**base.identity, **base.settings}
    differ = [
        f"{key} {there.get(key, 'not recorded')} there, {value} here"
        for key, value in checked.items()
        if there.get(key) != value
    ]
    if differ:
        hint = "" if strict else " (the baseline must be of the same workload: docs/gates.md)"
        raise UsageError(f"--baseline {path}: {'; '.join(differ)}{hint}")
    return base
