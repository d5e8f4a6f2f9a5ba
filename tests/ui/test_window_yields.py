"""The window puts its heavy work between inferences (app/ui/main_window.py, app/live/paint.py): a new
frame is painted once the inference on it ends, or once it has waited DEFER_MAX_S; a plot refresh due
during an inference comes when it ends. Offscreen, on the demo clip and the real runtime; the display tick
is driven by hand with the deferral on a fake clock and the live session's "inferring" set per step, so
the checks read what the window did, not how fast a loaded machine ran it. What this costs and delivers in
time (frames painted beside an inference, frames skipped, how long frames wait) is measured by
`python -m benchmarks.suite.window_paints`."""

from __future__ import annotations

import dataclasses

import pytest

from app.live.paint import DEFER_MAX_S, PaintDeferral
from tests.helpers.wait import wait_for_results

pytestmark = pytest.mark.slow

pytest.importorskip("pytestqt")


class _Driven:
    """The window's display and stats ticks, driven by hand: frames arrive when `arrive` says, the live
    session is inferring or not as `inferring` says, the clock moves by `at`."""

    def __init__(self, window, monkeypatch: pytest.MonkeyPatch) -> None:
        window.live.pause("driven by the test")  # no frame or result arrives but those handed over here
        self.window, self.now, self.inferring = window, 0.0, False
        self.frame = window.live.latest_frame()
        result = window.live.latest_result("a")
        assert self.frame is not None and result is not None
        window.deferral = PaintDeferral(DEFER_MAX_S, clock=lambda: self.now)
        monkeypatch.setattr(window.live, "inferring", lambda: self.inferring)
        monkeypatch.setattr(window.live, "latest_frame", lambda: self.frame)
        monkeypatch.setattr(window.live, "latest_result", lambda side="a": result if side == "a" else None)
        self.painted: list[int] = []
        repaint = window.video.repaint

        def watched() -> None:
            self.painted.append(window._last_frame_index)
            repaint()

        monkeypatch.setattr(window.video, "repaint", watched)
        self.tick()  # the frame the live session left shown, painted
        self.painted.clear()

    def arrive(self) -> int:
        self.frame = dataclasses.replace(self.frame, index=self.frame.index + 1)
        return self.frame.index

    def tick(self, at: float | None = None, inferring: bool | None = None) -> None:
        self.now = self.now if at is None else at
        self.inferring = self.inferring if inferring is None else inferring
        self.window._display_tick()

    def stats_tick(self) -> None:
        self.window._stats_tick()


def test_a_new_frame_waits_for_the_inference_running_on_it(qtbot, make_window, monkeypatch):
    window = make_window()
    wait_for_results(qtbot, window)
    d = _Driven(window, monkeypatch)
    first = d.arrive()
    d.tick(at=1.000, inferring=True)
    d.tick(at=1.010)
    assert d.painted == [] and window._last_frame_index == first - 1  # held while the inference runs
    d.tick(at=1.012, inferring=False)
    assert d.painted == [first] and window.held_back_s == pytest.approx(0.012)  # once it ended
    d.tick(at=1.020)
    assert d.painted == [first]  # a frame is painted once
    second = d.arrive()
    d.tick(at=1.030)
    assert d.painted == [first, second] and window.held_back_s == 0.0  # between inferences: at once


def test_frames_and_plots_go_on_when_inference_never_rests(qtbot, make_window, monkeypatch):
    window = make_window()
    wait_for_results(qtbot, window)
    d = _Driven(window, monkeypatch)
    held = d.arrive()
    d.tick(at=2.0, inferring=True)
    newest = d.arrive()  # unpaced: newer frames keep coming; the wait runs from the first one held
    d.tick(at=2.010)
    d.tick(at=2.0 + DEFER_MAX_S - 0.001)
    assert d.painted == []
    d.tick(at=2.0 + DEFER_MAX_S + 0.001)
    assert held not in d.painted and d.painted == [newest], d.painted  # the newest, once the limit passed
    assert window.held_back_s == pytest.approx(DEFER_MAX_S + 0.001)
    # A plot refresh due during an inference: not then, nor at the next tick within the limit ...
    updates = window.plots.updates
    d.tick(at=3.0)
    d.stats_tick()
    d.tick(at=3.0 + DEFER_MAX_S - 0.001)
    assert window.plots.updates == updates
    d.tick(at=3.0 + DEFER_MAX_S + 0.001)  # ... but once it has waited the limit, inference or not
    assert window.plots.updates == updates + 1
    d.stats_tick()
    d.tick(at=3.1, inferring=False)  # and at once when the inference ends
    assert window.plots.updates == updates + 2
    d.stats_tick()  # between inferences: the timer's refresh is done there and then
    assert window.plots.updates == updates + 3


def test_frames_and_plots_go_on_with_the_real_pipeline_unpaced(qtbot, make_window):
    """The same, on the live session's own "inferring": inference back to back never starves the window."""
    window = make_window()
    wait_for_results(qtbot, window)
    window.unpaced.action.trigger()
    assert not window.live.pace
    painted: list[int] = []
    repaint = window.video.repaint

    def watched() -> None:
        painted.append(window._last_frame_index)
        repaint()

    window.video.repaint = watched
    updates = window.plots.updates
    qtbot.waitUntil(lambda: len(set(painted)) >= 20 and window.plots.updates >= updates + 5, timeout=60_000)
