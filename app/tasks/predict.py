"""Predict on still images with any image model: the frame preprocessed for the model's task (a centre
crop for classifiers, the whole frame for the others), every input fed (the image and, for the others,
the feeder's values), every output run and read by the task's decoder (app/model/decode.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from app.backends import ModelRunner
from app.backends.base import child_cpu_reader
from app.errors import ImageError, ModelError, RunFailed
from app.model.decode import OutputStats, TaskDecoder, TaskResult
from app.model.feed import InputFeeder
from app.model.image_files import read_image
from app.model.postprocess import Postprocessor, Prediction
from app.model.preprocess import Preprocessor, as_bgr_uint8
from app.model.spec import ModelSpec
from app.model.task import ClassificationLayout, Task
from app.system.thread_cpu import CpuMeter, InferenceCpu


def refuse_without_image(spec: ModelSpec) -> None:
    """predict reads images: a model with no image input is exit 3, saying what runs it instead."""
    if spec.image_input is None:
        shapes = ", ".join(f"'{t.name}' {list(t.shape)} {t.dtype}" for t in spec.all_inputs)
        raise ModelError(
            f"{spec.path.name}: predict takes image models, and no input of this one is an image ({shapes}); "
            "`bench` and `profile` run it on generated inputs or on yours with --inputs FILE.npz"
        )


@dataclass(frozen=True)
class PredictResult:
    image: Path
    task: Task
    result: TaskResult  # the task's reading and every output's statistics
    top: list[Prediction]  # classification's top-k (as `classify`); empty for the other tasks
    preprocess_ms: float
    inference_ms: float
    postprocess_ms: float
    cpu: InferenceCpu

    @property
    def cpu_per_wall(self) -> float:
        return self.cpu.inference_ms / self.inference_ms if self.inference_ms > 0 else 0.0

    def summary(self) -> str:
        """One readable line: the top classes, the detections, the classes' shares, the keypoints."""
        if self.task == Task.CLASSIFICATION:
            return ", ".join(f"{p.label} {p.score:.2f}" for p in self.top[:3])
        return self.result.summary()

    def to_dict(self) -> dict[str, object]:
        fields = self.result.to_dict()
        out: dict[str, object] = {"image": str(self.image), "task": self.task.value}
        if self.task == Task.CLASSIFICATION:
            out["top"] = [p.to_dict() for p in self.top]
        out.update(fields)
        out["timing_ms"] = {
            "preprocess": round(self.preprocess_ms, 3),
            "inference": round(self.inference_ms, 3),
            "postprocess": round(self.postprocess_ms, 3),
            "inference_cpu": round(self.cpu.inference_ms, 3),
        }
        out["inference_cpu_ms"] = self.cpu.to_dict()
        out["cpu_per_wall"] = round(self.cpu_per_wall, 3)
        return out


@dataclass(frozen=True)
class ImageFailure:
    image: Path
    error: ImageError


def predict_images(
    spec: ModelSpec,
    session: ModelRunner,
    images: Iterable[Path],
    top_k: int,
    runtime_threads: set[int] | None = None,
    feeder: InputFeeder | None = None,
) -> Iterator[PredictResult | ImageFailure]:
    """`feeder`: the other inputs' values (made here when not given); `runtime_threads` as classify's."""
    refuse_without_image(spec)
    preprocess, decoder = Preprocessor(spec), TaskDecoder(spec)
    postprocess = Postprocessor(spec) if spec.kind == Task.CLASSIFICATION else None
    feeder = feeder or InputFeeder(spec)
    meter = CpuMeter(runtime_threads or set(), child_cpu=child_cpu_reader(session))
    try:
        for path in images:
            try:
                frame = as_bgr_uint8(read_image(path))
                t0 = time.perf_counter()
                tensor = preprocess(frame)
                inputs = feeder.inputs(tensor)
            except ImageError as exc:
                yield ImageFailure(path, exc)
                continue
            except ValueError as exc:
                yield ImageFailure(path, ImageError(f"{path}: {exc}"))
                continue
            meter.start()
            t1 = time.perf_counter()
            try:
                outputs = session.run_all(inputs)
            except ModelError as exc:  # the backend, not the image: the caller may go on elsewhere
                raise RunFailed(str(exc)) from None
            t2 = time.perf_counter()
            cpu = meter.stop()
            height, width = frame.shape[:2]
            crop = preprocess.crop_box(width, height)
            if postprocess is not None:
                layout = spec.task.layout if spec.task else None
                classifier = layout.output if isinstance(layout, ClassificationLayout) else 0
                top = postprocess.top_k(postprocess.scores(outputs[classifier]), top_k)
                stats = tuple(OutputStats.of(i, a) for i, a in zip(spec.all_outputs, outputs, strict=False))
                result = TaskResult(Task.CLASSIFICATION, stats, crop=crop)
            else:
                top = []
                result = decoder.decode(outputs, crop, (width, height))
            t3 = time.perf_counter()
            yield PredictResult(path, spec.kind, result, top, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, cpu)
    finally:
        meter.close()
