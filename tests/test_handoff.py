"""The inference -> results hand-off: in order, bounded, and `drained` only when every output is
published. Real threads; the bound is what keeps a stalled results thread from growing memory. From a
live source (`keep_newest`) the results thread takes the newest waiting output and the older ones count
as dropped."""

import threading
import time

import numpy as np

from app.pipeline.handoff import _MAX_UNPUBLISHED, Handoff, RawOutput


def _item(i: int) -> RawOutput:
    return RawOutput(None, None, np.array([i]), 0.0, 0.0, 0.0, None, True, 1)  # type: ignore[arg-type]


def _full_with_a_put_waiting() -> tuple[Handoff, threading.Event, threading.Thread]:
    """A hand-off holding _MAX_UNPUBLISHED unpublished items (0, 1, ...), and a thread putting item 99."""
    handoff, stop = Handoff(), threading.Event()
    for i in range(_MAX_UNPUBLISHED):
        handoff.put(_item(i), stop)
    blocked_put = threading.Thread(target=handoff.put, args=(_item(99), stop))
    blocked_put.start()
    return handoff, stop, blocked_put


def test_a_full_handoff_holds_the_producer_until_the_consumer_is_done():
    handoff, _, blocked_put = _full_with_a_put_waiting()
    blocked_put.join(0.3)
    assert blocked_put.is_alive()  # no room: the ninth waits
    assert handoff.get()[0].raw[0] == 0
    assert blocked_put.is_alive()  # taken but not yet published: still no room
    handoff.done()
    blocked_put.join(2.0)
    assert not blocked_put.is_alive()
    got = [handoff.get()[0].raw[0] for _ in range(_MAX_UNPUBLISHED)]
    assert got == [*range(1, _MAX_UNPUBLISHED), 99]  # in order
    assert not handoff.drained()
    for _ in range(_MAX_UNPUBLISHED):
        handoff.done()
    assert handoff.drained()


def test_at_shutdown_a_full_handoff_lets_the_producer_go():
    handoff, stop, blocked_put = _full_with_a_put_waiting()
    time.sleep(0.1)
    stop.set()
    blocked_put.join(2.0)  # within a poll interval of the stop
    assert not blocked_put.is_alive()
    handoff.close()
    drained = []
    while (item := handoff.get()[0]) is not None:
        drained.append(int(item.raw[0]))
        handoff.done()
    assert drained == [*range(_MAX_UNPUBLISHED), 99] and handoff.drained()


def test_producer_and_consumer_threads_pass_every_item_once():
    handoff, stop, n = Handoff(), threading.Event(), 5000
    seen: list[int] = []

    def consume() -> None:
        while (item := handoff.get()[0]) is not None:
            seen.append(int(item.raw[0]))
            handoff.done()

    consumer = threading.Thread(target=consume)
    consumer.start()
    for i in range(n):
        handoff.put(_item(i), stop)
    handoff.close()
    consumer.join(10)
    assert seen == list(range(n)) and handoff.drained()


def test_keep_newest_publishes_the_newest_waiting_output_and_counts_the_older_ones():
    handoff, stop = Handoff(), threading.Event()
    handoff.keep_newest = True
    for i in range(5):
        handoff.put(_item(i), stop)
    item, dropped = handoff.get()
    assert int(item.raw[0]) == 4 and dropped == 4
    assert not handoff.drained()  # the dropped ones are done; the one taken is not yet published
    handoff.done()
    assert handoff.drained()
    handoff.put(_item(5), stop)  # nothing behind it: nothing dropped
    item, dropped = handoff.get()
    assert int(item.raw[0]) == 5 and dropped == 0


def test_keep_newest_at_close_publishes_the_newest_then_ends():
    handoff, stop = Handoff(), threading.Event()
    handoff.keep_newest = True
    for i in range(3):
        handoff.put(_item(i), stop)
    handoff.close()
    item, dropped = handoff.get()
    assert int(item.raw[0]) == 2 and dropped == 2
    handoff.done()
    assert handoff.get() == (None, 0) and handoff.drained()


def test_keep_newest_never_holds_the_producer_while_the_consumer_keeps_taking():
    """The bound only counts outputs not yet taken or published: dropping them makes room at once."""
    handoff, stop = Handoff(), threading.Event()
    handoff.keep_newest = True
    for i in range(_MAX_UNPUBLISHED):
        handoff.put(_item(i), stop)
    taken, dropped = handoff.get()
    assert int(taken.raw[0]) == _MAX_UNPUBLISHED - 1 and dropped == _MAX_UNPUBLISHED - 1
    late = threading.Thread(target=handoff.put, args=(_item(99), stop))
    late.start()
    late.join(2.0)
    assert not late.is_alive()  # room while one is still being published
