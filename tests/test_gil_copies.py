"""The GPU session's buffer copies keep Python's GIL (app/backends/litert_c.py `copy_holding_gil`): a copy
that gave it up let another pipeline thread take it, and the inference thread then waited for it back
before the run (docs/benchmarks.md, fifth session). Checked against np.copyto, which gives it up."""

import sys
import threading
import time

import numpy as np

from app.backends.litert_c import copy_holding_gil


def _spinner_gaps_over(copy, src: np.ndarray, dst: np.ndarray, copies: int) -> list[float]:
    """For each of `copies` back-to-back copies, the longest stretch of it in which a spinning Python
    thread did not run (its gaps over 0.5 ms, overlapped with the copy's own span)."""
    gaps: list[tuple[float, float]] = []
    spans: list[tuple[float, float]] = []
    stop = threading.Event()

    def spin() -> None:
        last = time.perf_counter()
        while True:  # the gap is recorded before stop is read: the last copy's stall ends at stop
            now = time.perf_counter()
            if now - last > 0.0005:
                gaps.append((last, now))
            last = now
            if stop.is_set():
                break

    spinner = threading.Thread(target=spin)
    spinner.start()
    time.sleep(0.05)
    for _ in range(copies):
        started = time.perf_counter()
        copy(dst, src)
        spans.append((started, time.perf_counter()))
    stop.set()
    spinner.join()
    # Each copy's longest stall of the spinner, as a share of that copy's own length (copies vary in speed).
    return [max([0.0, *(min(e, t1) - max(s, t0) for s, e in gaps)]) / (t1 - t0) for t0, t1 in spans]


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
    src = np.ones(256 * 1024 * 1024, np.uint8)  # 256 MB: each copy takes longer than an OS time slice
    dst = np.empty_like(src)
    copy_holding_gil(dst, src)  # the pages touched once before anything is timed
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        released = _spinner_gaps_over(lambda d, s: np.copyto(d, s), src, dst, 10)
        held = _spinner_gaps_over(copy_holding_gil, src, dst, 10)
    finally:
        sys.setswitchinterval(old)
    # Holding the GIL, a copy stops every other Python thread for its whole length, however loaded
    # the machine (a thread the OS stalls only makes the gap longer). Giving it up, the spinner runs
    # during the copy whenever it has a core: on a busy machine not during every copy, so the
    # control asks for one copy it ran through. Timing the spinner's pace instead failed on a loaded
    # machine (0.38-0.52 against < 0.35). Each against its own copy's length: against the fastest of five
    # copies timed alone first, a fresh clone's held stall read 0.68 of it (copies got faster meanwhile).
    assert min(held) >= 0.8, held
    assert min(released) < 0.5, released
