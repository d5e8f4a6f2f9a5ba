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


class NativeLogFile:
    """Route fds 1 and 2 (native runtimes) to a log file for the life of the process, keeping
    Python's own `sys.stdout` and `sys.stderr` on the real terminal.

    Native libraries keep logging after a session opens (lazy OpenCL probing on stdout,
    accelerator teardown at exit), so per-call capture cannot catch everything and a
    stray line would corrupt `--json` output; this catches all of it. The file is shown
    with `--debug`.
    """

    def __init__(self) -> None:
        self._file = tempfile.NamedTemporaryFile(prefix="delegate-scope-native-", suffix=".log", delete=False)
        self.path = self._file.name
        sys.stdout.flush()
        sys.stderr.flush()
        terminal_out, terminal_err = os.dup(1), os.dup(2)
        os.dup2(self._file.fileno(), 1)
        os.dup2(self._file.fileno(), 2)
        sys.stdout = open(terminal_out, "w", encoding="utf-8", errors="backslashreplace")
        sys.stderr = open(terminal_err, "w", buffering=1, encoding="utf-8", errors="backslashreplace")

    def read(self) -> str:
        with open(self.path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)
