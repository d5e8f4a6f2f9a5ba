"""The backend interface: open a session for a model, run preprocessed inputs, close.

A session is created, used and closed on one thread (GPU delegates require
it). Opening reports what really happened, so nothing about delegation or
fallback is left for the user to guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from app.model import ModelSpec


@dataclass
class SessionReport:
    """What a backend really did when it opened a model."""

    requested: str
    used: str
    accelerator: str  # e.g. "XNNPACK (CPU, 1 thread)"
    init_ms: float = 0.0
    first_inference_ms: float = 0.0
    nodes_total: int | None = None
    nodes_delegated: int | None = None
    partitions: int | None = None
    cpu_ops: list[str] = field(default_factory=list)  # op types left on the runtime's own kernels
    fully_accelerated: bool | None = None
    adapter: str | None = None
    software: bool = False  # a "GPU" that is really the CPU (llvmpipe, lavapipe, SwiftShader)
    fallback_reason: str | None = None
    options: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    native_log: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


class Session(Protocol):
    report: SessionReport

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        """Run one preprocessed input (the ModelSpec's dtype); return the output, flattened.

        The output is the model's raw tensor (quantized for int8 models) or float scores;
        it must be complete when run returns (an asynchronous GPU run is waited for).
        """
        ...

    def close(self) -> None: ...


class Backend(Protocol):
    name: str  # "cpu", "gpu", "coreml"
    label: str  # shown in the UI: "CPU (XNNPACK)"

    def availability(self) -> str | None:
        """None when the backend can be tried here, else the reason it cannot."""
        ...

    def open(self, spec: ModelSpec, options: dict) -> Session: ...
