"""The Ops view's profiler, owned by the controller layer (app/live/ops.py), headless: it profiles what
the controller runs, side B's model too in A/B, and leaves a profile beside a recording while on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.live.controller import LiveController
from app.live.ops import OpsProfiles
from app.pipeline import InferenceConfig
from app.profile.sidecar import read_profile

pytestmark = pytest.mark.slow


def test_profiles_follow_the_controller_and_go_beside_a_recording(tmp_path: Path):
    live = LiveController("synthetic:320x240@30", InferenceConfig(options={"threads": 1}))
    live.start()
    profiles = OpsProfiles(live)
    try:
        assert set(profiles.targets()) == {"a"} and not profiles.comparing
        assert profiles.targets()["a"].model == "efficientnet_lite0"
        assert profiles.save_beside(tmp_path / "off.csv") is None  # off: nothing to save
        profiles.start()
        assert profiles.running
        deadline = time.monotonic() + 90
        while (entry := profiles.latest().get("a")) is None or entry.profile is None:
            assert time.monotonic() < deadline, "no profile"
            time.sleep(0.1)
        assert entry.profile.used == "cpu" and len(entry.profile.ops) > 50
        recording = tmp_path / "session.csv"
        recording.write_text("", encoding="utf-8")
        assert profiles.save_beside(recording) is not None
        saved = read_profile(recording)
        assert saved is not None and len(saved.ops) == len(entry.profile.ops)
        live.set_compare(InferenceConfig(model="efficientnet_lite0_int8", options={"threads": 1}))
        targets = profiles.targets()
        assert profiles.comparing and targets["b"].model == "efficientnet_lite0_int8"
        assert targets["a"].model == "efficientnet_lite0"
    finally:
        profiles.stop()
        live.stop()
    assert not profiles.running
