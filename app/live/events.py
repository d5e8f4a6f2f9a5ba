"""The pipeline's events, digested for the window: one plot marker per session opened, switched or fallen
back, the report of what really runs, and a status-bar line for what the user must know (a source lost,
a switch refused, a bad result). Qt-free: the window renders each `EventUpdate`; the marker texts of the
window's own commands are here too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.backends import DelegationReport
from app.backends.describe import backend_name, init_footprint_text, report_backend_words
from app.live.controller import LiveController
from app.model.labels import CHOSEN_LABELS_FLAG
from app.pipeline import Event, EventKind

_MARKER_EVENTS = {
    EventKind.OPEN,
    EventKind.SWITCH,
    EventKind.FALLBACK,
    EventKind.SWITCH_FAILED,
    EventKind.SOURCE_LOST,
    EventKind.SOURCE_RECONNECTED,
}
# bad_result: the model gave NaN/Inf scores, so no result was shown; without a message the
# overlay just went stale with no reason given (found by tests/ui/test_window_fuzz.py).
_STATUS_EVENTS = _MARKER_EVENTS | {EventKind.SOURCE_ENDED, EventKind.ERROR, EventKind.BAD_RESULT}


def marker_text(event: Event) -> str:
    """A session's marker says what runs and every change that opened it: a model loaded while Core ML falls
    back reads 'Core ML→CPU fallback · model a→b', not as if only the fallback happened (what runs comes
    first, as in 'CPU · model a→b': a label too long for its room is cut at its end)."""
    if event.kind in (EventKind.OPEN, EventKind.SWITCH, EventKind.FALLBACK) and event.report is not None:
        used = report_backend_words(event.report)  # a software GPU is said: 'GPU (software: SwiftShader)'
        model = event.model.name if event.model else ""
        if event.kind == EventKind.FALLBACK or event.report.requested != event.report.used:
            fallback = f"{backend_name(event.report.requested)}→{used} fallback"
            # The delegate change is the fallback's own 'requested→used'; the other changes follow it.
            changes = [c for c in (event.changes or "").split(", ") if c and not c.startswith("delegate ")]
            return " · ".join([fallback, *changes])
        return f"{used} · {event.changes}" if event.changes else f"{used} · {model}"
    return event.kind.replace("_", " ")


def labels_in_window_words(source: str, warnings: Sequence[str]) -> tuple[str, list[str]]:
    """The labels' source and warnings as the window says them: a file the user opened is 'labels file NAME',
    not the command line's '--labels PATH' (the model's wording serves both; the full path is in the
    Labels button's tooltip)."""
    prefix = CHOSEN_LABELS_FLAG + " "
    if not source.startswith(prefix):
        return source, list(warnings)
    said = f"labels file {Path(source.removeprefix(prefix)).name}"
    return said, [warning.replace(source, said) for warning in warnings]


def source_marker(spec: str) -> str:
    """A source switch: the file's name, or the kind of a camera or stream (never a stream's address)."""
    return f"source: {Path(spec).name if ':' not in spec else spec.split(':', 1)[0]}"


def compare_marker(b_model: str | None, b_delegate: str | None) -> str:
    """A/B on (with B's delegate and model) or off (None)."""
    if b_model is None or b_delegate is None:
        return "A/B off"
    return f"A/B with {backend_name(b_delegate)} · {Path(b_model).stem}"


@dataclass(frozen=True)
class ShownReport:
    """What really runs, for the delegation panel: the report, the model's name, its labels' source and
    warnings, and the last switch's cost ("" when the event gave none)."""

    report: DelegationReport
    model: str
    labels: str
    label_warnings: list[str]
    switch_cost: str


@dataclass(frozen=True)
class EventUpdate:
    markers: list[tuple[str, float]] = field(default_factory=list)  # (text, monotonic time of the event)
    # One per marker, in its order: the init footprint of the session it opened ("init 33 MB"), for the
    # memory plot's label on that marker's line; "" where the marker opened no session (a source lost).
    memory_labels: list[str] = field(default_factory=list)
    reports: list[ShownReport] = field(default_factory=list)  # oldest first: the last one is what runs
    model_running: str | None = None  # a switch was refused: the model box shows this one again
    status: list[str] = field(default_factory=list)  # status-bar lines, oldest first


class EventDigest:
    """Reads the controller's new events at each poll."""

    def __init__(self, live: LiveController) -> None:
        self._live = live
        self._last_seq, self._generation = 0, 0  # events_since() position, of which pipeline
        self._marked_session: int | None = None
        self._model_label = ""
        self._labels: tuple[str, list[str]] = ("", [])  # the running model's labels: source, warnings

    def poll(self) -> EventUpdate | None:
        """What the events since the last poll change; None when there are none."""
        live = self._live
        if live.generation != self._generation:  # a new pipeline numbers its events from 1 again
            self._generation, self._last_seq = live.generation, 0
        events = live.events_since(self._last_seq)
        if not events:
            return None
        self._last_seq = events[-1].seq
        return self.digest(events)

    def digest(self, events: list[Event]) -> EventUpdate:
        update = EventUpdate()
        for event in events:
            # One marker per session: its open/switch event and the fallback that follows carry
            # the same session id.
            marked = event.session_id is not None and event.session_id == self._marked_session
            if event.kind in _MARKER_EVENTS and not marked:
                update.markers.append((marker_text(event), event.at))
                update.memory_labels.append(init_footprint_text(event.memory, detail=False) if event.memory else "")
                self._marked_session = event.session_id
            if event.report is not None:
                if event.model:
                    self._model_label = event.model.name
                    self._labels = labels_in_window_words(event.model.labels, event.model.label_warnings)
                parts = [f"{k} {v:.0f} ms" for k, v in (("close", event.close_ms), ("open", event.open_ms),
                         ("first inference", event.first_inference_ms)) if v is not None]  # fmt: skip
                cost = "Last switch: " + ", ".join(parts) if parts else ""
                update.reports.append(ShownReport(event.report, self._model_label, *self._labels, cost))
            if event.kind == EventKind.SWITCH_FAILED:  # the box showed the refused model: show what runs
                update = replace(update, model_running=str(self._live.config().model))
            if event.kind in _STATUS_EVENTS and event.kind != EventKind.OPEN:
                update.status.append(event.message)
        return update
