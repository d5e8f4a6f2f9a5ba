"""What several commands print alike: the program's name in messages, warnings, and what the TFLite
Core ML delegate would take of the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import CheckFailed, UsageError

if TYPE_CHECKING:  # imported where printed: main imports this module at every start (app/cli/main.py)
    from app.backends import DelegationReport
    from app.gates.verdict import GateReport

PROG = "delegate-scope"


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def print_prediction(report: DelegationReport) -> None:
    """Core ML requested: what the TFLite Core ML delegate would take (predicted on any OS)."""
    from app.backends.describe import coreml_prediction_sentence
    from app.coverage.text import left_on_cpu_lines

    sentence = coreml_prediction_sentence(report)
    if sentence and report.predicted is not None:
        print(f"coreml    {sentence} {report.predicted.log or ''}".rstrip())
        for line in left_on_cpu_lines(report.predicted, limit=6):
            print(f"          left on the CPU: {line}")


def finish_gate(report: GateReport) -> None:
    """Print the gate's table after the command's own output; a failed budget is exit 7 (all listed)."""
    from app.gates.text import report_lines

    print()
    for line in report_lines(report):
        print(line)
    if report.failures:
        raise CheckFailed(report.failure_line())


def check_writable(path: Path, option: str) -> None:
    """Before the work: a file option that names a folder, or a file in a folder that does not exist, is exit 2."""
    if path.is_dir() or not path.parent.is_dir():
        raise UsageError(f"{option}: cannot write {path} (not a file in an existing folder)")


def write_json_file(path: Path, document: object, option: str) -> None:
    try:
        path.write_text(json.dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path} ({exc.strerror})") from None
