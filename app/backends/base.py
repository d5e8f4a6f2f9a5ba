"""The backend interface: open a session for a model, run preprocessed inputs, close.

A session is created, used and closed on one thread (GPU delegates require
it). Opening reports what really happened, so nothing about delegation or
fallback is left for the user to guess.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from app.backends.options import BackendOptions, Delegate, Name
from app.coverage import Coverage
from app.errors import ModelError
from app.model.spec import ModelSpec

if TYPE_CHECKING:  # split.py reads LiteRT's schema: imported only where pieces are made
    from app.coreml_mil.split import CoreMLPieces


class CoreMLMode(Name):
    """How a Core ML session runs the model."""

    EXPORTED_PACKAGE = "exported package"  # a converted .mlpackage beside the model (integer models)
    PARTITIONED = "partitioned"  # ML programs translated from the delegate's partitions, LiteRT between them


# JSON writes the mode inside "options", third: where the sessions wrote it before it was a field.
_MODE_KEY, _MODE_AT = "mode", 2


@dataclass(frozen=True)
class DelegationReport:
    """What a backend really did when it opened a model: built once, never patched. A change (a fallback, a
    failover) is a new report (`fell_back` in app/backends/__init__.py) that the session holds instead."""

    requested: str
    used: str
    accelerator: str  # e.g. "XNNPACK (CPU, 1 thread)"
    init_ms: float = 0.0
    first_inference_ms: float = 0.0
    nodes_total: int | None = None
    nodes_delegated: int | None = None
    partitions: int | None = None
    cpu_ops: tuple[str, ...] = ()  # op types left on the runtime's own kernels
    fully_accelerated: bool | None = None
    adapter: str | None = None
    software: bool = False  # a "GPU" that is really the CPU (llvmpipe, lavapipe, SwiftShader)
    fallback_reason: str | None = None
    # What the session was opened with, as JSON facts, in the order JSON writes them.
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    warnings: tuple[str, ...] = ()
    native_log: tuple[str, ...] = ()
    coverage: Coverage | None = None  # node by node: what the backend took and what it left, and why
    predicted: Coverage | None = None  # Core ML requested: the TFLite Core ML delegate's selection, from its rules
    coreml_pieces: CoreMLPieces | None = None  # Core ML requested: the pieces a Mac runs it in, in order
    coreml_mode: CoreMLMode | None = None  # a Core ML session: how it runs the model (in JSON: options["mode"])

    def __post_init__(self) -> None:
        # Lists and dicts are taken too (JSON, sidecars, callers): kept as tuples and a read-only copy.
        for name in _SEQUENCES:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _SEQUENCES:
            d[name] = list(d[name])
        d["options"] = copy.deepcopy(dict(self.options))
        for key in ("coverage", "predicted"):  # Coverage writes its own JSON (log_source only where set)
            value = d[key]
            d[key] = None if value is None else value.to_dict()
        if self.coreml_pieces is not None:
            d["coreml_pieces"] = asdict(self.coreml_pieces)
        mode = d.pop("coreml_mode")
        if mode is not None:
            items = list(d["options"].items())
            items.insert(_MODE_AT, (_MODE_KEY, mode.value))
            d["options"] = dict(items)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DelegationReport:
        """Back from to_dict() (summaries, recording sidecars)."""

        def typed(value: object) -> Coverage | None:
            return Coverage.from_dict(value) if isinstance(value, dict) else None

        options = dict(d.get("options") or {})
        mode = options.pop(_MODE_KEY, None)
        pieces = d.get("coreml_pieces")
        return cls(**{
            **d,
            "options": options,
            "coreml_mode": CoreMLMode(mode) if mode in tuple(CoreMLMode) else None,
            "coverage": typed(d.get("coverage")),
            "predicted": typed(d.get("predicted")),
            "coreml_pieces": _pieces(pieces) if isinstance(pieces, dict) else None,
        })  # fmt: skip


_SEQUENCES = ("cpu_ops", "warnings", "native_log")


def _pieces(d: dict[str, Any]) -> CoreMLPieces | None:
    from app.coreml_mil.split import CoreMLPieces

    try:
        return CoreMLPieces.from_dict(d)
    except (KeyError, TypeError, ValueError):  # a sidecar written by hand or by another version
        return None


class ModelRunner(Protocol):
    report: DelegationReport

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        """Run one preprocessed input (the ModelSpec's dtype); return the output, flattened.

        The output is the model's raw tensor (quantized for int8 models) or float scores;
        it must be complete when run returns (an asynchronous GPU run is waited for).
        """
        ...

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run one set of inputs (every input, model order, each its dtype and fixed shape); return every
        output in model order, shaped, owned by the caller. Any model, any task."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class RunsInAChild(Protocol):
    """A session whose model runs in a child process (the TensorFlow reference): its CPU time is that
    process's, invisible to this one's per-thread clocks, so the session reads it from the child."""

    def last_child_cpu_ms(self) -> float | None:
        """The child's CPU milliseconds on the last run (its own process clock); None before one."""
        ...


@dataclass(frozen=True)
class ChildRun:
    """One run as the child process that ran it measured it (QueuedRunner.collect)."""

    output: np.ndarray  # the primary output, flattened, owned by the caller
    run_ms: float  # the run's wall time in the child (write, run, read)
    thread_cpu_ms: float  # the child's running thread's CPU during it
    process_cpu_ms: float  # the child process's CPU during it (its runtime's threads too)


class QueuedRunner(Protocol):
    """A session that runs in a child process and takes up to `depth` inputs ahead
    (app/backends/gpu/process_session.py): its caller queues the next input before it waits for the
    last, so the child starts each run as soon as the one before returns."""

    depth: int

    def submit(self, input_tensor: np.ndarray) -> None:
        """Queue one input (as `run` takes it); `collect` answers in order."""
        ...

    def collect(self) -> ChildRun:
        """The oldest queued input's output; waits for it."""
        ...


def child_cpu_reader(session: ModelRunner) -> Callable[[], float | None] | None:
    """What a CpuMeter calls after each run to add a child process's CPU time; None for in-process sessions."""
    return session.last_child_cpu_ms if isinstance(session, RunsInAChild) else None


class Backend(Protocol):
    name: Delegate
    label: str  # shown in the UI: "CPU (XNNPACK)"

    def availability(self) -> str | None:
        """None when the backend can be tried here, else the reason it cannot."""
        ...

    def open(self, spec: ModelSpec, options: BackendOptions) -> ModelRunner: ...


def first_line(exc: BaseException | str) -> str:
    """The first line of an error message (native wrappers put whole logs in them)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text and text.splitlines() else type(exc).__name__


_UNRESOLVED = re.compile(r"unresolved custom op: ([^\s.]+)")


def refusal(exc: BaseException, spec: ModelSpec) -> str:
    """The runtime's refusal of a model in one line; a custom op it has no kernel for named with its node."""
    text = str(exc)
    match = _UNRESOLVED.search(text)
    if match:
        op = match.group(1)
        nodes = [i for i, name in enumerate(spec.op_types) if name == f"CUSTOM:{op}"]
        where = f"node {nodes[0]}" if len(nodes) == 1 else f"nodes {', '.join(map(str, nodes))}" if nodes else "a node"
        return (
            f"the model needs the custom op '{op}' ({where}), which this LiteRT runtime does not have: "
            "no backend here can run it"
        )
    return f"the LiteRT runtime refused the model: {first_line(exc)}"


def zero_inputs(spec: ModelSpec) -> list[np.ndarray]:
    return [np.zeros(t.shape, np.dtype(t.dtype)) for t in spec.inputs]


def time_first_inference(session: ModelRunner, spec: ModelSpec) -> float:
    """Milliseconds of one run on a zero input: the first run pays one-off costs (weight
    packing, shader or device preparation), so it is measured apart from the steady state."""
    if not spec.is_image_classifier:
        started = time.perf_counter()
        outputs = session.run_all(zero_inputs(spec))
        elapsed = (time.perf_counter() - started) * 1000
        if len(outputs) != len(spec.outputs):
            raise ModelError(f"the runtime gave {len(outputs)} outputs but the model declares {len(spec.outputs)}")
        return elapsed
    started = time.perf_counter()
    out = session.run(np.zeros(spec.input.shape, spec.input_dtype))  # 1, 3 or 4 channels
    elapsed = (time.perf_counter() - started) * 1000
    if out.size != spec.classes:  # a corrupt file can declare one output shape and compute another
        raise ModelError(f"the runtime's output has {out.size} values but the model declares {spec.classes} classes")
    return elapsed
