"""How the app reads the models that run (their task and why), for the delegation panel's Task row and
the video view: looked up once per model file and options, when a model opens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.errors import DelegateScopeError
from app.model.spec import ModelOptions, load_model_spec
from app.model.task import Task


@dataclass(frozen=True)
class ModelReading:
    task: Task
    evidence: str  # why the app reads the model that way ("metadata: ...", "structure: ...", "--task")
    frame_is_input: bool  # False: no input takes an image, the model is fed generated inputs

    def text(self) -> str:
        """The panel's Task row: 'detection (metadata: outputs named ...)'."""
        return f"{self.task.value} ({self.evidence})" if self.evidence else self.task.value


class ModelReadings:
    """(model, labels, options) -> ModelReading, each read once (load_model_spec reads the file)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str, ModelOptions], ModelReading | None] = {}

    def reading(self, model: str | Path, labels: Path | None, options: ModelOptions) -> ModelReading | None:
        """None when the file cannot be read now (moved, changed): the panel then shows no Task row."""
        key = (str(model), str(labels or ""), options)
        if key not in self._known:
            try:
                spec = load_model_spec(model, labels, options=options)
            except (DelegateScopeError, OSError):
                self._known[key] = None
            else:
                evidence = spec.task.evidence if spec.task is not None else ""
                self._known[key] = ModelReading(spec.kind, evidence, spec.image_input is not None)
        return self._known[key]
