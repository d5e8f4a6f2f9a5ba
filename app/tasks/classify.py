"""Classify still images: the same preprocess -> run -> postprocess path as the live pipeline."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from app.backends import ModelRunner
from app.backends.base import child_cpu_reader
from app.errors import ImageError, ModelError, RunFailed
from app.model.image_files import read_image
from app.model.postprocess import Postprocessor, Prediction
from app.model.preprocess import Preprocessor
from app.model.spec import ModelSpec
from app.system.thread_cpu import CpuMeter, InferenceCpu


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

    def to_dict(self) -> dict:
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


def classify_images(
    spec: ModelSpec, session: ModelRunner, images: Iterable[Path], top_k: int, runtime_threads: set[int] | None = None
) -> Iterator[ImageResult | ImageFailure]:
    """`runtime_threads`: the threads the session's runtime started when it opened (thread_cpu.started_by)."""
    preprocess, postprocess = Preprocessor(spec), Postprocessor(spec)
    meter = CpuMeter(runtime_threads or set(), child_cpu=child_cpu_reader(session))
    try:
        for path in images:
            try:
                frame = read_image(path)
                t0 = time.perf_counter()
                tensor = preprocess(frame)
            except ImageError as exc:
                yield ImageFailure(path, exc)
                continue
            except ValueError as exc:
                yield ImageFailure(path, ImageError(f"{path}: {exc}"))
                continue
            meter.start()
            t1 = time.perf_counter()
            try:
                raw = session.run(tensor)
            except ModelError as exc:  # the backend, not the image: the caller may go on elsewhere
                raise RunFailed(str(exc)) from None
            t2 = time.perf_counter()
            cpu = meter.stop()
            scores = postprocess.scores(raw)
            top = postprocess.top_k(scores, top_k)
            t3 = time.perf_counter()
            hint = postprocess.flat_hint(scores)
            yield ImageResult(path, top, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, cpu, hint)
    finally:
        meter.close()
