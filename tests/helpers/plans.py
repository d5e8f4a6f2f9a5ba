"""Run plans built as `bench` builds them, from its own parser: what a command line gives the run."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.commands import bench as bench_command
from app.tasks.plan import RunPlan

LABELS = Path(__file__).parents[2] / "models" / "imagenet_labels.txt"


def bench_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    bench_command.add_arguments(p)
    return p


def plan_for(argv: list[str], tmp_path: Path) -> RunPlan:
    """`argv` with LABELS, CSV and TRACE standing for the bundled labels and files in `tmp_path`."""
    files = {"LABELS": str(LABELS), "CSV": str(tmp_path / "run.csv"), "TRACE": str(tmp_path / "run.trace.json")}
    argv = [files.get(a, a) for a in argv]
    return bench_command.plan_of(bench_parser().parse_args(argv))
