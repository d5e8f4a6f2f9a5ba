"""Capture what native runtimes write straight to file descriptor 2.

LiteRT's C++ code logs ("Created TensorFlow Lite XNNPACK delegate", adapter
names, "Replacing N out of M nodes") to stderr, not to Python logging. Opening
a session through `capture_stderr` keeps that noise off the user's terminal and
hands the text to the backend, which parses the facts it needs from it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator

_lock = threading.Lock()  # fd 2 is process-wide: one capture at a time


class CapturedLog:
    text: str = ""

    def lines(self) -> list[str]:
        return [line for line in self.text.splitlines() if line.strip()]


@contextlib.contextmanager
def capture_stderr() -> Iterator[CapturedLog]:
    log = CapturedLog()
    with _lock, tempfile.TemporaryFile(mode="w+b") as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield log
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            log.text = sink.read(1024 * 1024).decode("utf-8", errors="replace")
