"""`delegate-scope report`: recorded sessions turned into one HTML page (plots embedded) or one PNG.

Reads recordings (docs/csv-format.md), summarises each (median/p95 per stage, rates, CPU,
offload ratio, dropped frames, labels), compares every session with the first one (the
baseline) and draws the plots (app/report_plots.py, matplotlib, imported only here and only
when a report is drawn). Everything that comes from a user file (labels, messages, paths,
model names) is HTML-escaped and never parsed as matplotlib mathtext. Format: docs/report.md.
"""

from __future__ import annotations

import base64
import html
import math
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from app.coverage import read_coverage
from app.coverage.text import left_on_cpu_lines
from app.errors import UsageError
from app.recording import read_session

SUFFIXES = (".html", ".png")
STAGES = ("queue", "preprocess", "inference", "postprocess", "end_to_end")
STAGE_NAMES = {
    "queue": "queue",
    "preprocess": "preprocess",
    "inference": "inference",
    "postprocess": "postprocess",
    "end_to_end": "end to end",
}
# One colour per session (matplotlib's tab10 order, distinguishable for most colour-blind readers).
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
MINUS = "\u2212"


def number(text: str | None) -> float:
    """A CSV cell as a float; empty, malformed or infinite cells are NaN."""
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def original_text(cell: str) -> str:
    """Undo the recorder's spreadsheet neutralisation (one `'` before a formula character)."""
    if cell.startswith("'") and cell[1:].startswith(_FORMULA_PREFIXES):
        return cell[1:]
    return cell


def _median(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(np.median(values)) if values.size else math.nan


def _p95(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(np.percentile(values, 95)) if values.size else math.nan


@dataclass
class Event:
    t_s: float
    kind: str
    text: str  # short label for the plots ("fallback: Core ML needs macOS")


@dataclass
class SessionData:
    """One recording, read and summarised."""

    path: Path
    index: int
    colour: str
    meta: dict
    skipped_lines: int
    inferences: list[dict]  # every inference row, in time order
    events: list[Event]
    measured_from: float | None  # t_s of bench's `measure` event (warm-up done), if any
    label: str = ""  # legend text: model + backend
    t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    summary: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    def column(self, name: str, rows: list[dict] | None = None) -> np.ndarray:
        return np.array([number(r.get(name)) for r in (self.inferences if rows is None else rows)], dtype=float)

    @property
    def measured(self) -> list[dict]:
        """The rows the figures summarise: after bench's warm-up when there was one, else all."""
        if self.measured_from is None:
            return self.inferences
        rows = [r for r in self.inferences if number(r["t_s"]) >= self.measured_from]
        return rows or self.inferences


def load_session(path: Path, index: int) -> SessionData:
    """Read one recording; any problem is a UsageError with one plain line."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir():
        raise UsageError(f"{path}: is a folder, not a recording (give the .csv file)")
    try:
        session = read_session(path)
    except ValueError:
        raise UsageError(f"{path}: not a Delegate Scope recording (the header is not the CSV format's)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    rows = [r for r in session.rows if not math.isnan(number(r.get("t_s")))]
    inferences = [r for r in rows if not r.get("event")]
    if not inferences:
        what = f"{len(rows)} event row{'s' if len(rows) != 1 else ''} and" if rows else ""
        raise UsageError(f"{path}: empty recording ({what} no inference rows): nothing to report")
    inferences.sort(key=lambda r: number(r["t_s"]))
    events: list[Event] = []
    measured_from = None
    for r in rows:
        kind = original_text(r["event"])
        if not kind:
            continue
        t = number(r["t_s"])
        if kind == "measure":
            measured_from = t
        events.append(Event(t, kind, _event_text(kind, r)))
    meta = session.metadata if isinstance(session.metadata, dict) else {}
    data = SessionData(
        path, index, COLOURS[index % len(COLOURS)], meta, session.skipped_lines, inferences, events, measured_from
    )
    data.t = data.column("t_s")
    data.summary = summarise(data)
    return data


def _event_text(kind: str, row: dict) -> str:
    message = original_text(row.get("message", ""))
    if kind == "measure":
        return "warm-up done"
    if kind in ("open", "switch"):
        used = original_text(row.get("backend_used", ""))
        model = original_text(row.get("model", ""))
        text = f"{kind}: {model} on {used}" if model else f"{kind}: {used}"
    elif kind == "stop":
        text = "stop"
    else:
        text = f"{kind}: {message}" if message else kind
    return text if len(text) <= 48 else text[:47] + "…"


# ---- summary of one session --------------------------------------------------------------


def dropped_frames(rows: list[dict]) -> int:
    """Frames captured but never inferred: frame_id gaps between consecutive inferences of one source.

    The capture thread overwrites a frame that inference did not take in time; frame ids count on,
    so a gap of k ids between two inferred frames is k frames dropped. A new source (or an id that
    goes backwards) starts counting afresh."""
    dropped = 0
    previous: tuple[str, float] | None = None
    for r in rows:
        source, frame = r.get("source", ""), number(r.get("frame_id"))
        if math.isnan(frame):
            previous = None
            continue
        if previous is not None and previous[0] == source and frame > previous[1] + 1:
            dropped += int(frame - previous[1] - 1)
        previous = (source, frame)
    return dropped


def _distinct(rows: list[dict], column: str) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        value = original_text(r.get(column, ""))
        if value:
            seen[value] = None
    return list(seen)


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def summarise(s: SessionData) -> dict:
    rows = s.measured
    t = s.column("t_s", rows)
    span = float(t[-1] - t[0]) if len(t) > 1 else math.nan
    stages = {}
    for stage in STAGES:
        values = s.column(f"{stage}_ms", rows)
        stages[stage] = {"median": _median(values), "p95": _p95(values)}
    cpu_ms = _median(s.column("inference_cpu_ms", rows))
    inf_ms = stages["inference"]["median"]
    dropped = dropped_frames(rows)
    pairs = []
    for r in s.inferences:
        pair = (original_text(r.get("backend_requested", "")), original_text(r.get("backend_used", "")))
        if pair not in pairs:
            pairs.append(pair)
    fallback_reasons = []
    for facts in _dict(s.meta.get("sessions")).values():
        if isinstance(facts, dict) and facts.get("fallback_reason"):
            fallback_reasons.append(str(facts["fallback_reason"]))
    fallback_reasons += [e.text.split(": ", 1)[-1] for e in s.events if e.kind == "fallback"]
    software = any(isinstance(f, dict) and f.get("software") for f in _dict(s.meta.get("sessions")).values())
    labels = Counter(original_text(r.get("top1_label", "")) for r in s.inferences)
    labels.pop("", None)
    lost = s.meta.get("lost_rows")
    return {
        "inferences": len(rows),
        "inferences_total": len(s.inferences),
        "warmup": len(s.inferences) - len(rows),
        "duration_s": float(s.t[-1] - s.t[0]) if len(s.t) > 1 else 0.0,
        "span_s": span,
        # inferences per second between the first and the last measured inference
        "inference_fps": (len(rows) - 1) / span if span and span > 0 else math.nan,
        "capture_fps": _median(s.column("capture_fps", rows)),
        "stages": stages,
        "cpu_ms": cpu_ms,
        "offload_ratio": cpu_ms / inf_ms if inf_ms and inf_ms > 0 and not math.isnan(cpu_ms) else math.nan,
        "process_cpu_pct": _median(s.column("process_cpu_pct", rows)),
        "system_cpu_pct": _median(s.column("system_cpu_pct", rows)),
        "rss_mb": _median(s.column("rss_mb", rows)),
        "gpu_util_pct": _median(s.column("gpu_util_pct", rows)),
        "dropped": dropped,
        "dropped_share": dropped / (dropped + len(rows)) if rows else math.nan,
        "models": _distinct(s.inferences, "model"),
        "sources": _distinct(s.inferences, "source"),
        "threads": _distinct(s.inferences, "threads"),
        "throttle_ms": _distinct(s.inferences, "throttle_ms"),
        "backends": pairs,
        "fallback": any(req and used and req != used for req, used in pairs) or bool(fallback_reasons),
        "fallback_reasons": list(dict.fromkeys(fallback_reasons)),
        "software_gpu": software,
        "labels": labels,
        "lost_rows": lost if isinstance(lost, int) else None,
        "skipped_lines": s.skipped_lines,
        "complete": s.meta.get("complete") if isinstance(s.meta.get("complete"), bool) else None,
        "error": str(s.meta["error"]) if s.meta.get("error") else None,
    }


def backend_text(summary: dict) -> str:
    parts = []
    for requested, used in summary["backends"]:
        if requested and used and requested != used:
            parts.append(f"{requested}→{used}")
        else:
            parts.append(used or requested or "?")
    return " / ".join(parts) + (" (software GPU)" if summary.get("software_gpu") else "")


def session_label(summary: dict) -> str:
    text = f"{' / '.join(summary['models']) or '?'} on {backend_text(summary)}"
    return text + (" (fallback)" if summary["fallback"] else "")


# ---- comparison ----------------------------------------------------------------------------


def ratio_text(base: float, other: float, better: str, worse: str) -> str:
    """For a lower-is-better figure: "9.3× faster" / "1.5× slower" (base / other)."""
    if any(math.isnan(v) for v in (base, other)) or base <= 0 or other <= 0:
        return "n/a"
    r = base / other
    if abs(r - 1) < 0.005:
        return "same"
    return f"{r:.3g}× {better}" if r > 1 else f"{1 / r:.3g}× {worse}"


def change_text(base: float, other: float) -> str:
    """Relative change from the baseline: "−96%", "+12%"."""
    if any(math.isnan(v) for v in (base, other)) or base == 0:
        return "n/a"
    pct = (other - base) / base * 100
    rounded = f"{abs(pct):.0f}"
    if rounded == "0":
        return "±0%"
    return f"{MINUS if pct < 0 else '+'}{rounded}%"


def _replayable(source: str) -> bool:
    """Frame ids name the same pixels across runs of a video, image folder, demo or synthetic source."""
    return bool(source) and not source.startswith("camera")


def label_agreement(a: SessionData, b: SessionData) -> dict:
    """Top-1 agreement on the frames both sessions inferred (same replayable source, same frame id)."""

    def by_frame(s: SessionData) -> dict[tuple[str, int], str]:
        out = {}
        for r in s.inferences:
            frame, source = number(r.get("frame_id")), original_text(r.get("source", ""))
            if not math.isnan(frame) and _replayable(source):
                out[(source, int(frame))] = original_text(r.get("top1_label", ""))
        return out

    fa, fb = by_frame(a), by_frame(b)
    common = fa.keys() & fb.keys()
    agree = sum(fa[k] == fb[k] for k in common)
    la, lb = a.summary["labels"], b.summary["labels"]
    na, nb = sum(la.values()), sum(lb.values())
    overlap = sum(min(la[k] / na, lb[k] / nb) for k in la.keys() & lb.keys()) if na and nb else math.nan
    if common:
        text = f"{agree / len(common):.1%} of {len(common)} common frames"
    elif any(s.startswith("camera") for s in a.summary["sources"] + b.summary["sources"]):
        text = "not comparable (live camera: frame ids are not the same images)"
    else:
        text = "not comparable (no common frames)"
    return {"frames": len(common), "agree": agree, "text": text, "distribution_overlap": overlap}


def compare(sessions: list[SessionData]) -> list[dict]:
    """Each session after the first against the first (the baseline)."""
    base = sessions[0]
    b = base.summary
    out = []
    for s in sessions[1:]:
        o = s.summary
        inf = ratio_text(b["stages"]["inference"]["median"], o["stages"]["inference"]["median"], "faster", "slower")
        e2e = ratio_text(b["stages"]["end_to_end"]["median"], o["stages"]["end_to_end"]["median"], "faster", "slower")
        p95 = ratio_text(b["stages"]["inference"]["p95"], o["stages"]["inference"]["p95"], "lower", "higher")
        fps = ratio_text(o["inference_fps"], b["inference_fps"], "higher", "lower")  # higher is better
        cpu = change_text(b["cpu_ms"], o["cpu_ms"])
        proc = change_text(b["process_cpu_pct"], o["process_cpu_pct"])
        agreement = label_agreement(base, s)
        sentence = f"{session_label(o)}: inference {inf} than {session_label(b)}, CPU time per inference {cpu}"
        if agreement["frames"]:
            sentence += f", top-1 label agrees on {agreement['agree'] / agreement['frames']:.0%} of common frames"
        out.append(
            {
                "session": s,
                "inference": inf,
                "end_to_end": e2e,
                "inference_p95": p95,
                "fps": fps,
                "cpu_ms": cpu,
                "process_cpu": proc,
                "agreement": agreement,
                "sentence": sentence,
            }
        )
    return out


# ---- formatting ----------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 2, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}{unit}"


def top_labels_text(labels: Counter, n: int = 3) -> str:
    total = sum(labels.values())
    return ", ".join(f"{label} {count / total:.0%}" for label, count in labels.most_common(n)) if total else "–"


def summary_rows(sessions: list[SessionData], comparisons: list[dict]) -> list[tuple[str, list[str]]]:
    """The summary table as (row name, one cell per session); plain text, escaped by the caller."""
    agreement = {c["session"].index: c["agreement"]["text"] for c in comparisons}
    rows: list[tuple[str, list[str]]] = []

    def add(name: str, cells: list[str]) -> None:
        rows.append((name, cells))

    ss = [s.summary for s in sessions]
    add("recording", [s.name for s in sessions])
    add("model", [" / ".join(x["models"]) or "–" for x in ss])
    add("backend", [backend_text(x) + (" FALLBACK" if x["fallback"] else "") for x in ss])
    add("source", [" / ".join(x["sources"]) or "–" for x in ss])
    add(
        "inferences",
        [f"{x['inferences']}" + (f" (+{x['warmup']} warm-up)" if x["warmup"] else "") for x in ss],
    )
    add("duration", [fmt(x["duration_s"], 1, " s") for x in ss])
    add("inference fps", [fmt(x["inference_fps"], 1) for x in ss])
    add("capture fps (median)", [fmt(x["capture_fps"], 1) for x in ss])
    add("dropped frames", [f"{x['dropped']} ({fmt(x['dropped_share'] * 100, 0, '%')})" for x in ss])
    for stage in STAGES:
        add(
            f"{STAGE_NAMES[stage]} ms median / p95",
            [f"{fmt(x['stages'][stage]['median'])} / {fmt(x['stages'][stage]['p95'])}" for x in ss],
        )
    add("CPU ms per inference (median)", [fmt(x["cpu_ms"]) for x in ss])
    add("offload ratio (CPU ms / inference ms)", [fmt(x["offload_ratio"]) for x in ss])
    add("process CPU % of machine (median)", [fmt(x["process_cpu_pct"], 1) for x in ss])
    add("top-1 labels", [top_labels_text(x["labels"]) for x in ss])
    if len(sessions) > 1:
        add("top-1 agreement with #1", ["baseline"] + [agreement[s.index] for s in sessions[1:]])
    add(
        "lost rows / skipped lines",
        [f"{'?' if x['lost_rows'] is None else x['lost_rows']} / {x['skipped_lines']}" for x in ss],
    )
    return rows


def comparison_rows(comparisons: list[dict]) -> list[tuple[str, list[str]]]:
    """Comparison table: one row per figure, one column per non-baseline session."""
    if not comparisons:
        return []
    return [
        ("inference (median)", [c["inference"] for c in comparisons]),
        ("inference p95", [c["inference_p95"] for c in comparisons]),
        ("end to end (median)", [c["end_to_end"] for c in comparisons]),
        ("inference fps", [c["fps"] for c in comparisons]),
        ("CPU time per inference", [c["cpu_ms"] for c in comparisons]),
        ("process CPU %", [c["process_cpu"] for c in comparisons]),
        ("top-1 agreement", [c["agreement"]["text"] for c in comparisons]),
        (
            "top-1 label distribution overlap",
            [fmt(c["agreement"]["distribution_overlap"] * 100, 0, "%") for c in comparisons],
        ),
    ]


# ---- output --------------------------------------------------------------------------------


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


def _write_atomic(out: Path, data: bytes) -> None:
    """Write beside the target and rename: a failed report never leaves half a file."""
    parent = out.parent if str(out.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None


def build_report(paths: list[Path], out: Path) -> dict:
    """Read the recordings, draw, write `out` (.html or .png); returns what was written."""
    suffix = check_out(Path(out))
    sessions = [load_session(Path(p), i) for i, p in enumerate(paths)]
    labels = [session_label(s.summary) for s in sessions]
    for s, label in zip(sessions, labels, strict=True):
        duplicate = labels.count(label) > 1
        s.label = f"#{s.index + 1} {label}" + (f" [{s.path.stem}]" if duplicate else "")
    comparisons = compare(sessions)
    from app import report_plots  # matplotlib: only when a report is drawn

    if suffix == ".png":
        data = report_plots.overview_png(sessions, summary_rows(sessions, comparisons), comparisons)
    else:
        figures = report_plots.html_figures(sessions)
        data = render_html(sessions, comparisons, figures).encode("utf-8")
    _write_atomic(Path(out), data)
    return {"out": str(out), "sessions": len(sessions), "bytes": len(data)}


# ---- HTML ----------------------------------------------------------------------------------

_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:2em auto;max-width:1250px;
color:#222;padding:0 1em;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.35em .7em;text-align:left;vertical-align:top}
thead th{background:#f4f6f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafbfc}
.swatch{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin-right:.4em;vertical-align:-.1em}
.fallback{color:#b00020;font-weight:600}
.headline{font-size:1.1em;background:#f4f8fb;border-left:4px solid #1f77b4;padding:.5em 1em;margin:.4em 0}
img{max-width:100%;height:auto;display:block;margin:.8em 0}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
.note{color:#555;font-size:.9em}code{background:#f4f4f4;padding:0 .2em}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


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
    return bool(text) and (text[0].isdigit() or text[0] in "–" + MINUS + "+±") and "%" not in text[:-1]


def _facts_html(s: SessionData) -> str:
    meta = s.meta
    items: list[tuple[str, str]] = []
    if not meta:
        return f"<p class='note'>No sidecar ({_e(s.path.with_suffix('.json').name)} missing or unreadable).</p>"
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
        for model_id, m in models.items():
            if isinstance(m, dict):
                inp = m.get("input") if isinstance(m.get("input"), dict) else {}
                shape = "x".join(str(d) for d in inp.get("shape", []) or [])
                items.append(
                    (
                        f"model {model_id}",
                        f"{m.get('name', '?')}: {shape} {inp.get('dtype', '')}, {m.get('classes', '?')} classes, "
                        f"sha256 {str(m.get('sha256', '?'))[:16]}…, {m.get('path', '')}",
                    )
                )
    sessions = meta.get("sessions")
    if isinstance(sessions, dict):
        for sid, f in sessions.items():
            if not isinstance(f, dict):
                continue
            parts = [f"{f.get('requested', '?')} → {f.get('used', '?')}", str(f.get("accelerator", ""))]
            if f.get("adapter"):
                parts.append(f"adapter {f['adapter']}" + (" [SOFTWARE RENDERER]" if f.get("software") else ""))
            if f.get("nodes_total") is not None:
                parts.append(
                    f"{f.get('nodes_delegated', '?')} of {f['nodes_total']} nodes delegated"
                    + (f" in {f['partitions']} partition(s)" if f.get("partitions") is not None else "")
                )
            if f.get("cpu_ops"):
                parts.append("left on CPU kernels: " + ", ".join(map(str, f["cpu_ops"])))
            for key, name in (("init_ms", "init"), ("first_inference_ms", "first inference")):
                if isinstance(f.get(key), int | float):
                    parts.append(f"{name} {f[key]:.1f} ms")
            if f.get("fallback_reason"):
                parts.append(f"FALLBACK: {f['fallback_reason']}")
            items.append((f"delegate (session {sid})", ", ".join(p for p in parts if p)))
            for key, title in (("coverage", "coverage"), ("predicted", "Core ML delegate (predicted)")):
                coverage = read_coverage(f.get(key))
                if coverage is not None:
                    left = left_on_cpu_lines(coverage, limit=8)
                    text = coverage.log or coverage.summary()
                    if left:
                        text += " Left on the CPU: " + "; ".join(left)
                    items.append((f"{title} (session {sid})", text))
    settings = meta.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("bench"), dict):
        items.append(("bench settings", ", ".join(f"{k} {v}" for k, v in settings["bench"].items())))
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in items)
    events = "".join(
        f"<tr><td class='num'>{e.t_s:.3f}</td><td>{_e(e.kind)}</td><td>{_e(e.text)}</td></tr>" for e in s.events
    )
    return (
        f"<table><tbody>{rows}</tbody></table>"
        f"<table><thead><tr><th>t (s)</th><th>event</th><th>detail</th></tr></thead><tbody>{events}</tbody></table>"
    )


def render_html(sessions: list[SessionData], comparisons: list[dict], figures: list[tuple[str, bytes, str]]) -> str:
    swatches = [s.colour for s in sessions]
    head = ["", *[s.label for s in sessions]]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>Delegate Scope report: {_e(', '.join(s.name for s in sessions))}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Delegate Scope report</h1>",
        f"<p class='sub'>{len(sessions)} session{'s' if len(sessions) > 1 else ''}, "
        f"generated {_e(datetime.now().astimezone().isoformat(timespec='seconds'))}</p>",
    ]
    for c in comparisons:
        parts.append(f"<p class='headline'>{_e(c['sentence'])}</p>")
    for s in sessions:
        if s.summary["fallback"]:
            reasons = "; ".join(s.summary["fallback_reasons"]) or "requested backend differs from the one used"
            parts.append(f"<p class='fallback'>{_e(s.label)}: fell back ({_e(reasons)})</p>")
    parts.append("<h2>Summary</h2>")
    parts.append(_table(head, summary_rows(sessions, comparisons), swatches))
    parts.append(
        "<p class='note'>Figures over the measured inferences (after bench's warm-up, when the recording has one). "
        "Inference fps: inferences per second between the first and last measured inference. Dropped frames: "
        "frame-id gaps between consecutive inferences of one source (frames captured but never inferred). "
        "Offload ratio: median process CPU time during an inference over its median wall time (≈ threads "
        "busy when the CPU does the work; far below 1 when an accelerator does).</p>"
    )
    if comparisons:
        parts.append(f"<h2>Compared with #1 ({_e(sessions[0].label)})</h2>")
        parts.append(
            _table(["", *[c["session"].label for c in comparisons]], comparison_rows(comparisons), swatches[1:])
        )
    for title, png, caption in figures:
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>{_e(title)}</h2><img src='{uri}' alt='{_e(title)}'>")
        if caption:
            parts.append(f"<p class='note'>{_e(caption)}</p>")
    parts.append("<h2>Sessions</h2>")
    for s in sessions:
        parts.append(
            f"<details><summary><span class='swatch' style='background:{s.colour}'></span>"
            f"{_e(s.label)}: {_e(s.path)}</summary>{_facts_html(s)}</details>"
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)
