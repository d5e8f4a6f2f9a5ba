"""Classify still images: the same preprocess -> run -> postprocess path as the live pipeline."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from app.backends import ModelRunner
from app.backends.base import child_cpu_reader
from app.errors import ImageError, ModelError, RunFailed
from app.model.image_files import read_image
from app.model.postprocess import Postprocessor, Prediction
from app.model.preprocess import Preprocessor
from app.model.spec import ModelSpec
from app.system.thread_cpu import CpuMeter, InferenceCpu

In = TypeVar("In")  # what the session is given (a tensor, every input)
Out = TypeVar("Out")  # what it returns


@dataclass(frozen=True)
class ImageResult:
    image: Path
    top: list[Prediction]
    preprocess_ms: float
    inference_ms: float
    postprocess_ms: float
    cpu: InferenceCpu  # CPU time during the inference: its thread, the runtime's threads, the rest
    hint: str | None = None  # e.g. flat scores: said with the result, not guessed away

    @property
    def inference_cpu_ms(self) -> float:
        """The inference's own CPU time: the calling thread and the runtime's workers."""
        return self.cpu.inference_ms

    @property
    def cpu_per_wall(self) -> float:
        """About threads x 1 when the CPU did the work, much less than 1 when a GPU or NPU did."""
        return self.inference_cpu_ms / self.inference_ms if self.inference_ms > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": str(self.image),
            "top": [p.to_dict() for p in self.top],
            "timing_ms": {
                "preprocess": round(self.preprocess_ms, 3),
                "inference": round(self.inference_ms, 3),
                "postprocess": round(self.postprocess_ms, 3),
                "inference_cpu": round(self.inference_cpu_ms, 3),
            },
            "inference_cpu_ms": self.cpu.to_dict(),
            "cpu_per_wall": round(self.cpu_per_wall, 3),
            **({"hint": self.hint} if self.hint else {}),
        }


@dataclass(frozen=True)
class ImageFailure:
    image: Path
    error: ImageError


@dataclass(frozen=True)
class ImageRun(Generic[Out]):
    """One image read, prepared and run, timed: what `classify` and `predict` then read each their way."""

    image: Path
    frame: np.ndarray  # as read
    output: Out  # what the session returned
    preprocess_ms: float
    inference_ms: float
    cpu: InferenceCpu
    finished: float  # time.perf_counter() when the run returned: the postprocess is timed from here

    def postprocess_ms(self) -> float:
        return (time.perf_counter() - self.finished) * 1e3


def run_images(
    images: Iterable[Path],
    prepare: Callable[[np.ndarray], In],
    run: Callable[[In], Out],
    runtime_threads: set[int] | None = None,
    read: Callable[[Path], np.ndarray] = read_image,
    child_cpu: Callable[[], float | None] | None = None,
) -> Generator[ImageRun[Out] | ImageFailure, None, None]:
    """Each image `read`, `prepare`d for the session (timed as preprocessing) and `run` (timed, its CPU
    time read): a picture that cannot be read or prepared is an ImageFailure and the loop goes on; a run
    that fails is RunFailed (the backend, not the image: the caller may go on elsewhere). `child_cpu`:
    a session that runs in a child process (app/backends/base.py child_cpu_reader)."""
    meter = CpuMeter(runtime_threads or set(), child_cpu=child_cpu)
    try:
        for path in images:
            try:
                frame = read(path)
                t0 = time.perf_counter()
                prepared = prepare(frame)
            except ImageError as exc:
                yield ImageFailure(path, exc)
                continue
            except ValueError as exc:
                yield ImageFailure(path, ImageError(f"{path}: {exc}"))
                continue
            meter.start()
            t1 = time.perf_counter()
            try:
                output = run(prepared)
            except ModelError as exc:
                raise RunFailed(str(exc)) from None
            t2 = time.perf_counter()
            cpu = meter.stop()
            yield ImageRun(path, frame, output, (t1 - t0) * 1e3, (t2 - t1) * 1e3, cpu, t2)
    finally:
        meter.close()


def classify_images(
    spec: ModelSpec, session: ModelRunner, images: Iterable[Path], top_k: int, runtime_threads: set[int] | None = None
) -> Iterator[ImageResult | ImageFailure]:
    """`runtime_threads`: the threads the session's runtime started when it opened (thread_cpu.started_by)."""
    postprocess = Postprocessor(spec)
    runs = run_images(images, Preprocessor(spec), session.run, runtime_threads, child_cpu=child_cpu_reader(session))
    with closing(runs):
        for r in runs:
            if isinstance(r, ImageFailure):
                yield r
                continue
            scores = postprocess.scores(r.output)
            top = postprocess.top_k(scores, top_k)
            postprocess_ms = r.postprocess_ms()
            hint = postprocess.flat_hint(scores)
            yield ImageResult(r.image, top, r.preprocess_ms, r.inference_ms, postprocess_ms, r.cpu, hint)
