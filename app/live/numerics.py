"""The Numerics view's runner, owned here rather than by the view: one `numerics` run (app/tasks/numerics.py)
for what side A runs now (its model, delegate and options) on the frame the window shows, in a thread of its
own, on demand; never on the inference thread, whose session it does not touch (the run opens its own).
Qt-free: the view starts it and renders `latest()`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.backends.options import Delegate
from app.errors import DelegateScopeError
from app.live.controller import LiveController, Side
from app.model.spec import ModelOptions, load_model_spec
from app.numerics.runners import Against
from app.numerics.scan import Mode
from app.tasks.numerics import DELEGATES, NumericsOptions, NumericsResult, run_numerics


@dataclass(frozen=True)
class NumericsOutcome:
    """One run: its result, or why there is none, and what it was asked."""

    asked: str  # "efficientnet_lite0 on gpu against cpu"
    started: float  # time.monotonic()
    result: NumericsResult | None = None
    error: str | None = None
    seconds: float | None = None  # None while running


def disagreement_side(a_delegate: str, b_delegate: str) -> Side:
    """Which side's numbers a disagreement is checked on: the side that runs an accelerator (B first, the
    side a user switches), else B (two CPU sides: XNNPACK against the reference kernels)."""
    for side, delegate in (("b", b_delegate), ("a", a_delegate)):
        if delegate in tuple(DELEGATES) and delegate != Delegate.CPU:
            return "b" if side == "b" else "a"
    return "b"


def plan(delegate: str) -> tuple[Delegate, Against] | str:
    """The delegate to check and its reference, or why the side's delegate has no numerics run."""
    if delegate not in tuple(DELEGATES):
        return f"numerics checks gpu, coreml or cpu; side A runs {delegate}"
    chosen = Delegate(delegate)
    return chosen, Against.REFERENCE if chosen == Delegate.CPU else Against.CPU


class NumericsRuns:
    def __init__(self, live: LiveController) -> None:
        self._live = live
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._latest: NumericsOutcome | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def latest(self) -> NumericsOutcome | None:
        with self._lock:
            return self._latest

    def start(self, every_node: bool = False, side: Side = "a", frame_bgr: np.ndarray | None = None) -> bool:
        """Start a run for `side` as it is now, on `frame_bgr` (default: the frame the window shows);
        False while one runs. A/B: a disagreement's frame is checked on the side that runs an accelerator."""
        if self.running:
            return False
        config = self._live.config(side)
        latest = self._live.latest_frame()
        image = frame_bgr if frame_bgr is not None else latest.image if latest is not None else None
        planned = plan(config.delegate)
        asked = f"{'side B: ' if side == 'b' else ''}{config.describe()}"
        if isinstance(planned, str):
            with self._lock:
                self._latest = NumericsOutcome(asked, time.monotonic(), error=planned, seconds=0.0)
            return True
        delegate, against = planned
        options = NumericsOptions(
            delegate=delegate,
            against=against,
            backend=config.options,
            mode=Mode.ALL if every_node else Mode.SEARCH,
            window_frames=(image,) if image is not None else (),
        )
        outcome = NumericsOutcome(f"{asked} against {against.value}", time.monotonic())
        with self._lock:
            self._latest = outcome
        self._thread = threading.Thread(
            target=self._run, args=(config.model, config.model_options, options, outcome), name="numerics", daemon=True
        )
        self._thread.start()
        return True

    def _run(
        self, model: str | Path, model_options: ModelOptions, options: NumericsOptions, outcome: NumericsOutcome
    ) -> None:
        try:
            spec = load_model_spec(model, options=model_options)
            result = run_numerics(spec, options)
            done = NumericsOutcome(outcome.asked, outcome.started, result=result)
        except DelegateScopeError as exc:
            done = NumericsOutcome(outcome.asked, outcome.started, error=str(exc))
        except Exception as exc:  # a bug in a background run: said in the view, never a crash of the window
            done = NumericsOutcome(outcome.asked, outcome.started, error=f"internal error: {type(exc).__name__}: {exc}")
        with self._lock:
            self._latest = NumericsOutcome(
                done.asked, done.started, done.result, done.error, time.monotonic() - done.started
            )

    def join(self, timeout: float | None = None) -> None:
        """Wait for a run in flight (the window's close waits a little; the thread is a daemon)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
