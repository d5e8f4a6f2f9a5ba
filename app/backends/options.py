"""What a backend is asked for: one typed set of options, spelled in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

GPU_PRECISIONS = ("fp16", "fp32")


def default_threads() -> int:
    """All cores but one (the capture and UI threads need one), at least 1."""
    return max(1, (os.cpu_count() or 1) - 1)


@dataclass(frozen=True)
class BackendOptions:
    threads: int | None = None  # CPU threads (XNNPACK; the GPU's CPU kernels); None: default_threads()
    precision: str = "fp16"  # GPU, and Core ML's compute precision for translated float models: GPU_PRECISIONS
    allow_software: bool = False  # GPU: accept a software renderer (flagged as one)
    wait_hint: bool = False  # GPU: LiteRT's hint_waiting_for_completion
    compute_units: str = "all"  # Core ML: app.backends.coreml.backend.COMPUTE_UNITS

    @classmethod
    def of(cls, value: BackendOptions | Mapping[str, object] | None) -> BackendOptions:
        """Options as given by a caller that speaks in keywords (a mapping); None: the defaults.
        An unknown key is a TypeError naming it, not silently ignored."""
        if value is None:
            return cls()
        if isinstance(value, BackendOptions):
            return value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise TypeError(f"unknown backend option(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        given = {k: v for k, v in value.items() if v is not None or k == "threads"}
        return cls(**given)  # type: ignore[arg-type]

    @property
    def cpu_threads(self) -> int:
        """The thread count a CPU session (or a GPU session's CPU kernels) runs with."""
        threads = int(self.threads or default_threads())
        if threads < 1:
            raise ValueError("threads must be at least 1")
        return threads

    def to_dict(self) -> dict:
        return asdict(self)
