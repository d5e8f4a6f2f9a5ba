"""Waiting on a condition instead of sleeping: the one poll loop the tests share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], timeout: float = 30.0, step: float = 0.02) -> bool:
    """Poll `condition` until it holds or `timeout` s pass; whether it held (a last look at the deadline).
    Callers assert on it: `assert wait_until(lambda: ...), what_was_seen`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


def run_with_deadline(fn: Callable[[], object], seconds: float) -> object:
    """Run fn in a thread; fail (instead of hanging the suite) if it is not done in time."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the test thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]  # a BaseException stored above, typed object here
    return outcome.get("value")


def wait_for_results(qtbot, window, n: int = 5, timeout_ms: int = 30_000) -> None:
    """The window's live pipeline has made `n` inferences (pytest-qt's wait keeps Qt's events flowing)."""
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= n, timeout=timeout_ms)
