"""A recording cut into segments at every change of what runs: a switch (threads, model, delegate,
options), a fallback, a new source, an A/B comparison started or ended. Each segment is one
configuration, so `report` gives it a column of its own and Review lists it; a median over two
configurations describes neither. Qt-free and matplotlib-free (the report and Review share it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.backends.describe import backend_words, nodes_delegated_text
from app.recording.writer import cell_number, original_text

# Events after which something else runs. `open` starts a new pipeline's session (after a source
# or A/B change, or at the start of bench); a segment that holds no inference is merged into the
# next, so an open right after a `source` event, or a fallback right after its switch, is one change.
SPLITS = ("open", "switch", "fallback", "source", "compare")
_SAME_EVENT_S = 1e-3  # the sidecar's `opened` times and the CSV's t_s are both written to the microsecond


@dataclass
class Segment:
    number: int  # 1, 2, ... in recorded order
    start_s: float  # t_s of the change that started it (the first row's for the first segment)
    end_s: float  # t_s of its last row
    changes: list[str]  # what changed at its start, in words ("threads 2→1", "fallback: ..."); [] for the first
    rows: list[dict] = field(default_factory=list)  # its rows (events and inferences), in time order
    facts: Mapping[str, Any] | None = None  # the delegate facts of the session it ran (sidecar), None when not recorded

    @property
    def inferences(self) -> list[dict]:
        return [r for r in self.rows if not r.get("event")]

    @property
    def change(self) -> str:
        return "; ".join(self.changes)


def change_text(kind: str, row: dict) -> str:
    """What an event changed, in words: 'threads 2→1', 'model a→b, delegate cpu→gpu', 'fallback: reason'."""
    message = original_text(row.get("message", ""))
    used = original_text(row.get("backend_used", ""))
    model = original_text(row.get("model", ""))
    if kind == "switch":
        changes, _, rest = message.partition(": ")
        if "→" in changes and rest:  # "threads 2→1: efficientnet_lite0 on cpu" (app/pipeline/worker.py)
            return changes
        return f"switch to {model} on {used}" if model else "switch"
    if kind == "open":
        return f"{model} on {used}" if model else "open"
    if kind == "fallback":
        return f"fell back to {used or 'cpu'}: {message}" if message else "fallback"
    if kind == "source":
        return message.replace("source switched to ", "source → ") or "source changed"
    return message or kind


def split_segments(rows: list[dict], meta: dict | None = None) -> list[Segment]:
    """Rows (read_recording's) in time order, cut at every change; rows without a time are left out."""
    timed = [r for r in rows if not math.isnan(cell_number(r.get("t_s")))]
    timed.sort(key=lambda r: cell_number(r["t_s"]))  # stable: rows written at one instant keep their order
    if not timed:
        return []
    segments = [Segment(1, cell_number(timed[0]["t_s"]), cell_number(timed[0]["t_s"]), [])]
    opened_at: list[float | None] = [None]  # per segment: the open/switch that started its session
    for r in timed:
        t, kind = cell_number(r["t_s"]), original_text(r.get("event", ""))
        current = segments[-1]
        if kind in SPLITS:
            if current.inferences:
                current = Segment(len(segments) + 1, t, t, [])
                segments.append(current)
                opened_at.append(None)
            if kind in ("open", "switch"):
                opened_at[-1] = t
            # An open describes what runs: a change only when nothing else started the segment (after a
            # source or A/B change the new pipeline opens the same model; the first open changed nothing).
            if kind != "open" or (len(segments) > 1 and not current.changes):
                current.changes.append(change_text(kind, r))
        current.rows.append(r)
        current.end_s = t
    if not segments[-1].inferences and len(segments) > 1:  # trailing events (stop): the last segment's
        tail = segments.pop()
        opened_at.pop()
        segments[-1].rows += tail.rows
        segments[-1].end_s = tail.end_s
    if len(segments) == 1:
        segments[0].changes = []
    _attach_facts(segments, opened_at, meta or {})
    return segments


def _attach_facts(segments: list[Segment], opened_at: list[float | None], meta: dict) -> None:
    """Each segment's delegate facts: the sidecar's `opened` entry of its session (recordings since
    2026-12), else the `sessions` map when it has exactly one session per open/switch in order."""
    opened = [o for o in meta.get("opened", []) if isinstance(o, dict)] if isinstance(meta.get("opened"), list) else []
    raw_sessions = meta.get("sessions")
    sessions: dict[str, Any] = raw_sessions if isinstance(raw_sessions, dict) else {}
    facts_in_order = [f for f in sessions.values() if isinstance(f, dict)]
    for i, (segment, at) in enumerate(zip(segments, opened_at, strict=True)):
        found = None
        if opened:
            moment = segment.start_s if at is None else at
            before = [o for o in opened if cell_number(o.get("t_s")) <= moment + _SAME_EVENT_S]
            if before and isinstance(before[-1].get("delegate"), dict):
                found = before[-1]["delegate"]
        elif len(facts_in_order) == len(segments):
            found = facts_in_order[i]
        elif len(facts_in_order) == 1 and len(segments) == 1:
            found = facts_in_order[0]
        segment.facts = found


def delegate_facts(facts: Mapping[str, Any] | None, rows: list[dict]) -> list[tuple[str, str]]:
    """The delegation facts of one segment as (name, value) lines, for report headers and Review:
    backend, threads, nodes delegated and partitions, ops left on CPU, init and first inference."""
    threads = _distinct(rows, "threads")
    out: list[tuple[str, str]] = []
    if facts is None:
        backends = _distinct(rows, "backend_used")
        out.append(("backend", " / ".join(backends) or "?"))
        out.append(("threads", " / ".join(threads) or "not recorded"))
        out.append(("nodes delegated", "not recorded (no sidecar facts for this part)"))
        return out
    requested, used = str(facts.get("requested", "?")), str(facts.get("used", "?"))
    # A software "GPU" said as every view says it: "GPU (software: SwiftShader)".
    said = backend_words(used, True, str(facts.get("adapter") or "")) if facts.get("software") else used
    out.append(("backend", said if requested == used else f"{requested}→{said} (FALLBACK)"))
    out.append(("runs on", str(facts.get("accelerator") or "not reported")))
    if facts.get("fallback_reason"):
        out.append(("fallback", str(facts["fallback_reason"])))
    if facts.get("adapter"):
        out.append(("adapter", str(facts["adapter"]) + (" [SOFTWARE RENDERER]" if facts.get("software") else "")))
    raw_options = facts.get("options")
    options: dict[str, Any] = raw_options if isinstance(raw_options, dict) else {}
    out.append(("threads", " / ".join(threads) or str(options.get("threads", "not recorded"))))
    if facts.get("nodes_total") is not None:
        nodes = nodes_delegated_text(facts.get("nodes_delegated"), facts["nodes_total"], facts.get("partitions"))
    elif facts.get("fully_accelerated") is not None:
        nodes = "fully accelerated" if facts["fully_accelerated"] else "partly accelerated (nodes not reported)"
    else:
        nodes = "not reported by the runtime"
    out.append(("nodes delegated", nodes))
    cpu_ops = facts.get("cpu_ops") if isinstance(facts.get("cpu_ops"), list) else []
    out.append(("ops left on CPU", ", ".join(map(str, cpu_ops)) if cpu_ops else "none"))
    timing = [_ms(facts.get(key)) for key in ("init_ms", "first_inference_ms")]
    if any(t != "?" for t in timing):
        out.append(("init / first inference", f"{timing[0]} / {timing[1]} ms"))
    if "init_mb" in facts:  # recordings since 2026-12: what opening the session added to the resident set
        init = _ms(facts["init_mb"])
        out.append(("init memory", f"{init} MB" if init != "?" else "not measured"))
    return out


def _ms(value: object) -> str:
    """A sidecar's milliseconds as text; anything but a finite number (the sidecar is untrusted) is '?'."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "?"
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float
        return "?"
    return f"{number:.1f}" if math.isfinite(number) else "?"


def _distinct(rows: list[dict], column: str) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        if not r.get("event"):
            value = original_text(r.get(column, ""))
            if value:
                seen[value] = None
    return list(seen)
