"""`delegate-scope report`: recordings drawn into one HTML page or PNG (app/report/build.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.command import Command
from app.cli.output import warn


def add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument(
        "sessions", nargs="+", type=Path, metavar="SESSION.csv", help="recordings; the first is the baseline"
    )
    r.add_argument("--out", type=Path, required=True, metavar="FILE", help="FILE.html (one page) or FILE.png")


def run(args: argparse.Namespace) -> int:
    from app.report.build import build_report  # matplotlib is imported only when a report is drawn

    written = build_report(args.sessions, args.out)
    n, parts = written.recordings, written.sessions
    what = f"{n} recording{'s' if n != 1 else ''}" + (f" in {parts} parts, cut at their switches" if parts > n else "")
    print(f"report    {written.out} ({what}, {written.bytes / 1024:.0f} KiB)")
    for line in written.warnings:  # the page says it too
        warn(line)
    return 0


COMMAND = Command(
    name="report",
    help="plots and a summary of recorded sessions (HTML or PNG)",
    description="Turn recordings (bench --csv, the window's Record) into one self-contained HTML page or one "
    "PNG: latency over time with events, latency histogram, stages, fps, CPU, and a summary table. With several "
    "sessions: overlaid and side by side, and compared with the first (docs/report.md).",
    add_arguments=add_arguments,
    run=run,
)
