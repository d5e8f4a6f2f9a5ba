"""The one start/stop of the sampler's and the live profiler's threads (app/system/background_loop.py), on
real threads: one at a time, and a thread that outlives its stop stays visible until it ends."""

from __future__ import annotations

import threading

from app.system.background_loop import BackgroundLoop


def test_one_thread_at_a_time_and_a_stop_ends_it():
    loop = BackgroundLoop("test-loop")
    ticks: list[threading.Event] = []

    def run(stop: threading.Event) -> None:
        ticks.append(stop)
        while not stop.wait(0.01):
            pass

    assert loop.start(run) and loop.running and not loop.stopping
    assert not loop.start(run)  # the first still runs: no second thread
    assert [t.name for t in threading.enumerate()].count("test-loop") == 1
    assert loop.stop(timeout=5) and not loop.running and loop.stopping
    assert loop.stop(timeout=5)  # stopping twice, or with none running, is fine
    assert loop.start(run) and not loop.stopping
    assert len(ticks) == 2 and ticks[0] is not ticks[1] and ticks[0].is_set()  # each start its own event
    assert loop.stop(timeout=5)


def test_a_thread_stuck_in_a_step_stays_running_and_no_second_starts():
    loop = BackgroundLoop("test-stuck")
    release, entered = threading.Event(), threading.Event()
    seen: list[threading.Event] = []

    def stuck(stop: threading.Event) -> None:
        seen.append(stop)
        entered.set()
        release.wait(10)  # a driver call that does not return at once

    assert loop.start(stuck) and entered.wait(5)
    assert not loop.stop(timeout=0.05)
    assert loop.running and not loop.start(stuck)  # still visible; nothing started beside it
    release.set()
    assert loop.stop(timeout=5) and not loop.running
    assert seen[0].is_set()  # the event it was handed was never cleared by a later start
