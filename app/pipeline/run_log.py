"""A worker's status and event history: written by the pipeline's threads, read by anyone."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from app.pipeline.types import Event, EventKind, State, Status
from app.sources import SourceInfo

_MAX_EVENTS = 1000


class RunLog:
    def __init__(self, status: Status, on_event: Callable[[Event], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._status = status
        self._events: deque[Event] = deque(maxlen=_MAX_EVENTS)
        self._seq = 0
        self._on_event = on_event

    def status(self) -> Status:
        with self._lock:
            return self._status

    def set_status(self, status: Status) -> None:
        """An ERROR ends the run: only stop() (STOPPED) replaces it. A thread that reports later (the capture
        thread saying RUNNING once its source opened, after the inference thread failed to open the model)
        must not hide it; bench waited for inferences that would never come (found by bench on a model the
        runtime refuses)."""
        with self._lock:
            if self._status.state == State.ERROR and status.state != State.STOPPED:
                return
            self._status = status

    def fail(self, message: str, exit_code: int, source: SourceInfo | None = None) -> None:
        """End the run on a typed error: the status says so and an error event records why."""
        self.set_status(Status(State.ERROR, message, source, exit_code))
        self.emit(EventKind.ERROR, message)

    def emit(self, kind: EventKind, message: str, **fields: object) -> Event:
        with self._lock:
            self._seq += 1
            event = Event(kind, time.monotonic(), time.time(), message, seq=self._seq, **fields)  # type: ignore[arg-type]  # Event's own keywords, checked by its constructor
            self._events.append(event)
        if self._on_event:
            self._on_event(event)
        return event

    def events(self) -> list[Event]:
        """The retained history (the last 1,000 events), oldest first."""
        with self._lock:
            return list(self._events)

    def events_since(self, seq: int) -> list[Event]:
        """Events after `seq` (0: all retained), oldest first; a poller passes the last one's seq."""
        with self._lock:
            if not self._events or self._events[-1].seq <= seq:
                return []
            return [e for e in self._events if e.seq > seq]
