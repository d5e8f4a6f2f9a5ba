"""`delegate-scope report`: recorded sessions turned into one HTML page (plots embedded) or one PNG.

Reads recordings (docs/csv-format.md) and summarises each (app/report/data.py), compares every
session with the first one, the baseline (app/report/compare.py), lays out the tables
(app/report/tables.py) and the page (app/report/html.py), and draws the plots
(app/report/plots.py, matplotlib, imported only here and only when a report is drawn).
Everything that comes from a user file (labels, messages, paths, model names) is HTML-escaped
and never parsed as matplotlib mathtext. Format: docs/report.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.errors import UsageError
from app.report.compare import compare
from app.report.data import RecordingData, load_segments, session_label
from app.report.html import render_html
from app.report.page import write_atomic
from app.report.tables import header_lines, summary_rows

SUFFIXES = (".html", ".png")


def check_out(out: Path) -> str:
    suffix = out.suffix.lower()
    if suffix not in SUFFIXES:
        raise UsageError(f"--out {out}: unsupported file type '{out.suffix or '(none)'}'; use .html or .png")
    if out.is_dir():
        raise UsageError(f"--out {out}: is a folder")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--out {out}: folder {parent} does not exist")
    return suffix


def _label(s: RecordingData) -> str:
    """A column's name: model and backend; a later segment of a recording, what changed at its start."""
    if s.segmented and s.segment is not None and s.segment.number > 1 and s.segment.changes:
        return s.segment.change
    return session_label(s.summary)


@dataclass(frozen=True)
class ReportWritten:
    """What `build_report` wrote: the file, its size, and how many recordings and parts it shows."""

    out: Path
    sessions: int  # columns: a recording cut at its switches gives one per part
    recordings: int
    bytes: int
    warnings: tuple[str, ...] = ()  # one line per recording with lines that could not be read (for stderr)


def build_report(paths: list[Path], out: Path) -> ReportWritten:
    """Read the recordings, draw, write `out` (.html or .png); returns what was written."""
    suffix = check_out(Path(out))
    sessions: list[RecordingData] = []
    for p in paths:  # a recording that spans switches is one column per segment
        sessions += load_segments(Path(p), len(sessions))
    labels = [_label(s) for s in sessions]
    for s, label in zip(sessions, labels, strict=True):
        duplicate = labels.count(label) > 1
        s.label = f"#{s.index + 1} {label}" + (f" [{s.path.stem}]" if duplicate else "")
    comparisons = compare(sessions)
    from app.report import plots as report_plots  # matplotlib: only when a report is drawn

    if suffix == ".png":
        header = [header_lines(s, files=len(paths)) for s in sessions]
        data = report_plots.overview_png(sessions, summary_rows(sessions, comparisons), comparisons, header)
    else:
        from app.report import numerics as report_numerics
        from app.report import ops as report_ops

        figures = report_plots.html_figures(sessions) + report_ops.html_figures(sessions)
        sections = report_numerics.html_sections(sessions)
        data = render_html(sessions, comparisons, figures, sections).encode("utf-8")
    write_atomic(Path(out), data)
    unreadable = dict.fromkeys(s.unreadable for s in sessions if s.unreadable)  # once per file, not per part
    return ReportWritten(Path(out), len(sessions), len(paths), len(data), tuple(unreadable))
