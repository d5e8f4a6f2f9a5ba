"""The pipeline's events, shown: one plot marker per session opened, switched or fallen back,
the delegation panel's report of what really runs, and a status-bar line for what the user must
know (a source lost, a switch refused, a bad result)."""

from __future__ import annotations

from PySide6.QtWidgets import QStatusBar

from app.backends.describe import backend_name
from app.live.controller import LiveController
from app.pipeline import Event, EventKind
from app.ui.panels.controls import ControlPanel
from app.ui.panels.delegation import DelegationPanel
from app.ui.views.plots import LivePlots

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


class EventView:
    def __init__(
        self,
        live: LiveController,
        plots: LivePlots,
        delegation: DelegationPanel,
        controls: ControlPanel,
        status_bar: QStatusBar,
    ) -> None:
        self._live = live
        self._plots, self._delegation, self._controls, self._status_bar = plots, delegation, controls, status_bar
        self._last_seq, self._generation = 0, 0  # events_since() position, of which pipeline
        self._marked_session: int | None = None
        self._model_label = ""
        self._labels: tuple[str, list[str]] = ("", [])  # the running model's labels: source, warnings

    def poll(self) -> None:
        live = self._live
        if live.generation != self._generation:  # a new pipeline numbers its events from 1 again
            self._generation, self._last_seq = live.generation, 0
        events = live.events_since(self._last_seq)
        if events:
            self._last_seq = events[-1].seq
            self.show(events)

    def show(self, events: list[Event]) -> None:
        for event in events:
            # One marker per session: its open/switch event and the fallback that follows carry
            # the same session id.
            marked = event.session_id is not None and event.session_id == self._marked_session
            if event.kind in _MARKER_EVENTS and not marked:
                self._plots.add_marker(marker_text(event), at=event.at - self._plots.t0)
                self._marked_session = event.session_id
            if event.report is not None:
                if event.model:
                    self._model_label = event.model.name
                    self._labels = (event.model.labels, list(event.model.label_warnings))
                self._delegation.set_report(event.report, self._model_label, *self._labels)
                self._controls.show_delegate(event.report.requested)
                parts = [f"{k} {v:.0f} ms" for k, v in (("close", event.close_ms), ("open", event.open_ms),
                         ("first inference", event.first_inference_ms)) if v is not None]  # fmt: skip
                if parts:
                    self._delegation.set_switch_cost("Last switch: " + ", ".join(parts))
            if event.kind == EventKind.SWITCH_FAILED:  # the box showed the refused model: show what runs
                self._controls.set_models(str(self._live.config().model))
            if event.kind in _STATUS_EVENTS and event.kind != EventKind.OPEN:
                self._status_bar.showMessage(event.message, 15_000)


def marker_text(event: Event) -> str:
    if event.kind in (EventKind.OPEN, EventKind.SWITCH, EventKind.FALLBACK) and event.report is not None:
        used = backend_name(event.report.used)
        model = event.model.name if event.model else ""
        if event.kind == EventKind.FALLBACK or event.report.requested != event.report.used:
            return f"{backend_name(event.report.requested)}→{used} fallback"
        return f"{used} · {event.changes}" if event.changes else f"{used} · {model}"
    return event.kind.replace("_", " ")
