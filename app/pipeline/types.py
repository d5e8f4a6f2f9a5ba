"""What the pipeline publishes: its config, results, events and status (immutable snapshots)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from pathlib import Path

import numpy as np

from app.backends import BackendOptions, DelegationReport
from app.errors import DelegateScopeError, InternalError, error_for
from app.metrics.memory import MemoryDelta
from app.metrics.window import InferenceTiming
from app.model.decode import DETECTION_THRESHOLD, TaskResult
from app.model.postprocess import Prediction
from app.model.preprocess import CropBox
from app.model.spec import DEFAULT_MODEL, ModelFacts, ModelOptions
from app.sources import SourceInfo

POLL_S = 0.05  # how often a pipeline thread blocked in a wait looks at its stop flag


class EventKind(StrEnum):
    """Kinds of pipeline events; their values are the CSV's `event` column (docs/csv-format.md)."""

    OPEN = "open"  # the pipeline opened its backend session (before any switch)
    SWITCH = "switch"  # a new session replaced the old one (or a fail-over opened the CPU)
    FALLBACK = "fallback"  # the session opened runs elsewhere than requested
    SWITCH_FAILED = "switch_failed"  # a requested change was refused; the old session runs on
    SOURCE_LOST = "source_lost"
    SOURCE_RECONNECTED = "source_reconnected"
    SOURCE_ENDED = "source_ended"
    BAD_FRAME = "bad_frame"  # a frame the model cannot take was skipped
    BAD_RESULT = "bad_result"  # the model answered NaN/Inf: no result for that frame
    ERROR = "error"  # the run ended on an error


class State(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    RECONNECTING = "reconnecting"  # a live source was lost; the capture thread retries with back-off
    ENDED = "ended"  # the source ended
    ERROR = "error"  # a typed error ended the run: `Status.error()`
    STOPPED = "stopped"


@dataclass(frozen=True)
class InferenceConfig:
    """What an inference worker runs. Changing it live = `reconfigure(...)`."""

    model: str | Path = DEFAULT_MODEL
    labels: Path | None = None
    delegate: str = "cpu"
    options: BackendOptions = field(default_factory=BackendOptions)  # a mapping is read as BackendOptions.of
    fallback: bool = True
    throttle_ms: float = 0.0  # the iOS sample's delayBetweenInferencesMs
    top_k: int = 5
    model_options: ModelOptions = field(default_factory=ModelOptions)  # --task, --input-shape, --inputs
    score_threshold: float = DETECTION_THRESHOLD  # a detection below it is counted, not kept (live, as top-k)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", BackendOptions.of(self.options))

    def describe(self) -> str:
        return f"{Path(str(self.model)).stem} on {self.delegate}"

    def changes_from(self, old: InferenceConfig) -> str:
        """What a switch from `old` changes, in words: 'threads 2→1', 'model a→b, delegate cpu→gpu'."""
        parts = []
        if old.model != self.model:
            parts.append(f"model {Path(str(old.model)).stem}→{Path(str(self.model)).stem}")
        if old.labels != self.labels:
            parts.append(f"labels {_name(old.labels)}→{_name(self.labels)}")
        if old.model_options != self.model_options:
            parts.append("model options " + ("default" if self.model_options.is_default() else "changed"))
        if old.delegate != self.delegate:
            parts.append(f"delegate {old.delegate}→{self.delegate}")
        for f in fields(BackendOptions):
            before, after = getattr(old.options, f.name), getattr(self.options, f.name)
            if before != after:
                parts.append(f"{f.name.replace('_', ' ')} {_shown(before)}→{_shown(after)}")
        if old.fallback != self.fallback:
            parts.append("fallback " + ("on" if self.fallback else "off"))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        """For JSON: paths as text, options as a mapping."""
        d = {**asdict(self), "model": str(self.model), "labels": str(self.labels or "")}
        options = d.pop("model_options")
        if not self.model_options.is_default():  # said only when set: a classifier's JSON stays as it was
            d["model_options"] = {**options, **self.model_options.to_dict()}
        if self.score_threshold == DETECTION_THRESHOLD:  # likewise: said when the user set another
            d.pop("score_threshold")
        return d

    def same_session(self, other: InferenceConfig) -> bool:
        """True when only throttle, top-k or the score threshold differ: no need to reopen the backend."""
        return (self.model, self.labels, self.delegate, self.options, self.fallback, self.model_options) == (
            other.model,
            other.labels,
            other.delegate,
            other.options,
            other.fallback,
            other.model_options,
        )


def _name(path: Path | None) -> str:
    return path.name if path else "the model's own"


def _shown(value: object) -> str:
    return "default" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Result:
    frame_index: int
    captured_at: float
    wall_time: float
    top: list[Prediction]
    scores: np.ndarray  # read-only, dequantized class scores
    timing: InferenceTiming
    model: str
    model_id: str  # first 12 hex digits of the model file's sha256
    backend: str  # the backend that really ran it
    session_id: int  # changes with every (re)open; the open/switch event says what it was
    crop: CropBox
    frame_size: tuple[int, int]  # (width, height)
    task: TaskResult | None = None  # a model that is not a classifier: what it found (`top` is empty)


@dataclass(frozen=True)
class Event:
    """Something a recording or a plot marker must show: start, switch, fallback, source loss..."""

    kind: EventKind
    at: float  # monotonic
    wall_time: float
    message: str
    session_id: int | None = None
    report: DelegationReport | None = None
    close_ms: float | None = None  # switch cost: closing the old session
    open_ms: float | None = None  # ... opening the new one (LiteRT init)
    first_inference_ms: float | None = None  # ... and its first inference
    model: ModelFacts | None = None  # the model an open or switch event opened
    changes: str | None = None  # a switch: what changed ("threads 2→1"), InferenceConfig.changes_from
    memory: MemoryDelta | None = None  # an open or switch: what opening the session added to the resident set
    seq: int = 0  # position in its pipeline's event log, from 1: `events_since(seq)`


@dataclass(frozen=True)
class Status:
    state: State
    message: str
    source: SourceInfo | None = None
    exit_code: int | None = None  # state ERROR: the exit code of the typed error that ended the run

    def to_dict(self) -> dict[str, object]:
        """The `status` object of bench's JSON and the window's --stats (the source is said apart)."""
        return {"state": self.state, "message": self.message, "exit_code": self.exit_code}

    def error(self) -> DelegateScopeError | None:
        """State ERROR: the typed error that ended the run, for whoever reports it (exit codes)."""
        if self.state != State.ERROR:
            return None
        return error_for(self.exit_code or InternalError.exit_code, self.message)
