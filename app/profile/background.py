"""Profiles of the running session, taken in the background at a low rate (the window's Ops view).

The live inference thread runs LiteRT's Interpreter, whose Python wrapper has no profiler, and a
GPU session cannot be profiled per op at all (app.profile.gpu). So profiles come from a runner of
their own: one thread that, while switched on, profiles each side's model/delegate/options with a
few runs, then sleeps. A CPU side's profiled model is compiled once per target, a GPU side's session
opened once (by this thread, which then owns it). The thread runs at nice +10 (Linux: a thread's own
priority), so on a busy machine the live inference thread wins the CPU; what it still costs the
live session is measured in docs/profile.md. Switched off, the thread is not running and nothing
is profiled.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from app.backends import open_session
from app.backends.base import ModelRunner
from app.backends.litert_c import NativeModel
from app.backends.options import BackendOptions, Delegate
from app.errors import DelegateScopeError, ModelError
from app.model.spec import ModelSpec, load_model_spec
from app.profile.cpu import compiled_and_warm, profile_cpu, runtime_workers, sample_inputs
from app.profile.gpu import profile_gpu
from app.profile.placements import profile_placements
from app.profile.run import profile_model
from app.profile.types import Profile
from app.system.background_loop import BackgroundLoop
from app.system.thread_cpu import started_by

INTERVAL_S = 3.0  # between two profiles of a side
RUNS = 8  # runs per profile: a few, to keep what the live session loses small; enough for a least-disturbed one
NICE = 10


@dataclass(frozen=True)
class Target:
    """What a side runs: the model reference, its delegate and options."""

    model: str
    delegate: str
    options: BackendOptions
    labels: str | None = None


@dataclass(frozen=True)
class LiveProfile:
    target: Target
    profile: Profile | None
    error: str | None
    taken_at: float  # time.monotonic()
    seq: int


def _lower_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)  # Linux: per thread
    except (AttributeError, OSError):
        pass  # not Linux, or not allowed: it runs at the normal priority


class LiveProfiler:
    """Profiles the targets that `targets()` names (side -> Target) every INTERVAL_S while started."""

    def __init__(
        self, targets: Callable[[], dict[str, Target]], interval_s: float = INTERVAL_S, runs: int = RUNS
    ) -> None:
        self._targets = targets
        self.interval_s, self.runs = interval_s, runs
        self._lock = threading.Lock()
        self._latest: dict[str, LiveProfile] = {}
        self._seq = 0
        self._loop = BackgroundLoop("delegate-scope-profiler")
        self._specs: dict[tuple[str, str | None], ModelSpec] = {}
        # Per side, compiled or opened once per target and profiled again: a NativeModel (CPU) or a GPU session.
        self._models: dict[str, tuple[Target, NativeModel | ModelRunner]] = {}
        self._runtime_threads: dict[str, set[int] | None] = {}  # a CPU side's runtime threads, for its CPU share

    @property
    def running(self) -> bool:
        return self._loop.running

    def start(self) -> None:
        self._loop.start(self._run)

    def stop(self, timeout: float = 10.0) -> None:
        self._loop.stop(timeout)

    def latest(self) -> Mapping[str, LiveProfile]:
        """side -> its newest profile: a copy, read by the window."""
        with self._lock:
            return dict(self._latest)

    def _spec(self, target: Target) -> ModelSpec:
        key = (target.model, target.labels)
        if key not in self._specs:
            labels = Path(target.labels) if target.labels else None  # a str here failed in read_labels_file
            self._specs[key] = load_model_spec(target.model, labels_file=labels)
        return self._specs[key]

    def profile_once(self) -> None:
        for side, target in self._targets().items():
            if self._loop.stopping:
                return
            profile, error = None, None
            try:
                profile = self._profile(side, target)
            except (DelegateScopeError, RuntimeError, ValueError) as exc:
                error = str(exc)
            with self._lock:
                self._seq += 1
                self._latest[side] = LiveProfile(target, profile, error, time.monotonic(), self._seq)

    def _profile(self, side: str, target: Target) -> Profile:
        spec = self._spec(target)
        cached = self._models.get(side)
        if cached is not None and cached[0] != target:  # the side now runs something else
            self._close(side)
            cached = None
        if target.delegate == Delegate.GPU:
            return self._profile_gpu(side, target, spec, cached)
        if target.delegate != Delegate.CPU:  # Core ML: a session of its own each time (app.profile.run)
            return profile_model(spec, target.delegate, target.options, runs=self.runs)
        if cached is None:
            # Compiling (XNNPACK packs the weights) costs far more than a profile: done once per target.
            threads = target.options.cpu_threads
            try:
                model, found = started_by(lambda: compiled_and_warm(spec, threads))
                self._runtime_threads[side] = runtime_workers(found, threads)
            except ModelError as exc:  # LiteRT's C API refuses some models its Interpreter runs (an LSTM)
                reason = f"LiteRT's CompiledModel refused it ({exc})"
                return profile_placements(spec, threads, self.runs, reason, sample_inputs(spec))
            self._models[side] = cached = (target, model)
        native = cached[1]
        assert isinstance(native, NativeModel)  # the CPU side caches its NativeModel, the GPU side a session
        return profile_cpu(spec, target.options.cpu_threads, self.runs, model=native,
                           runtime_threads=self._runtime_threads.get(side))  # fmt: skip

    def _profile_gpu(
        self, side: str, target: Target, spec: ModelSpec, cached: tuple[Target, NativeModel | ModelRunner] | None
    ) -> Profile:
        """A GPU session of the profiler's own, opened once per target (GPU sessions belong to the thread that
        opened them: this one); a GPU that cannot run here gives the CPU profile with the reason, as `profile`."""
        if cached is None:
            session = open_session(spec, Delegate.GPU, target.options, fallback=True)
            if session.report.used != Delegate.GPU:
                reason = session.report.fallback_reason
                session.close()
                profile = profile_model(spec, Delegate.CPU, target.options, runs=self.runs)
                return replace(profile, requested=Delegate.GPU, fallback_reason=reason)
            self._models[side] = cached = (target, session)
        runner = cached[1]
        assert not isinstance(runner, NativeModel)  # the GPU side caches a session, the CPU side its NativeModel
        return profile_gpu(spec, runner, target.options.cpu_threads, self.runs)

    def _close(self, side: str) -> None:
        entry = self._models.pop(side, None)
        if entry is not None:
            entry[1].close()

    def _run(self, stop: threading.Event) -> None:
        _lower_priority()
        try:
            while not stop.is_set():
                self.profile_once()
                stop.wait(self.interval_s)
        finally:
            for side in list(self._models):  # closed by the thread that made them
                self._close(side)
