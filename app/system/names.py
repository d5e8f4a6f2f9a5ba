"""The names the command line, the settings and the JSON/CSV files spell: delegates, GPU precision,
Core ML compute units. One place, at the bottom of the layers, so that every layer spells them alike
(app/backends/options.py, the backends, the Core ML translation's precision)."""

from __future__ import annotations

from enum import StrEnum


class Name(StrEnum):
    """A name the command line, the settings and the JSON/CSV files spell as its value: str(x) and
    repr(x) are the value's, so argparse's "choose from" and every message quoting one read as before."""

    def __repr__(self) -> str:
        return repr(self.value)


class Delegate(Name):
    """The backends, in the order the command line and the window list them."""

    CPU = "cpu"
    GPU = "gpu"
    COREML = "coreml"
    REFERENCE = "reference"  # TensorFlow in a child process: the numerics every delegate is compared with


class GpuPrecision(Name):
    """The GPU's precision, and Core ML's compute precision for the ML programs translated from float models."""

    FP16 = "fp16"
    FP32 = "fp32"


class ComputeUnits(Name):
    """Core ML compute units (coremltools' ComputeUnit members, lower-cased)."""

    ALL = "all"
    CPU_AND_NE = "cpu_and_ne"
    CPU_AND_GPU = "cpu_and_gpu"
    CPU_ONLY = "cpu_only"

    @property
    def coremltools_name(self) -> str:
        """The member of coremltools.ComputeUnit: "CPU_AND_NE" for cpu_and_ne."""
        return self.value.upper()
