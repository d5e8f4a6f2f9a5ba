"""`delegates` as text: one row per backend, the columns aligned whatever the names' lengths."""

from __future__ import annotations

import re

from tests.helpers.cli import run_cli


def test_every_row_puts_its_state_in_the_same_column():
    run = run_cli("delegates")
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line and not line.startswith(" ")]
    assert [row.split()[0] for row in rows] == ["cpu", "gpu", "coreml", "reference"]
    # "reference TensorFlow reference available" ran its columns together before.
    columns = {re.search(r"\b(not available|available)\b", row).start() for row in rows}
    assert len(columns) == 1, rows
    assert all(row.startswith(f"{row.split()[0]:<9} ") for row in rows)
