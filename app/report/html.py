"""`report`'s HTML page: one self-contained file, plots embedded as PNG data URIs. Everything
that comes from a user file (labels, messages, paths, model names) is HTML-escaped."""

from __future__ import annotations

import base64
import re
from datetime import datetime
from typing import Any

from app.backends.describe import backend_words, nodes_delegated_text
from app.coverage import read_coverage
from app.coverage.text import left_on_cpu_lines
from app.recording.writer import sidecar_path
from app.report.compare import MINUS, Comparison
from app.report.data import RecordingData
from app.report.page import BASE_CSS, esc
from app.report.tables import comparison_rows, summary_rows

_CSS = (
    BASE_CSS
    + """
.swatch{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin-right:.4em;vertical-align:-.1em}
.fallback{color:#b00020;font-weight:600}
.headline{font-size:1.1em;background:#f4f8fb;border-left:4px solid #1f77b4;padding:.5em 1em;margin:.4em 0}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
code{background:#f4f4f4;padding:0 .2em}
"""
)


_e = esc


def _table(head: list[str], rows: list[tuple[str, list[str]]], swatches: list[str] | None = None) -> str:
    cells = []
    for i, h in enumerate(head):
        swatch = f'<span class="swatch" style="background:{swatches[i - 1]}"></span>' if swatches and i else ""
        cells.append(f"<th>{swatch}{_e(h)}</th>")
    out = ["<table><thead><tr>", *cells, "</tr></thead><tbody>"]
    for name, values in rows:
        out.append(f"<tr><th>{_e(name)}</th>")
        for v in values:
            cls = ' class="fallback"' if "FALLBACK" in v else (' class="num"' if _numeric(v) else "")
            out.append(f"<td{cls}>{_e(v)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _numeric(text: str) -> bool:
    """A figure ("13.09 / 16.65", "2.26× faster", "−8%"): right-aligned; a sentence ("61 of 61 nodes
    delegated in 1 partition") is text, left-aligned."""
    figure = bool(text) and (text[0].isdigit() or text[0] in "–" + MINUS + "+±") and "%" not in text[:-1]
    return figure and len(re.findall(r"[^\W\d_]+", text)) <= 1


def _facts_html(s: RecordingData, events: list) -> str:
    """A recording's sidecar facts and its events: the two tables of its block under Recordings."""
    meta = s.meta
    if not meta:
        return f"<p class='note'>No sidecar ({_e(sidecar_path(s.path).name)} missing or unreadable).</p>"
    items: list[tuple[str, str]] = []
    for key in ("started", "complete", "error", "rows", "lost_rows"):
        if key in meta:
            items.append((key, str(meta[key])))
    machine = meta.get("machine")
    if isinstance(machine, dict):
        items.append(("machine", ", ".join(f"{k} {v}" for k, v in machine.items())))
    packages = meta.get("packages")
    if isinstance(packages, dict):
        items.append(("packages", ", ".join(f"{k} {v}" for k, v in packages.items())))
    models = meta.get("models")
    if isinstance(models, dict):
        items += [_model_item(model_id, m) for model_id, m in models.items() if isinstance(m, dict)]
    sessions = meta.get("sessions")
    if isinstance(sessions, dict):
        for sid, f in sessions.items():
            if isinstance(f, dict):
                items += _session_items(sid, f)
    settings = meta.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("bench"), dict):
        items.append(("bench settings", ", ".join(f"{k} {v}" for k, v in settings["bench"].items())))
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in items)
    event_rows = "".join(
        f"<tr><td class='num'>{e.t_s:.3f}</td><td>{_e(e.kind)}</td><td>{_e(e.text)}</td></tr>" for e in events
    )
    return (
        f"<table><tbody>{rows}</tbody></table>"
        f"<table><thead><tr><th>t (s)</th><th>event</th><th>detail</th></tr></thead><tbody>{event_rows}</tbody></table>"
    )


def _model_item(model_id: object, m: dict[str, Any]) -> tuple[str, str]:
    """One model of the sidecar as a facts row: its name, input, classes, hash and path."""
    raw_input = m.get("input")
    inp: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    shape = "x".join(str(d) for d in inp.get("shape", []) or [])
    return (
        f"model {model_id}",
        f"{m.get('name', '?')}: {shape} {inp.get('dtype', '')}, {m.get('classes', '?')} classes, "
        f"sha256 {str(m.get('sha256', '?'))[:16]}…, {m.get('path', '')}",
    )


def _session_items(sid: object, f: dict[str, Any]) -> list[tuple[str, str]]:
    """One session of the sidecar as facts rows: its delegate, then each coverage it recorded."""
    used = str(f.get("used", "?"))
    if f.get("software"):  # a software "GPU", said as every view says it
        used = backend_words(used, True, str(f.get("adapter") or ""))
    parts = [f"{f.get('requested', '?')} → {used}", str(f.get("accelerator", ""))]
    if f.get("adapter"):
        parts.append(f"adapter {f['adapter']}" + (" [SOFTWARE RENDERER]" if f.get("software") else ""))
    if f.get("nodes_total") is not None:
        parts.append(nodes_delegated_text(f.get("nodes_delegated"), f["nodes_total"], f.get("partitions")))
    if f.get("cpu_ops"):
        parts.append("left on CPU kernels: " + ", ".join(map(str, f["cpu_ops"])))
    for key, name in (("init_ms", "init"), ("first_inference_ms", "first inference")):
        if isinstance(f.get(key), int | float):
            parts.append(f"{name} {f[key]:.1f} ms")
    if f.get("fallback_reason"):
        parts.append(f"FALLBACK: {f['fallback_reason']}")
    items = [(f"delegate (session {sid})", ", ".join(p for p in parts if p))]
    for key, title in (("coverage", "coverage"), ("predicted", "Core ML delegate (predicted)")):
        coverage = read_coverage(f.get(key))
        if coverage is not None:
            left = left_on_cpu_lines(coverage, limit=8)
            text = coverage.log or coverage.summary()
            if coverage.log and coverage.log_source:  # a measured delegate's line: beside its summary
                text = f"{coverage.summary()}. Log line ({coverage.log_source}): {coverage.log}"
            if left:
                text += " Left on the CPU: " + "; ".join(left)
            items.append((f"{title} (session {sid})", text))
    return items


def _count_text(sessions: list[RecordingData]) -> str:
    files = len({s.path for s in sessions})
    text = f"{files} recording{'s' if files > 1 else ''}"
    return text + (f" in {len(sessions)} parts (cut at every switch)" if len(sessions) > files else "")


def render_html(
    sessions: list[RecordingData],
    comparisons: list[Comparison],
    figures: list[tuple[str, bytes, str]],
    sections: list[str] | None = None,
) -> str:
    """`sections`: HTML already escaped (the numerics tables), after the figures."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>Delegate Scope report: {_e(', '.join(dict.fromkeys(s.name for s in sessions)))}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Delegate Scope report</h1>",
        f"<p class='sub'>{_count_text(sessions)}, "
        f"generated {_e(datetime.now().astimezone().isoformat(timespec='seconds'))}</p>",
        *_headlines(sessions, comparisons),
        *_tables(sessions, comparisons),
    ]
    for title, png, caption in figures:
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>{_e(title)}</h2><img src='{uri}' alt='{_e(title)}'>")
        if caption:
            parts.append(f"<p class='note'>{_e(caption)}</p>")
    parts.extend(sections or ())
    parts += _recordings(sessions)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _headlines(sessions: list[RecordingData], comparisons: list[Comparison]) -> list[str]:
    """What a reader must see first: each comparison's sentence, every fallback, every damaged recording."""
    parts = [f"<p class='headline'>{_e(c.sentence)}</p>" for c in comparisons]
    for s in sessions:
        if s.summary.fallback:
            reasons = "; ".join(s.summary.fallback_reasons) or "requested backend differs from the one used"
            parts.append(f"<p class='fallback'>{_e(s.label)}: fell back ({_e(reasons)})</p>")
    for s in {str(s.path): s for s in sessions}.values():  # once per file, not per part
        for problem in (s.unreadable, s.stop_problem and f"{s.name}: {s.stop_problem}"):
            if problem:
                parts.append(f"<p class='fallback'>{_e(problem)}</p>")
    return parts


def _tables(sessions: list[RecordingData], comparisons: list[Comparison]) -> list[str]:
    """The summary table, and the comparison with the baseline when there is one, each with what it means."""
    swatches = [s.colour for s in sessions]
    parts = [
        "<h2>Summary</h2>",
        _table(["", *[s.label for s in sessions]], summary_rows(sessions, comparisons), swatches),
        "<p class='note'>Figures over the measured inferences (after bench's warm-up, when the recording has one). "
        "Inference fps: inferences per second between the first and last measured inference. Dropped frames: "
        "frame-id gaps between consecutive inferences of one source (frames captured but never inferred). "
        "Offload ratio: median process CPU time during an inference over its median wall time (≈ threads "
        "busy when the CPU does the work; below 1 when an accelerator does, or when the inference waited "
        "for a core: on the CPU backend, below 1 is always waiting).</p>",
    ]
    if any(s.segmented for s in sessions):
        parts.append(
            "<p class='note'>A recording that spans switches is cut into parts at every switch, fallback, "
            "source or A/B change: one column each, headed by what changed at its start and the delegation "
            "facts of the session it ran; a part is compared with the part before it.</p>"
        )
    if comparisons:
        parts.append("<h2>Compared with the baseline</h2>")
        parts.append(
            f"<p class='note'>Each column against the one named in its first row: the first column "
            f"({_e(sessions[0].label)}), or for a later part of a recording the part before it.</p>"
        )
        parts.append(_table(["", *[c.session.label for c in comparisons]], comparison_rows(comparisons), swatches[1:]))
    return parts


def _recordings(sessions: list[RecordingData]) -> list[str]:
    """The Recordings section: one block per file, its parts' events together."""
    parts = ["<h2>Recordings</h2>"]
    by_file: dict[str, list[RecordingData]] = {}
    for s in sessions:
        by_file.setdefault(str(s.path), []).append(s)
    for parts_of_file in by_file.values():
        s = parts_of_file[0]
        parts.append(
            f"<details><summary><span class='swatch' style='background:{s.colour}'></span>"
            f"{_e(s.path)}: machine, packages, models, every session's coverage, events</summary>"
            f"{_facts_html(s, [e for p in parts_of_file for e in p.events])}</details>"
        )
    return parts
