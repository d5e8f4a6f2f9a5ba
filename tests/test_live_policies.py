"""The window's policies, below Qt and headless: paint deferral on a fake clock, going back to the
source that ran, and the plot markers' text (app/live/paint.py, source_trial.py, events.py)."""

from __future__ import annotations

import time

from app.backends import DelegationReport
from app.live.controller import LiveController
from app.live.events import EventDigest, compare_marker, marker_text, source_marker
from app.live.paint import DEFER_MAX_S, PaintDeferral
from app.live.source_trial import SourceTrial
from app.model.spec import ModelFacts
from app.pipeline import Event, EventKind, InferenceConfig, State


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_frame_waits_for_the_inference_at_most_the_limit_and_says_how_long():
    clock = Clock()
    paint = PaintDeferral(0.025, clock)
    assert paint.paint_frame(inferring=False) and paint.held_back_s == 0.0  # between inferences: at once
    assert not paint.paint_frame(inferring=True)  # held from now
    clock.now += 0.010
    assert not paint.paint_frame(inferring=True)  # a newer frame does not restart the wait
    clock.now += 0.005
    assert paint.paint_frame(inferring=False)  # the inference ended: painted, 15 ms late
    assert abs(paint.held_back_s - 0.015) < 1e-9
    assert not paint.paint_frame(inferring=True)
    clock.now += 0.025
    assert paint.paint_frame(inferring=True)  # a slow model: painted anyway once the limit passed
    assert abs(paint.held_back_s - 0.025) < 1e-9
    assert not paint.paint_frame(inferring=True)  # and the next frame waits afresh
    assert DEFER_MAX_S == 0.025  # the window's limit (docs/performance-costs.md, "The window's observer effect")


def test_a_refresh_due_during_an_inference_comes_when_it_ends_or_the_limit_passed():
    clock = Clock()
    paint = PaintDeferral(0.025, clock)
    assert not paint.refresh_deferred(inferring=False)  # nothing held
    assert paint.refresh_now(inferring=False)  # between inferences: at once
    assert not paint.refresh_deferred(inferring=False)
    assert not paint.refresh_now(inferring=True)  # held
    clock.now += 0.010
    assert not paint.refresh_now(inferring=True)  # still held, from the first time it fell due
    assert not paint.refresh_deferred(inferring=True)
    clock.now += 0.015
    assert paint.refresh_deferred(inferring=True)  # 25 ms since it fell due: done now
    assert not paint.refresh_deferred(inferring=False)  # once
    assert not paint.refresh_now(inferring=True)
    assert paint.refresh_deferred(inferring=False)  # the inference ended


def test_a_source_that_never_opens_gives_way_to_the_one_that_ran():
    trial = SourceTrial()
    trial.begin("rtsp://user:secret@cam/1", "demo", delivering=True)
    assert trial.pending
    assert trial.check(State.STARTING, "opening", delivering=False) is None  # not yet decided
    back = trial.check(State.ERROR, "cannot open rtsp://user:secret@cam/1", delivering=False)
    assert back is not None and back.source == "demo"
    assert "secret" not in back.message and back.message.endswith("back on demo")
    assert not trial.pending


def test_a_source_that_delivers_is_kept_and_a_failed_start_has_no_way_back():
    trial = SourceTrial()
    trial.begin("video:/clip.mp4", "demo", delivering=True)
    assert trial.check(State.RUNNING, "", delivering=True) is None and not trial.pending
    assert trial.check(State.ERROR, "x", delivering=False) is None  # kept: a later failure is not a trial's
    trial.begin("video:/a.mp4", "camera:0", delivering=False)  # nothing ran: nowhere to go back to
    assert not trial.pending
    trial.begin("video:/a.mp4", "demo", delivering=True)
    trial.begin("video:/b.mp4", "video:/a.mp4", delivering=False)  # a second try keeps the way back
    back = trial.check(State.ERROR, "no such file", delivering=False)
    assert back is not None and back.source == "demo"


def _facts(name: str) -> ModelFacts:
    return ModelFacts(name, "0" * 12, "0" * 64, f"{name}.tflite", (1, 224, 224, 3), "float32", 1000, "sidecar", ())


def _event(kind: EventKind, session: int | None, report: DelegationReport | None = None, **fields: object) -> Event:
    return Event(kind, time.monotonic(), time.time(), f"{kind} message", session_id=session, report=report,
                 **fields)  # type: ignore[arg-type]  # fmt: skip


def test_marker_texts():
    cpu = DelegationReport(requested="cpu", used="cpu", accelerator="XNNPACK")
    fell = DelegationReport(requested="gpu", used="cpu", accelerator="XNNPACK")
    assert marker_text(_event(EventKind.OPEN, 1, cpu, model=_facts("m"))) == "CPU · m"
    assert marker_text(_event(EventKind.SWITCH, 2, fell, model=_facts("m"))) == "GPU→CPU fallback"
    # The fallback, then every other change that opened the session (its delegate change is the fallback's own).
    changed = _event(EventKind.SWITCH, 3, fell, model=_facts("m"), changes="model a→m, delegate cpu→gpu, threads 2→1")
    assert marker_text(changed) == "GPU→CPU fallback · model a→m · threads 2→1"
    assert marker_text(_event(EventKind.SOURCE_LOST, 2)) == "source lost"
    assert source_marker("/videos/clip.mp4") == "source: clip.mp4"
    assert source_marker("rtsp://user:secret@cam/1") == "source: rtsp"  # never a stream's address
    assert compare_marker("models/b_int8.tflite", "cpu") == "A/B with CPU · b_int8"
    assert compare_marker(None, None) == "A/B off"


def test_the_digest_marks_each_session_once_and_says_what_runs():
    live = LiveController("synthetic:320x240@30", InferenceConfig(options={"threads": 1}))
    live.start()
    try:
        digest = EventDigest(live)
        deadline = time.monotonic() + 60
        update = None
        while update is None or not update.reports:
            assert time.monotonic() < deadline, "no open event"
            update = digest.poll()
            time.sleep(0.05)
        assert [text for text, _ in update.markers] == ["CPU · efficientnet_lite0"]
        assert update.reports[-1].report.used == "cpu" and update.reports[-1].model == "efficientnet_lite0"
        assert update.status == []  # an open is not a status-bar message
        assert digest.poll() is None  # nothing new
        cpu = DelegationReport(requested="cpu", used="cpu", accelerator="XNNPACK")
        fell = DelegationReport(requested="gpu", used="cpu", accelerator="XNNPACK")
        later = digest.digest([
            _event(EventKind.SWITCH, 7, fell, model=_facts("m"), open_ms=12.0),
            _event(EventKind.FALLBACK, 7, fell),  # the same session: no second marker
            _event(EventKind.SWITCH_FAILED, None),  # no session opened: a marker of its own
            _event(EventKind.OPEN, 8, cpu, model=_facts("n")),
        ])  # fmt: skip
        assert [text for text, _ in later.markers] == ["GPU→CPU fallback", "switch failed", "CPU · n"]
        assert [r.model for r in later.reports] == ["m", "m", "n"]
        assert later.reports[0].switch_cost == "Last switch: open 12 ms" and later.reports[1].switch_cost == ""
        assert later.model_running == "efficientnet_lite0"  # a refused switch: the box shows what runs
        assert later.status == ["switch message", "fallback message", "switch_failed message"]
    finally:
        live.stop()
