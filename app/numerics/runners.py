"""Who computes the two sides of a cut: the delegate runs each cut on its own (one compile per cut), the
reference runs the whole model once per input set and hands over every cut's tensors.

Delegate side: the GPU through a LiteRT compiled model (the GPU session's accelerators: GPU, with its CPU
kernels for what it leaves), the CPU through XNNPACK, Core ML (macOS) through the partitioned Core ML
session. Reference side: XNNPACK at fp32 on the whole graph with every cut's tensors made outputs
(`cpu`), or LiteRT's reference kernels with every intermediate tensor preserved (`reference`)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from app.backends.base import first_line
from app.backends.litert_c import HW_CPU, HW_GPU, Environment, NativeModel
from app.backends.options import BackendOptions, Delegate, GpuPrecision
from app.errors import BackendUnavailable, ModelError
from app.model.spec import ModelOptions, load_model_spec
from app.model.task import Task
from app.numerics.cuts import CutModel
from app.system.native_log import capture_stderr

InputSet = Sequence[np.ndarray]  # one inference's inputs, the cut's (or the model's) order


class CutRefused(Exception):
    """The delegate cannot compile or run this cut; the reason in one line."""


@dataclass(frozen=True)
class CutOutputs:
    """What the delegate wrote for one cut: per input set, the cut's outputs."""

    outputs: list[list[np.ndarray]]
    on_delegate: bool | None  # every node of the prefix on the delegate (None: the runtime does not say)
    compile_s: float
    run_s: float


class DelegateCuts(Protocol):
    delegate: Delegate
    precision: str | None  # the GPU's (and Core ML's) precision; None where it is fp32 by nature

    def run(self, content: bytes, shapes: Sequence[tuple[int, ...]], sets: Sequence[InputSet]) -> CutOutputs:
        """Compile the cut `content` (inputs of `shapes`) and run it on every input set; CutRefused when it cannot."""
        ...

    def close(self) -> None:
        """After the last cut: what the cuts shared (the GPU's environment)."""
        ...


class GpuCuts:
    """Each cut compiled by LiteRT's GPU accelerator (with its CPU kernels for the ops it leaves), as the GPU
    session compiles the whole model. The whole model was opened through the GPU backend first (its
    software-renderer policy and its compile check in a child process), so a cut is a subgraph of a graph
    this accelerator compiled."""

    delegate = Delegate.GPU

    def __init__(self, options: BackendOptions) -> None:
        self.precision: str | None = str(options.precision)
        self._threads = options.cpu_threads
        # One environment for every cut: making one makes the GPU device, which cost more than most cuts'
        # compile and run together (litert_c.Environment). The cuts still compile one by one.
        self._environment: Environment | None = None

    def run(self, content: bytes, shapes: Sequence[tuple[int, ...]], sets: Sequence[InputSet]) -> CutOutputs:
        started = time.perf_counter()
        with capture_stderr() as log:
            try:
                if self._environment is None:
                    self._environment = Environment(gpu=True)
                model = NativeModel(
                    content,
                    HW_GPU | HW_CPU,
                    self._threads,
                    profiling=False,
                    gpu_precision=self.precision or GpuPrecision.FP16,
                    input_shapes=list(shapes),
                    capture_log=False,
                    environment=self._environment,
                )
            except (BackendUnavailable, ModelError) as exc:
                said = [line for line in log.lines() if line.startswith(("ERROR", "E0000"))]
                why = (said or [first_line(exc)])[-1][:200]
                raise CutRefused(f"the GPU accelerator did not compile it ({why})") from None
            try:
                on_delegate = model.is_fully_accelerated()
                compiled = time.perf_counter()
                outputs = [model.run_all(list(inputs)) for inputs in sets]
            except (ModelError, ValueError) as exc:
                raise CutRefused(f"the GPU did not run it ({first_line(exc)})") from None
            finally:
                model.close()
        return CutOutputs(outputs, on_delegate, compiled - started, time.perf_counter() - compiled)

    def close(self) -> None:
        if self._environment is not None:
            self._environment.close()
            self._environment = None


class CpuCuts:
    """Each cut on LiteRT's CPU path (XNNPACK applied, as the CPU backend runs the whole model)."""

    delegate = Delegate.CPU
    precision: str | None = None

    def __init__(self, options: BackendOptions) -> None:
        self._threads = options.cpu_threads

    def run(self, content: bytes, shapes: Sequence[tuple[int, ...]], sets: Sequence[InputSet]) -> CutOutputs:
        started = time.perf_counter()
        try:
            with capture_stderr():
                interpreter = _interpreter(content, shapes, self._threads, OpResolverType.AUTO, preserve=False)
        except ModelError as exc:
            raise CutRefused(str(exc)) from None
        compiled = time.perf_counter()
        try:
            outputs = [_invoke(interpreter, inputs) for inputs in sets]
        except (RuntimeError, ValueError) as exc:
            raise CutRefused(f"the CPU did not run it ({first_line(exc)})") from None
        return CutOutputs(outputs, True, compiled - started, time.perf_counter() - compiled)

    def close(self) -> None:
        pass  # nothing shared between cuts


class CoreMLCuts:
    """Each cut through the partitioned Core ML session (macOS): its delegated partitions as ML programs,
    the rest in LiteRT, as that session runs the whole model."""

    delegate = Delegate.COREML

    def __init__(self, options: BackendOptions) -> None:
        self.precision: str | None = str(options.precision)
        self._options = options

    def run(self, content: bytes, shapes: Sequence[tuple[int, ...]], sets: Sequence[InputSet]) -> CutOutputs:
        from app.backends.coreml.partitioned import PartitionedCoreMLSession

        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="delegate-scope-cut-") as folder:
            path = Path(folder) / "cut.tflite"
            path.write_bytes(content)
            fixed = tuple((str(i), tuple(s)) for i, s in enumerate(shapes))
            spec = load_model_spec(path, options=ModelOptions(task=Task.RAW, input_shapes=fixed))
            try:
                session = PartitionedCoreMLSession(
                    spec, self._options.compute_units, self.precision or "fp16", self._options.cpu_threads
                )
            except (BackendUnavailable, ModelError) as exc:
                raise CutRefused(f"Core ML did not take it ({first_line(exc)})") from None
        compiled = time.perf_counter()
        try:
            outputs = [session.run_all(list(inputs)) for inputs in sets]
        except ModelError as exc:
            raise CutRefused(f"Core ML did not run it ({first_line(exc)})") from None
        finally:
            session.close()
        return CutOutputs(outputs, session.report.fully_accelerated, compiled - started, time.perf_counter() - compiled)

    def close(self) -> None:
        pass  # nothing shared between cuts


def delegate_cuts(delegate: Delegate, options: BackendOptions) -> DelegateCuts:
    if delegate == Delegate.GPU:
        return GpuCuts(options)
    if delegate == Delegate.COREML:
        return CoreMLCuts(options)
    if delegate == Delegate.CPU:
        return CpuCuts(options)
    raise ValueError(f"no cuts run on {delegate}")


class Against(StrEnum):
    """The reference side."""

    CPU = "cpu"  # XNNPACK at fp32
    REFERENCE = "reference"  # LiteRT's reference kernels, no XNNPACK


@dataclass(frozen=True)
class ReferenceTensors:
    """Per input set, every cut's tensors by whole-graph index; the model's outputs among them."""

    tensors: list[dict[int, np.ndarray]]
    seconds: float
    kernels: str  # in words: "XNNPACK (fp32, every cut's tensor an output)" or "LiteRT reference kernels"


def reference_tensors(
    model: CutModel,
    content: bytes,
    against: Against,
    shapes: Sequence[tuple[int, ...]],
    sets: Sequence[InputSet],
    threads: int,
) -> ReferenceTensors:
    """The reference's tensors for every cut and the model's outputs, one whole-model run per input set."""
    started = time.perf_counter()
    wanted = [t for cut in model.cuts for t in cut.outputs] + list(model.graph.outputs)
    if against == Against.REFERENCE:
        with capture_stderr():
            interpreter = _interpreter(content, shapes, 1, OpResolverType.BUILTIN_REF, preserve=True)
        tensors = []
        for inputs in sets:
            _invoke(interpreter, inputs)
            tensors.append({t: interpreter.get_tensor(t).copy() for t in wanted})
        kernels = "LiteRT reference kernels (no XNNPACK), every intermediate tensor preserved"
    elif against == Against.CPU:
        every, order = model.every_tensor()
        with capture_stderr():
            interpreter = _interpreter(every, shapes, threads, OpResolverType.AUTO, preserve=False)
        tensors = [dict(zip(order, _invoke(interpreter, inputs), strict=True)) for inputs in sets]
        kernels = "XNNPACK (fp32), every cut's tensor an output of one whole-model run"
    else:
        raise ValueError(f"unknown reference '{against}'")
    return ReferenceTensors(tensors, time.perf_counter() - started, kernels)


def _interpreter(
    content: bytes, shapes: Sequence[tuple[int, ...]], threads: int, resolver: OpResolverType, preserve: bool
) -> Interpreter:
    try:
        interpreter = Interpreter(
            model_content=content,
            num_threads=threads,
            experimental_op_resolver_type=resolver,
            experimental_preserve_all_tensors=preserve,
        )
        for detail, shape in zip(interpreter.get_input_details(), shapes, strict=False):
            if tuple(detail["shape"]) != tuple(shape):
                interpreter.resize_tensor_input(detail["index"], list(shape))
        interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"the LiteRT runtime refused it: {first_line(exc)}") from None
    return interpreter


def _invoke(interpreter: Interpreter, inputs: InputSet) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]
