"""A thread that runs Python bytecode flat out while it lives: it holds the GIL whenever it can (the
worst case of a GUI thread drawing plots), and counts its loops so its rate can be read."""

from __future__ import annotations

import threading


class Spinner:
    count = 0  # loops so far

    def __enter__(self) -> Spinner:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()
        return self

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
