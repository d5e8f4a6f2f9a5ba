"""`delegate-scope compare A.json B.json`: two stored summaries side by side, B against A, with deltas and,
given --budget, verdicts (exit 7 when one fails). Nothing runs (app/tasks/compare_summaries.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.cli.command import Command
from app.cli.options import add_gate_options
from app.cli.output import finish_gate
from app.gates.stored import StoredFile
from app.schemas import versioned
from app.tasks.compare_summaries import clock_sentences, compare_summaries
from app.tasks.pace_comparison import bench_against_sweep


def add_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument(
        "a", type=Path, metavar="A.json", help="the baseline: a summary written by bench, sweep or inspect --json"
    )
    c.add_argument(
        "b",
        type=Path,
        metavar="B.json",
        help="the summary judged against it (of the same kind; a bench beside a sweep is shown configuration by "
        "configuration, with the pace and GPU clock of each)",
    )
    add_gate_options(c, baseline=False)
    c.add_argument("--json", action="store_true", help="print the comparison as one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    a, b = StoredFile.read(args.a), StoredFile.read(args.b)  # each read once, for every reading below
    side_by_side = bench_against_sweep(a, b, args.budget)  # a bench beside a sweep: shown, not judged
    if side_by_side is not None:
        if args.json:
            print(json.dumps(versioned({"bench_against_sweep": side_by_side.to_dict()}), indent=2))
            return 0
        for tag, text in side_by_side.lines():
            print(f"{tag:<9} {text}")
        return 0
    report = compare_summaries(a, b, args.budget)
    clocks = clock_sentences(a, b)  # speeds measured at different GPU clocks: said, with the figures
    if args.json:
        print(json.dumps(versioned({"gates": report.to_dict(), "clock_sentences": clocks}), indent=2))
        return 7 if report.failures else 0
    for sentence in clocks:
        print(f"clocks    {sentence}")
    finish_gate(report)
    return 0


COMMAND = Command(
    name="compare",
    help="two stored summaries (bench, sweep, inspect) side by side, with deltas and budgets",
    description="Compare two JSON summaries of one kind, written by bench, sweep or inspect --json: each figure "
    "of B against A (A is the baseline), the difference in the figure's unit and in percent, and with --budget a "
    "verdict per budget (exit 7 when one fails). A bench (or A/B bench) beside a sweep is shown instead: each "
    "bench run beside the sweep row of the same accelerator, with its pace and GPU clock, since a paced bench "
    "and an unpaced sweep may rank delegates differently. Nothing runs.",
    add_arguments=add_arguments,
    run=run,
)
