"""`delegate-scope report`: recordings drawn into one HTML page or PNG (app/report/build.py)."""

from __future__ import annotations

import argparse


def cmd_report(args: argparse.Namespace) -> int:
    from app.report.build import build_report  # matplotlib is imported only when a report is drawn

    written = build_report(args.sessions, args.out)
    n, parts = written["recordings"], written["sessions"]
    what = f"{n} recording{'s' if n != 1 else ''}" + (f" in {parts} parts, cut at their switches" if parts > n else "")
    print(f"report    {written['out']} ({what}, {written['bytes'] / 1024:.0f} KiB)")
    return 0
