"""One daemon thread at a time that loops until asked to stop: the resource sampler's and the live
profiler's (app/metrics/resources.py, app/profile/background.py) start and stop through this.

Each start makes a fresh stop event and hands it to the loop, so a thread that outlived its stop (stuck
in a driver call) never sees a later start clear the event it waits on; until it ends it stays visible
as running, and no second thread starts beside it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundLoop:
    def __init__(self, name: str) -> None:
        self.name = name  # the thread's name, as thread listings show it
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        """Whether the running loop has been asked to end (a loop checks it between steps)."""
        return self._stop.is_set()

    def start(self, loop: Callable[[threading.Event], None]) -> bool:
        """Run `loop(stop)` on a new daemon thread; False (nothing started) while one still runs."""
        if self.running:
            return False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=loop, args=(self._stop,), name=self.name, daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float) -> bool:
        """Ask the loop to end and wait up to `timeout` s for it. True when no thread runs any more;
        False when it is still in a step: it stays `running` (and is forgotten only once it ends)."""
        thread = self._thread
        self._stop.set()
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        return True
