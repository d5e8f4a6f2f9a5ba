"""The inference thread's CPU pinning, as one sequence around each session (app/system/cpu_affinity.py).

Order matters, so it lives here and nowhere else:

1. `before_open`: reserve CPUs for the config's thread count, before the session exists, so its runtime's
   worker threads inherit them (or unpin, where the split cannot be made).
2. `after_open`: a session that runs on the CPU although an accelerator was asked for (a fallback, a
   software renderer, whose threads inherited the inference thread's one CPU: SwiftShader ran the float32
   model at half its speed so) runs unpinned; otherwise the runtime's workers stay on the inference CPUs,
   and a session whose model runs in a child process keeps those CPUs for the child while the inference
   thread, which only hands frames over, steps aside to the others.
3. `after_preprocess`: preprocessing on the inference thread may have started OpenCV's pool on its CPUs:
   those newcomers join the others.
4. `release`: every thread gets all CPUs back.
"""

from __future__ import annotations

import threading

from app.backends import ModelRunner
from app.backends.base import RunsInAChild
from app.backends.options import CPU_DELEGATES
from app.pipeline.plan import FeedPlan
from app.pipeline.types import InferenceConfig
from app.system import cpu_affinity


class Pinning:
    """One inference thread's pinning; its methods are called on that thread, `split` from any."""

    def __init__(self, plan: FeedPlan) -> None:
        self._plan = plan
        self._lock = threading.Lock()
        self._split: cpu_affinity.CpuSplit | None = None

    @property
    def split(self) -> cpu_affinity.CpuSplit | None:
        """The CPUs the inference thread and the other threads are pinned to, if pinned."""
        with self._lock:
            return self._split

    def _set(self, split: cpu_affinity.CpuSplit | None) -> None:
        with self._lock:
            self._split = split

    def before_open(self, config: InferenceConfig) -> None:
        if not self._plan.pin_cpus:
            return
        try:
            threads = config.options.cpu_threads
        except (TypeError, ValueError):
            threads = 0  # not pinned; open_session reports the bad option
        cpus = self._plan.inference_cpus or cpu_affinity.inference_cpus(config.delegate in CPU_DELEGATES, threads)
        split = cpu_affinity.split_for(cpus)
        if split is None or not cpu_affinity.apply(self, split, threading.get_native_id()):
            cpu_affinity.release(self)
            split = None
        self._set(split)

    def after_open(self, session: ModelRunner, config: InferenceConfig) -> None:
        if (session.report.used != config.delegate or session.report.software) and self.split is not None:
            cpu_affinity.release(self)
            self._set(None)
        cpu_affinity.session_opened(self)  # its runtime's workers stay on the inference CPUs
        if isinstance(session, RunsInAChild) and self.split is not None:
            self._set(cpu_affinity.step_aside(self, threading.get_native_id()))

    def after_preprocess(self) -> None:
        if self._split is not None:  # a racy read of one reference: at worst one more check
            cpu_affinity.place_newcomers(self)

    def release(self) -> None:
        cpu_affinity.release(self)
