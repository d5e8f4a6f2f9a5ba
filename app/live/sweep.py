"""The delegate sweep as the window runs it: app/tasks/sweep.py on the live source and model(s), off the
GUI thread, with the live pipeline paused around it (the sweep needs the CPU to itself). Qt-free: the
window starts, cancels and polls it, and renders the state it gets back.

Nothing is pushed at the caller: the sweep thread leaves its newest progress in a slot that `poll()`
reads, as the window polls the live pipeline."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass

from app.errors import DelegateScopeError
from app.live.controller import LiveController
from app.model.spec import resolve_model_path
from app.tasks.delegates import DelegateStatus
from app.tasks.sweep import (
    DEFAULT_WARMUP,
    SweepEntry,
    SweepPlan,
    SweepProgress,
    SweepResult,
    default_models,
    plan_sweep,
    run_sweep,
)

PAUSE_REASON = "the delegate sweep is running; live inference resumes when it ends (it would compete for the CPU)"


@dataclass(frozen=True)
class SweepState:
    """What `poll()` saw. `finished` is True on the one poll that saw the sweep end (the live pipeline
    resumed then); `result` or `error` stay until the next start."""

    running: bool
    progress: SweepProgress | None = None
    result: SweepResult | None = None
    error: str | None = None  # why the sweep failed (its own words, or "internal error: ...")
    internal: bool = False  # the error is a bug, not a refusal (a bad model or source)
    finished: bool = False


class SweepRunner:
    def __init__(
        self,
        live: LiveController,
        *,
        plan: Callable[..., list[SweepEntry]] = plan_sweep,
        run: Callable[..., SweepResult] = run_sweep,
    ) -> None:
        self._live = live
        self._plan, self._run = plan, run
        self._future: Future[SweepResult] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._progress: SweepProgress | None = None
        self.source: str | None = None  # the sweep's source (the live one when it started)
        self.result: SweepResult | None = None
        self.error: str | None = None
        self._internal = False

    @property
    def running(self) -> bool:
        return self._future is not None

    def models(self, *, bundled: bool) -> list[str]:
        """The current model, side B's when comparing, and the bundled ones when asked; each once."""
        live = self._live
        models = [str(live.config("a").model)]
        if live.comparing:
            models.append(str(live.config("b").model))
        if bundled:
            models.extend(default_models())
        unique: dict[str, str] = {}  # by the file it resolves to: a bundled name and its path are one model
        for model in models:
            try:
                key = str(resolve_model_path(model).resolve())
            except DelegateScopeError:
                key = model  # the sweep says what is wrong with it
            unique.setdefault(key, model)
        return list(unique.values())

    def start(
        self,
        models: list[str],
        *,
        frames: int,
        allow_software_gpu: bool,
        statuses: Mapping[str, DelegateStatus] | None,
    ) -> bool:
        """Pause the live pipeline and sweep `models` on its source; False when a sweep runs already.
        `statuses` are delegate_statuses() by name (None: the sweep probes the GPU itself)."""
        if self.running:
            return False
        source = self.source = self._live.source
        self._stop.clear()
        with self._lock:
            self._progress = None
        self.result, self.error, self._internal = None, None, False
        self._live.pause(PAUSE_REASON)

        def sweep() -> SweepResult:
            entries = self._plan(models, allow_software_gpu=allow_software_gpu, statuses=statuses)
            plan = SweepPlan(source, tuple(entries), frames=frames, warmup=DEFAULT_WARMUP)
            return self._run(plan, self._set_progress, self._stop)

        future: Future[SweepResult] = Future()

        def run() -> None:
            try:
                future.set_result(sweep())
            except Exception as exc:  # reported by poll()
                future.set_exception(exc)

        self._future = future
        self._thread = threading.Thread(target=run, name="delegate-scope-sweep", daemon=True)
        self._thread.start()
        return True

    def cancel(self) -> bool:
        """End the sweep after the configuration running now; False when none runs."""
        if not self.running:
            return False
        self._stop.set()
        return True

    def poll(self) -> SweepState:
        with self._lock:
            progress = self._progress
        future = self._future
        if future is None or not future.done():
            running = future is not None
            return SweepState(running, progress, self.result, self.error, self._internal)
        self._future = None
        self._live.resume()
        try:
            self.result = future.result()
        except DelegateScopeError as exc:
            self.error = str(exc)
        except Exception as exc:  # a bug: said in one line; the window runs on
            self.error, self._internal = f"internal error: {type(exc).__name__}: {exc}", True
        return SweepState(False, progress, self.result, self.error, self._internal, finished=True)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Closing: end a running sweep and wait for its thread (the live pipeline is not resumed)."""
        future, thread = self._future, self._thread
        if future is None or thread is None:
            return
        self._stop.set()
        thread.join(timeout_s)
        self._future = None

    def threads(self) -> list[threading.Thread]:
        return [self._thread] if self._thread is not None and self._thread.is_alive() else []

    def _set_progress(self, p: SweepProgress) -> None:  # the sweep thread
        with self._lock:
            self._progress = p
