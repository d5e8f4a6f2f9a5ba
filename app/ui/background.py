"""Slow, GUI-free look-ups (the GPU probe, a child process of ~1 s; the camera list) run off the
GUI thread, so the window opens at once; the window polls their futures."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


class BackgroundJobs:
    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def run(self, fn: Callable[[], T], name: str) -> Future[T]:
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except Exception as exc:  # reported where the result is used
                future.set_exception(exc)

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return future

    def join(self, timeout_s: float) -> None:
        """Wait for each look-up still running, up to `timeout_s` each (closing the window)."""
        for thread in self._threads:
            thread.join(timeout_s)
