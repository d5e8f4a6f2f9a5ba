"""The real command line in a process of its own, as a user runs it, and its failure contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import ROOT
from tests.helpers.schemas import check_cli_outputs


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


def run_cli(*args: str | Path, timeout: float = 120, env: dict[str, str] | None = None, fresh: bool = False) -> CliRun:
    """Run `python -m app ...` as a user would (`env` adds variables), in a process of its own: forked from one
    that has imported the app (tests/helpers/forked_cli.py: the same run without a fresh interpreter's
    0.4-0.5 s of imports), or a fresh interpreter when `fresh`, when `env` sets a variable an interpreter
    reads as it starts (PYTHON*), or while another thread's run holds this process's forking server."""
    if not fresh and not any(name.startswith("PYTHON") for name in env or {}):
        from tests.helpers.forked_cli import shared  # it imports this module

        run = shared().try_run(*args, timeout=timeout, env=env)
        if run is not None:
            return run
    proc = subprocess.run(
        [sys.executable, "-m", "app", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    # Every JSON it printed or wrote holds to its schema (app/schemas; tests/helpers/schemas.py).
    check_cli_outputs([str(a) for a in args], proc.returncode, proc.stdout, ROOT)
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(run: CliRun, code: int, *fragments: str) -> None:
    """The failure contract: the exit code, one plain line on stderr, no traceback."""
    assert run.returncode == code, (run.returncode, run.stderr)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("delegate-scope: error: "), lines[0]
    assert "Traceback" not in run.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
