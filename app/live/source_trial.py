"""Going back to the source that ran: until a newly chosen source delivers, the one that ran stays the
way back (as a bad model keeps the previous one running), so a stream that never opens does not stop
everything behind a banner. Qt-free: the window asks, and switches and says so."""

from __future__ import annotations

from dataclasses import dataclass

from app.pipeline import State
from app.system.redact import redact_credentials


@dataclass(frozen=True)
class GoBack:
    """The chosen source failed: switch back to `source`; `message` says why (credentials redacted)."""

    source: str
    message: str


class SourceTrial:
    def __init__(self) -> None:
        self._trial: tuple[str, str | None] | None = None  # (chosen source, the one to go back to)

    @property
    def pending(self) -> bool:
        return self._trial is not None

    def begin(self, chosen: str, current: str, delivering: bool) -> None:
        """`chosen` replaces `current` (`delivering`: it runs or showed a frame). A switch while a trial is
        pending keeps that trial's way back."""
        previous = current if delivering else (self._trial or (None, None))[1]
        self._trial = (chosen, previous) if previous and previous != chosen else None

    def check(self, state: State, message: str, delivering: bool) -> GoBack | None:
        """The chosen source's state now: it delivers (kept), failed to open (go back), or neither yet."""
        if self._trial is None:
            return None
        previous = self._trial[1]
        if state == State.RUNNING or delivering:
            self._trial = None
            return None
        if state != State.ERROR or previous is None:
            return None
        self._trial = None
        return GoBack(previous, f"{redact_credentials(message)}; back on {redact_credentials(previous)}")
