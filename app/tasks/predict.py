"""Predict on still images with any image model: the frame preprocessed for the model's task (a centre
crop for classifiers, the whole frame for the others), every input fed (the image and, for the others,
the feeder's values), every output run and read by the task's decoder (app/model/decode.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from app.backends import ModelRunner
from app.backends.base import child_cpu_reader
from app.errors import ModelError
from app.model.decode import DETECTION_THRESHOLD, OutputStats, TaskDecoder, TaskResult
from app.model.feed import InputFeeder
from app.model.image_files import read_image
from app.model.postprocess import Postprocessor, Prediction
from app.model.preprocess import Preprocessor, as_bgr_uint8
from app.model.spec import ModelSpec
from app.model.task import ClassificationLayout, Task
from app.system.thread_cpu import InferenceCpu
from app.tasks.classify import ImageFailure, run_images


def refuse_without_image(spec: ModelSpec) -> None:
    """predict reads images: a model with no image input is exit 3, saying what runs it instead."""
    if spec.image_input is None:
        shapes = ", ".join(f"'{t.name}' {list(t.shape)} {t.dtype}" for t in spec.inputs)
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


def predict_images(
    spec: ModelSpec,
    session: ModelRunner,
    images: Iterable[Path],
    top_k: int,
    runtime_threads: set[int] | None = None,
    feeder: InputFeeder | None = None,
    score_threshold: float = DETECTION_THRESHOLD,
) -> Iterator[PredictResult | ImageFailure]:
    """`feeder`: the other inputs' values (made here when not given); `runtime_threads` as classify's."""
    refuse_without_image(spec)
    preprocess, decoder = Preprocessor(spec), TaskDecoder(spec, score_threshold)
    postprocess = Postprocessor(spec) if spec.kind == Task.CLASSIFICATION else None
    feeder = feeder or InputFeeder(spec)
    runs = run_images(images, lambda frame: feeder.inputs(preprocess(frame)), session.run_all, runtime_threads,
                      read=lambda path: as_bgr_uint8(read_image(path)),
                      child_cpu=child_cpu_reader(session))  # fmt: skip
    with closing(runs):
        for r in runs:
            if isinstance(r, ImageFailure):
                yield r
                continue
            outputs = r.output
            height, width = r.frame.shape[:2]
            crop = preprocess.crop_box(width, height)
            if postprocess is not None:
                layout = spec.task.layout if spec.task else None
                classifier = layout.output if isinstance(layout, ClassificationLayout) else 0
                top = postprocess.top_k(postprocess.scores(outputs[classifier]), top_k)
                stats = tuple(OutputStats.of(i, a) for i, a in zip(spec.outputs, outputs, strict=False))
                result = TaskResult(Task.CLASSIFICATION, stats, crop=crop)
            else:
                top = []
                result = decoder.decode(outputs, crop, (width, height))
            yield PredictResult(r.image, spec.kind, result, top, r.preprocess_ms, r.inference_ms, r.postprocess_ms(),
                                r.cpu)  # fmt: skip
