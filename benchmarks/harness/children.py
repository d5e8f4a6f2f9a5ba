"""Child processes: benchmark programs (real modules under benchmarks/, run as `python -m`), and the app's
command line of this checkout or another one.

A child runs with the repo root as its working directory, so `python -m benchmarks...` and
`python -m app` import this checkout; `checkout=` runs `python -m app` of another checkout instead
(`-m` puts the working directory first on the import path).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness.paths import ROOT


def module_command(module: str, *args: str) -> list[str]:
    """The command line that runs `module` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def run_module(
    module: str, *args: str, env: Mapping[str, str] | None = None, timeout: float | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """`python -m module args` from the repo root, output captured as text; never raises on its exit status."""
    return subprocess.run(
        module_command(module, *args), capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def python_module(module: str, *args: str, env: Mapping[str, str] | None = None) -> str:
    """`python -m module args`'s standard output; SystemExit with its error output if it fails."""
    proc = run_module(module, *args, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{module} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def last_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON object on a child's last line of output, or {"error": its last line of errors}."""
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_checked(cmd: list[str], env: Mapping[str, str] | None = None, cwd: Path = ROOT) -> None:
    """Run a command, exit with its command line and error output if it fails."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")


def app_command(*args: str) -> list[str]:
    """`python -m app ARGS` (the `delegate-scope` command) with this interpreter."""
    return module_command("app", *args)


def bench_summary(
    args: list[str],
    checkout: Path = ROOT,
    env: Mapping[str, str] | None = None,
    switch_interval_ms: float | None = None,
) -> dict[str, Any]:
    """`python -m app bench ARGS --json TMP` of `checkout` (default: this one); its summary JSON. With
    `switch_interval_ms`, through benchmarks/harness/switched_app.py (the GIL switch interval set first)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        command = ["bench", *args, "--json", str(out)]
        if switch_interval_ms is not None:
            command = module_command("benchmarks.harness.switched_app", str(switch_interval_ms), *command)
        else:
            command = app_command(*command)
        proc = subprocess.run(command, capture_output=True, text=True, cwd=checkout, env=env)
        if proc.returncode != 0:
            sys.exit(f"bench failed ({proc.returncode}) in {checkout}: {' '.join(args)}\n{proc.stderr[-3000:]}")
        summary: dict[str, Any] = json.loads(out.read_text())
        return summary


def unpaced_bench(
    model: str | Path, threads: int, frames: int, source: str, checkout: Path = ROOT, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """bench's summary of an unpaced run with no throttle (the pipeline flat out, as the raw loops run)."""
    args = ["--model", str(model), "--threads", str(threads), "--source", source, "--no-pace", "--throttle-ms", "0"]
    return bench_summary([*args, "--frames", str(frames), *extra], checkout=checkout)


def write_json(path: Path | None, payload: object) -> None:
    """Write a script's results (`--json FILE`); nothing when no file was asked for."""
    if path is not None:
        path.write_text(json.dumps(payload, indent=1, default=str))
