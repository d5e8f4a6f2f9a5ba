"""The window's sweep runner, headless (app/live/sweep.py): a real small sweep on the live source with the
live pipeline paused around it; start, cancel and poll's states."""

from __future__ import annotations

import time

import pytest

from app.live.controller import LiveController
from app.live.sweep import PAUSE_REASON, SweepRunner, SweepState
from app.pipeline import InferenceConfig, State
from app.tasks.delegates import DelegateStatus

pytestmark = pytest.mark.slow

# As if the window's GPU probe had answered: only the CPU configurations run (cheap, any machine).
NO_ACCELERATOR = {
    "gpu": DelegateStatus("gpu", "GPU", False, "no GPU here (test)"),
    "coreml": DelegateStatus("coreml", "Core ML", False, "no Core ML here (test)"),
}


def poll_until_finished(runner: SweepRunner, timeout: float = 120.0) -> tuple[SweepState, list[SweepState]]:
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        state = runner.poll()
        seen.append(state)
        if state.finished:
            return state, seen
        assert time.monotonic() < deadline, "the sweep did not finish"
        time.sleep(0.05)


def test_a_sweep_pauses_the_live_pipeline_reports_progress_and_resumes_it():
    live = LiveController("demo", InferenceConfig(options={"threads": 1}))
    live.start()
    runner = SweepRunner(live)
    try:
        assert runner.poll() == SweepState(running=False)
        assert runner.models(bundled=False) == ["efficientnet_lite0"]
        assert runner.start(["efficientnet_lite0"], frames=10, allow_software_gpu=False, statuses=NO_ACCELERATOR)
        assert runner.running and live.paused and live.status().state == State.STOPPED
        assert live.status().message == PAUSE_REASON
        assert not runner.start(["efficientnet_lite0"], frames=10, allow_software_gpu=False, statuses=None)
        state, seen = poll_until_finished(runner)
        assert all(s.running for s in seen[:-1]) and not state.running
        assert any(s.progress is not None and s.progress.phase == "measuring" for s in seen)
        assert state.error is None and state.result is not None and runner.result is state.result
        rows = state.result.rows
        assert [r.delegate for r in rows if r.measured] == ["cpu"] * len(state.result.measured())
        assert len(state.result.measured()) >= 1 and {"gpu", "coreml"} <= {r.delegate for r in rows}
        assert not live.paused  # resumed by the poll that saw the end
        after = runner.poll()
        assert not after.finished and after.result is state.result  # finished once; the result stays
        deadline = time.monotonic() + 30
        while live.status().state != State.RUNNING:
            assert time.monotonic() < deadline, live.status()
            time.sleep(0.05)
    finally:
        runner.shutdown()
        live.stop()
    assert not runner.threads()


def test_cancel_ends_the_sweep_after_the_configuration_running_and_a_bad_model_is_an_error():
    live = LiveController("demo", InferenceConfig(options={"threads": 1}))
    live.start()
    runner = SweepRunner(live)
    try:
        assert not runner.cancel()  # nothing runs
        assert runner.start(["efficientnet_lite0"], frames=10, allow_software_gpu=False, statuses=NO_ACCELERATOR)
        assert runner.cancel()
        state, _ = poll_until_finished(runner)
        assert state.result is not None and state.result.cancelled
        assert any(r.outcome == "skipped" for r in state.result.rows)
        assert not live.paused

        assert runner.start(["/nonexistent/model.tflite"], frames=10, allow_software_gpu=False,
                            statuses=NO_ACCELERATOR)  # fmt: skip
        state, _ = poll_until_finished(runner)
        assert state.result is None and state.error and "model.tflite" in state.error and not state.internal
        assert not live.paused
    finally:
        runner.shutdown()
        live.stop()
