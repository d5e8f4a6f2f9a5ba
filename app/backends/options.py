"""What a backend is asked for: one typed set of options, spelled in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from app.system.names import ComputeUnits, Delegate, GpuPrecision, Name

# The names are spelled once, in app/system/names.py: below every layer that needs one (the Core ML
# translation's precision included). Imported from here as well.
__all__ = [
    "CPU_DELEGATES",
    "BackendOptions",
    "ComputeUnits",
    "Delegate",
    "GpuPrecision",
    "Name",
    "default_threads",
]

# They compute on the CPU's cores, so their sessions' threads are the inference's (app/system/cpu_affinity.py).
CPU_DELEGATES = frozenset({Delegate.CPU, Delegate.REFERENCE})


def default_threads() -> int:
    """All cores but one (the capture and UI threads need one), at least 1."""
    return max(1, (os.cpu_count() or 1) - 1)


@dataclass(frozen=True)
class BackendOptions:
    threads: int | None = None  # CPU threads (XNNPACK; the GPU's CPU kernels); None: default_threads()
    # Strings from a caller (settings, a mapping) are kept as given: the backend that uses an option
    # refuses a value outside its enum, with its own message.
    precision: GpuPrecision | str = GpuPrecision.FP16  # GPU, and Core ML's for translated float models
    allow_software: bool = False  # GPU: accept a software renderer (flagged as one)
    wait_hint: bool = False  # GPU: LiteRT's hint_waiting_for_completion
    own_process: bool = False  # GPU: the session in a process of its own (app/backends/gpu/process_session.py)
    compute_units: ComputeUnits | str = ComputeUnits.ALL  # Core ML

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
        # The names are checked above; the values by the backend that uses them.
        given: dict[str, Any] = {k: v for k, v in value.items() if v is not None or k == "threads"}
        return cls(**given)

    @property
    def cpu_threads(self) -> int:
        """The thread count a CPU session (or a GPU session's CPU kernels) runs with."""
        threads = int(self.threads or default_threads())
        if threads < 1:
            raise ValueError("threads must be at least 1")
        return threads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
