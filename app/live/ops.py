"""The Ops view's profiler, owned here rather than by the view: app/profile/background.py's LiveProfiler
on what the controller runs (side B's too in A/B), a runner of its own in a background thread at a low
rate. Qt-free: the view starts and stops it and renders `latest()`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.live.controller import LiveController
from app.profile.background import LiveProfile, LiveProfiler, Target
from app.profile.sidecar import write_profile


class OpsProfiles:
    def __init__(self, live: LiveController) -> None:
        self._live = live
        self._profiler = LiveProfiler(self.targets)

    @property
    def running(self) -> bool:
        return self._profiler.running

    @property
    def comparing(self) -> bool:
        return self._live.comparing

    def targets(self) -> dict[str, Target]:
        """What each side runs now (the profiler asks before each round)."""
        out = {}
        for side in ("a", "b") if self._live.comparing else ("a",):
            config = self._live.config(side)
            labels = str(config.labels) if config.labels else None
            out[side] = Target(str(config.model), config.delegate, config.options, labels)
        return out

    def start(self) -> None:
        self._profiler.start()

    def stop(self) -> None:
        self._profiler.stop()

    def latest(self) -> Mapping[str, LiveProfile]:
        return self._profiler.latest()

    def save_beside(self, recording: Path) -> Path | None:
        """Write side A's last profile beside a recording that stopped while profiling was on."""
        entry = self._profiler.latest().get("a") if self._profiler.running else None
        if entry is None or entry.profile is None:
            return None
        try:
            return write_profile(recording, entry.profile)
        except OSError:
            return None  # the recording is what matters
