"""The GPU session's buffer copies keep Python's GIL (app/backends/litert_c.py `copy_holding_gil`): a copy
that gave it up let another pipeline thread take it, and the inference thread then waited for it back
before the run (docs/pipeline.md, "The GPU path"). Checked against
np.copyto, which gives it up.

The check is a hand-off, not a clock: another thread is let go just before the copies and can only run
once this thread gives the GIL up. The switch interval is raised for the check, so the interpreter's own
forced switch (which would let it run whatever the copy does) cannot come within it. What the held GIL
costs and saves in time is measured by `python -m benchmarks.suite.gil_copies`."""

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from app.backends.litert_c import copy_holding_gil

SWITCH_S = 30.0  # no forced GIL switch within a check: its copies take milliseconds


@contextmanager
def _let_go_before() -> Iterator[list[str]]:
    """Within the block another Python thread stands ready to run, blocked only on the GIL: what it
    appended to the yielded list by the block's end, it ran during the block."""
    ready, gate, ran = threading.Event(), threading.Lock(), []
    gate.acquire()

    def other() -> None:
        ready.set()
        gate.acquire()  # blocks without the GIL; once released, it waits for the GIL alone
        ran.append("ran")

    old = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_S)
    thread = threading.Thread(target=other)
    try:
        thread.start()
        ready.wait()
        gate.release()
        yield ran
    finally:
        thread.join()  # gives the GIL up: the other thread runs now if it did not before
        sys.setswitchinterval(old)


def _ran_during(copy: Callable[[np.ndarray, np.ndarray], None], copies: int) -> bool:
    src = np.ones(16 * 1024 * 1024, np.uint8)  # 16 MB: np.copyto gives the GIL up for a copy this size
    dst = np.empty_like(src)
    copy_holding_gil(dst, src)  # the pages touched before the check
    with _let_go_before() as ran:
        for _ in range(copies):
            copy(dst, src)
            if ran:
                break
        seen = bool(ran)  # read before the block ends: its end gives the GIL up
    assert ran, "the other thread never ran"
    return seen


def test_the_copy_is_exact_and_checks_sizes():
    src = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
    dst = np.zeros(src.nbytes, np.uint8)
    copy_holding_gil(dst, src)
    assert dst.tobytes() == src.tobytes()
    try:
        copy_holding_gil(dst[:-1], src)
    except ValueError:
        pass
    else:
        raise AssertionError("a copy into a smaller buffer must be refused")


def test_the_copy_keeps_the_gil_where_numpy_gives_it_up():
    # Holding the GIL, no copy lets the waiting thread run, however many and however loaded the machine.
    assert not _ran_during(copy_holding_gil, 20)
    # Giving it up, np.copyto lets it run: within one copy on an idle core, within a few when the OS
    # has no core for it during the first ones (each copy a chance; nothing else in the loop gives it).
    assert _ran_during(lambda d, s: np.copyto(d, s), 2000)
