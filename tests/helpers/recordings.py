"""Real recordings made the way the window makes them (LiveController on the demo clip, real LiteRT),
shared by the report and Review tests."""

from __future__ import annotations

from pathlib import Path

from app.backends import BackendOptions
from app.live.controller import LiveController
from app.pipeline import InferenceConfig
from tests.helpers.wait import wait_until

SEGMENT_ROWS = 45  # rows per configuration (~1.5 s of the 30 fps clip): over the 30 inferences a segment's report needs


def record_across_switches(path: Path) -> Path:
    """Record the demo clip on the CPU with 2 threads, switch to 1 thread, then to the int8 model."""
    live = LiveController("demo", InferenceConfig(options={"threads": 2}))
    live.start()
    try:
        assert wait_until(lambda: live.snapshot().inferences_total >= 3, 60), live.status()
        live.start_recording(path)
        assert wait_until(lambda: live.recording_status().rows >= SEGMENT_ROWS, 60), live.recording_status()
        live.reconfigure(options=BackendOptions.of({"threads": 1}))
        assert wait_until(lambda: live.recording_status().rows >= 2 * SEGMENT_ROWS, 60), live.recording_status()
        live.reconfigure(model="efficientnet_lite0_int8")
        assert wait_until(lambda: live.recording_status().rows >= 3 * SEGMENT_ROWS, 60), live.recording_status()
    finally:
        ended, recording = live.stop()
    assert ended and recording is not None and recording.error is None
    return path
