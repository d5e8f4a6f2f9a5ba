"""When the window paints: its heavy work (painting a new frame, refreshing plots and panel) waits while
an inference runs, at most `max_s`. Painting and the X server's copy of a 4K window took a core beside
the inference thread on a 2-core machine and slowed what the window measures (docs/performance.md, "The
window's observer effect"). A frame then shows with its own result, once; a model slower than `max_s`
still gets every frame shown, this much late. Qt-free, on an injectable clock."""

from __future__ import annotations

import time
from collections.abc import Callable

DEFER_MAX_S = 0.025


class PaintDeferral:
    def __init__(self, max_s: float = DEFER_MAX_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_s, self._clock = max_s, clock
        self._holding_since: float | None = None  # since when new frames wait for an inference to end
        self._refresh_due: float | None = None  # when a plot/panel refresh fell due during an inference
        self.held_back_s = 0.0  # how long the frame painted last had waited

    def paint_frame(self, inferring: bool) -> bool:
        """A new frame is there: paint it now (True), or hold it while the inference runs."""
        now = self._clock()
        if inferring:
            # Held from the first frame since the last paint: newer frames arriving meanwhile (an
            # unpaced source) must not restart the wait, or nothing would ever be painted.
            if self._holding_since is None:
                self._holding_since = now
            if now - self._holding_since < self.max_s:
                return False  # painted once the inference ends (with its result, if it ran on this frame)
        self.held_back_s = 0.0 if self._holding_since is None else now - self._holding_since
        self._holding_since = None
        return True

    def refresh_now(self, inferring: bool) -> bool:
        """The refresh timer fired: refresh now (True, between inferences), or once `refresh_deferred`
        says so."""
        if inferring:
            if self._refresh_due is None:
                self._refresh_due = self._clock()
            return False
        self._refresh_due = None
        return True

    def refresh_deferred(self, inferring: bool) -> bool:
        """Asked after each frame: a refresh held back is due now (the inference ended, or `max_s` passed).
        After the frame: painting it first keeps the refresh in the gap before the next frame's inference
        (at 4K a refresh first cost displayed frames)."""
        if self._refresh_due is None or (inferring and self._clock() - self._refresh_due < self.max_s):
            return False
        self._refresh_due = None
        return True
