"""GPU backend: a LiteRT compiled model with the GPU accelerator (WebGPU over Vulkan on Linux and
Windows, Metal on macOS), with CPU kernels allowed for ops the GPU cannot take.

It is built and run through LiteRT's C API (`app/backends/litert_c.py`), not the Python wrapper's
`CompiledModel`: the wrapper holds the GIL through a GPU run, which stalled every other thread of
the pipeline behind each inference (docs/pipeline.md, "The GPU path"). The C options also name the
precision: the wrapper could only ask for fp32 or leave the runtime's default, which gave fp16's
outputs on an H200 but fp32's, bit for bit, under SwiftShader.

What the runtime does not say, this module finds out: which adapter it ran on
(from the Vulkan loader), whether that adapter is a software renderer (a "GPU"
that is really the CPU), and why a GPU could not be used (parsed from the
native log). A software adapter is refused unless asked for, so that the
fallback to the real CPU path is visible instead of a 100x slowdown.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from app.backends import preflight
from app.backends.base import DelegationReport, time_first_inference, zero_inputs
from app.backends.gpu.process_protocol import SlotLayout
from app.backends.gpu.process_session import GpuProcessSession
from app.backends.gpu.vulkan_devices import SOFTWARE_NAMES, VulkanDevice, list_devices, preferred
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.backends.options import BackendOptions, Delegate, GpuPrecision
from app.coverage import Coverage
from app.coverage.gpu_nodes import GpuNodes, GpuSplit, parse_split, resolve
from app.coverage.measured import gpu_coverage, gpu_replacing_line
from app.coverage.replacing import WEBGPU_KERNEL, XNNPACK_KERNEL
from app.errors import BackendUnavailable, ModelError, RunFailed
from app.model.spec import ModelSpec, bundled_models
from app.model.task import Task
from app.system.native_log import capture_stderr
from app.tflite.graph import read_graph

PROBE_TIMEOUT_S = 90
_SELECTED_ADAPTER = re.compile(r"[Ss]elected adapter:?\s*(.+)")
_REPLACING = re.compile(
    r"Replacing (\d+) out of (\d+) node\(s\) with delegate \(([^)]*)\) node, yielding (\d+) partitions"
)
_BACKEND_NAME = "Metal" if sys.platform == "darwin" else "WebGPU/Vulkan"
# The delegate kernel TFLite's "Replacing … with delegate (K) node" line names: known for the WebGPU
# accelerator this package ships (app/coverage/replacing.py), not for Metal's, so no line is computed there.
_KERNEL = None if sys.platform == "darwin" else WEBGPU_KERNEL


@dataclass(frozen=True)
class LogFacts:
    adapter: str | None = None
    nodes_delegated: int | None = None
    nodes_total: int | None = None
    subsets: int | None = None  # "yielding P partitions": every node subset, delegated or not
    line: str | None = None  # that log line, word for word


def pretty_adapter(raw: str) -> str:
    """LiteRT's 'NVIDIA H200, arch=, vendor=nvidia, backend=Vulkan, adapterType=Discrete GPU'
    -> 'NVIDIA H200 (Vulkan, Discrete GPU)'."""
    name, *pairs = [part.strip() for part in raw.split(", ")]
    fields = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    details = [v for v in (fields.get("backend"), fields.get("adapterType")) if v]
    return f"{name} ({', '.join(details)})" if details else raw


def parse_log(lines: list[str]) -> LogFacts:
    """Facts LiteRT states in its native log (how much it prints depends on the build)."""
    adapter = nodes = total = subsets = said = None
    for line in lines:
        if m := _SELECTED_ADAPTER.search(line):
            adapter = pretty_adapter(m.group(1).strip())
        # LiteRT applies XNNPACK after the GPU, to what is left: a build that logs both prints its line too.
        if (m := _REPLACING.search(line)) and m.group(3) != XNNPACK_KERNEL:
            nodes, total, subsets = int(m.group(1)), int(m.group(2)), int(m.group(4))
            said = line[m.start() :].strip()
    return LogFacts(adapter, nodes, total, subsets, said)


def failure_reason(
    lines: list[str], devices: list[VulkanDevice], vulkan_problem: str | None, unread: str | None = None
) -> str:
    """Why the GPU accelerator could not start, in words a user can act on. `unread`: LiteRT's
    compiled-model API refused the model itself (before any accelerator), e.g. a model with variable
    tensors (a stateful LSTM): "Variable tensors not yet supported" (litert/core/model/model_load.cc)."""
    text = "\n".join(lines)
    if unread is not None and "read the model" in unread:
        said = [line for line in lines if line.startswith("ERROR") and "model_load" in line]
        why = said[-1].split("]", 1)[-1].strip() if said else unread
        return f"LiteRT's compiled-model API, which its GPU accelerator runs in, cannot read this model ({why})"
    if "No adapters found" in text or "Failed to initialize WebGPU" in text:
        if vulkan_problem:
            return f"no GPU adapter found ({vulkan_problem})"
        if devices:
            listed = "; ".join(d.describe() for d in devices)
            return f"no GPU adapter found: WebGPU rejected every Vulkan device ({listed})"
        return "no GPU adapter found"
    if "GPU accelerator" in text and "not" in text and "registered" in text:
        return "the LiteRT GPU accelerator library could not be loaded"
    errors = [line for line in lines if line.startswith(("ERROR", "E0000")) or "error" in line.lower()]
    return f"the GPU accelerator failed to compile the model ({(errors or lines or ['no details'])[-1].strip()[:200]})"


def _adapter(facts: LogFacts, devices: list[VulkanDevice]) -> tuple[str | None, bool]:
    if facts.adapter:
        lower = facts.adapter.lower()
        return facts.adapter, "adaptertype=cpu" in lower or any(s in lower for s in SOFTWARE_NAMES)
    if sys.platform == "darwin":
        return "Apple GPU (Metal)", False
    device = preferred(devices)
    return (device.describe(), device.software) if device else (None, False)


def _compile_alone(model: NativeModel) -> Callable[[bytes], tuple[bool, list[str]]]:
    """Compile a (one-node) model with the session's options in its environment: (fully accelerated, log)."""

    def compile_one(data: bytes) -> tuple[bool, list[str]]:
        with capture_stderr() as log:
            taken = model.fully_accelerates(data)  # one the runtime cannot even compile alone: not taken
        return taken, log.lines()

    return compile_one


def _nodes_taken(spec: ModelSpec, split: GpuSplit | None, fully: bool, model: NativeModel) -> GpuNodes | str | None:
    """Which nodes the GPU took of a model it did not take whole (app.coverage.gpu_nodes); None when the
    log has no refused-ops block to start from, a sentence when the answer does not add up."""
    if fully or split is None:
        return None
    try:
        graph = read_graph(spec.content)
    except ModelError as exc:
        return f"the model's graph could not be read ({exc})"
    return resolve(graph, spec.content, split, fully, _compile_alone(model))


class GpuRunFailed(RunFailed):
    """A run of an open GPU session failed (a lost device, a driver error): the pipeline falls back to
    the CPU on it (app/pipeline/worker.py), and in the session's own first run it is a GPU that cannot
    be used here, so opening falls back too."""


@dataclass(frozen=True)
class _NodeCounts:
    """The GPU's share of the graph in the runtime's own counts (None where it did not say)."""

    total: int
    delegated: int | None
    partitions: int | None


def _count_nodes(
    spec: ModelSpec, facts: LogFacts, split: GpuSplit | None, taken: GpuNodes | str | None, fully: bool
) -> _NodeCounts:
    total = facts.nodes_total or len(spec.op_types)
    # Fully accelerated means every node runs on the GPU: that count is a fact, not a guess.
    delegated = facts.nodes_delegated if facts.nodes_delegated is not None else (total if fully else None)
    if delegated is None and split is not None and split.gpu_nodes is not None:
        delegated = split.gpu_nodes  # "N operations will run on the GPU": the runtime's own count
    # TFLite's "yielding P partitions" counts every node subset, the ones left on the CPU too
    # (subgraph.cc, ReplaceNodeSubsetsWithDelegateKernels: node_subsets.size()), so it is not the
    # number of GPU partitions. A fully accelerated graph is one subset: the partitioner's first
    # epoch takes every node when all are of one kind.
    partitions = 1 if fully else (taken.partitions_delegated if isinstance(taken, GpuNodes) else None)
    return _NodeCounts(total, delegated, partitions)


def _coverage(
    spec: ModelSpec,
    facts: LogFacts,
    split: GpuSplit | None,
    taken: GpuNodes | str | None,
    fully: bool,
    counts: _NodeCounts,
) -> Coverage:
    return gpu_coverage(
        spec.op_types,
        spec.op_versions,
        fully,
        counts.delegated,
        counts.partitions,
        facts.line,
        facts.subsets,
        taken,
        summary=split.line if split else None,
        computed=None if facts.line else gpu_replacing_line(spec.content, fully, taken, _KERNEL),
    )


def _left_on_cpu(coverage: Coverage, fully: bool) -> tuple[str, ...]:
    return () if fully else tuple(sorted({n.op for n in coverage.left_on_cpu}))


def _warnings(adapter: str | None, software: bool, fully: bool, left: tuple[str, ...]) -> tuple[str, ...]:
    said = []
    if software:
        said.append(f"the GPU adapter is a software renderer ({adapter}): 'GPU' inference runs on the CPU")
    if not fully:
        said.append(
            f"not fully accelerated: {', '.join(left)} run on LiteRT's CPU kernels"
            if left
            else "not fully accelerated: some ops run on LiteRT's CPU kernels (this runtime does not say which)"
        )
    return tuple(said)


class GpuSession:
    def __init__(
        self,
        spec: ModelSpec,
        precision: GpuPrecision | str,
        threads: int,
        allow_software: bool,
        wait_hint: bool = False,
    ) -> None:
        devices, vulkan_problem = list_devices()
        started = time.perf_counter()
        self._model: NativeModel | None = None
        native_log = self._open(spec, precision, threads, wait_hint, devices, vulkan_problem)
        facts = parse_log(native_log)
        adapter, software = _adapter(facts, devices)
        if software and not allow_software:
            self.close()
            raise BackendUnavailable(f"GPU adapter is a software renderer: {adapter}")
        fully = self._fully_accelerated()
        split = parse_split(native_log)
        taken = _nodes_taken(spec, split, fully, self._opened())
        self._one_run_inputs(spec)
        init_ms = (time.perf_counter() - started) * 1000
        counts = _count_nodes(spec, facts, split, taken, fully)
        coverage = _coverage(spec, facts, split, taken, fully, counts)
        left = _left_on_cpu(coverage, fully)
        self.report = DelegationReport(
            requested="gpu",
            used="gpu",
            accelerator=f"LiteRT GPU ({_BACKEND_NAME}, {precision})",
            init_ms=init_ms,
            first_inference_ms=self._first_inference(spec),
            nodes_total=counts.total,
            nodes_delegated=counts.delegated,
            partitions=counts.partitions,
            cpu_ops=left,
            fully_accelerated=fully,
            coverage=coverage,
            adapter=adapter,
            software=software,
            options={"precision": precision, "threads": threads},
            warnings=_warnings(adapter, software, fully, left),
            native_log=tuple(native_log),
        )

    def _open(
        self,
        spec: ModelSpec,
        precision: GpuPrecision | str,
        threads: int,
        wait_hint: bool,
        devices: list[VulkanDevice],
        vulkan_problem: str | None,
    ) -> list[str]:
        """The compiled model on the GPU accelerator; the runtime's log while it compiled, or why it could not."""
        unread: str | None = None
        with capture_stderr() as log:
            try:
                # wait_hint: LiteRT's hint_waiting_for_completion, measured for whether the calling
                # thread then sleeps instead of spinning while the GPU runs (docs/pipeline.md).
                self._model = NativeModel(
                    spec.content,
                    HW_GPU | HW_CPU,
                    threads,
                    profiling=False,
                    gpu_precision=precision,
                    input_shapes=[t.shape for t in spec.inputs],
                    wait_hint=wait_hint,
                    capture_log=False,
                )
            except BackendUnavailable:
                pass
            except ModelError as exc:
                unread = str(exc)
        if self._model is None:
            raise BackendUnavailable(failure_reason(log.lines(), devices, vulkan_problem, unread))
        return log.lines()

    def _opened(self) -> NativeModel:
        assert self._model is not None, "the GPU session is closed"
        return self._model

    def _fully_accelerated(self) -> bool:
        """The runtime's own answer: whether the GPU took every node."""
        try:
            return self._opened().is_fully_accelerated()
        except ModelError as exc:
            self.close()
            raise BackendUnavailable(f"the GPU accelerator could not say what it took ({exc})") from None

    def _first_inference(self, spec: ModelSpec) -> float:
        try:
            return time_first_inference(self, spec)
        except GpuRunFailed as exc:  # e.g. the device lost at once: as unusable as no adapter
            self.close()
            raise BackendUnavailable(f"the GPU failed its first inference ({exc})") from None

    def _one_run_inputs(self, spec: ModelSpec) -> None:
        """What `run` needs: the image input and the task's primary output (as the CPU session reads them).
        One input and the primary output first: the direct path (NativeModel.run_tensor, the classifiers'
        path, measured in docs/performance.md); otherwise every input (zeros but the image) and output."""
        assert self._model is not None
        self._image = spec.image_input if spec.image_input is not None else 0
        layout = spec.task.layout if spec.task is not None else None
        self._primary = int(getattr(layout, "output", 0))
        self._direct = len(self._model.input_layouts) == 1 and self._primary == 0
        self._others = zero_inputs(spec)
        first = self._model.output_layouts[0]
        self._out_count = spec.classes if spec.kind == Task.CLASSIFICATION else int(np.prod(first.shape))
        from_spec = spec.kind == Task.CLASSIFICATION or first.dtype is None  # a type numpy lacks: the file's
        self._out_dtype = np.dtype(spec.output.dtype) if from_spec else first.dtype
        self._in_dtype = np.dtype(spec.input.dtype)

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Every input (model order, each its dtype and fixed shape), one run, every output in model order
        shaped as the runtime allocated it (the SSD's post-processing outputs get theirs only then)."""
        if self._model is None:
            raise GpuRunFailed("the GPU run failed: the session is closed")
        try:
            return self._model.run_all(inputs)
        except ModelError as exc:  # a failing device fails in the locks too: fall back, not crash
            raise GpuRunFailed(f"the GPU run failed: {exc}") from None
        except ValueError as exc:
            raise ModelError(f"the GPU session cannot take these inputs: {exc}") from None

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        if self._model is None:
            raise GpuRunFailed("the GPU run failed: the session is closed")
        if not self._direct:
            inputs = list(self._others)
            inputs[self._image] = np.asarray(input_tensor, dtype=self._in_dtype).reshape(inputs[self._image].shape)
            return self.run_all(inputs)[self._primary].reshape(-1)
        tensor = np.ascontiguousarray(input_tensor, dtype=self._in_dtype)
        out = np.empty(self._out_count, self._out_dtype)
        try:
            # The GIL is released through the write, the run (the GPU's wait included) and the read:
            # the pipeline's other threads run meanwhile (app/backends/litert_c.py).
            return self._model.run_tensor(tensor, out)
        except ModelError as exc:  # a failing device fails in the locks too: fall back, not crash
            raise GpuRunFailed(f"the GPU run failed: {exc}") from None
        except ValueError as exc:
            raise ModelError(f"the GPU session cannot take this input: {exc}") from None

    def slot_layout(self) -> SlotLayout | None:
        """The shared slots a process of its own runs this session through (app/backends/gpu/process_session.py):
        the direct path's input bytes and output; None for a model that runs through run_all."""
        if self._model is None or not self._direct or self._out_dtype is None:
            return None
        return SlotLayout(self._model.input_layouts[0].size, self._out_count, self._out_dtype.str)

    def run_into(self, input_bytes: np.ndarray, out: np.ndarray) -> None:
        """`run` on the direct path, from a slot's input bytes into a slot's output (the child's loop)."""
        if self._model is None:
            raise GpuRunFailed("the GPU run failed: the session is closed")
        try:
            self._model.run_tensor(input_bytes, out)
        except ModelError as exc:
            raise GpuRunFailed(f"the GPU run failed: {exc}") from None

    def close(self) -> None:
        # Tearing down the accelerators logs to fd 2; keep that off the user's terminal too.
        with capture_stderr():
            if self._model is not None:
                self._model.close()
            self._model = None
            gc.collect()


COMPILE_TIMEOUT_S = 120
_COMPILED: dict[tuple[str, str, str], str | None] = {}  # (model digest, precision, shapes) -> compile_crash's answer
_CHECK_FAILED = re.compile(r"\] (Check failed: .*)")


def compile_crash(spec: ModelSpec, precision: GpuPrecision | str) -> str | None:
    """Compile the model with the GPU accelerator in a child process first, once per model and options:
    LiteRT's GPU delegate ends the process on some graphs (an ABSL_CHECK while it builds its graph: on
    YAMNet's int8 SPLIT, "object_reader.cc:373] Check failed: CanReadValue(node_input_index)", then
    SIGABRT, on any device), and in this process that would end the app. Why the GPU cannot be used when
    the child died or hung; None when it exited (the session, opened here, says any other failure)."""
    shapes = json.dumps([list(t.shape) for t in spec.inputs])
    key = (hashlib.sha256(spec.content).hexdigest(), str(precision), shapes)
    if key not in _COMPILED:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "app.backends.gpu.compile_child", str(precision), shapes],
                input=spec.content,
                capture_output=True,
                timeout=COMPILE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            _COMPILED[key] = f"LiteRT's GPU accelerator did not compile this model within {COMPILE_TIMEOUT_S} s"
        else:
            said = _CHECK_FAILED.findall(proc.stderr.decode("utf-8", "replace"))
            _COMPILED[key] = (
                f"LiteRT's GPU accelerator ended the process compiling this model ({_signal_name(-proc.returncode)}"
                f"{': ' + said[-1].strip()[:200] if said else ''}); it was compiled apart, so only that process ended"
                if proc.returncode < 0
                else None
            )
    return _COMPILED[key]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class GpuProbe:
    """What the probe child said (app/backends/gpu/probe.py writes it as one JSON line)."""

    ok: bool
    reason: str | None = None  # not ok: why
    adapter: str | None = None
    software: bool = False
    fully_accelerated: bool | None = None
    init_ms: float | None = None
    devices: tuple[str, ...] = ()  # the Vulkan loader's devices, described
    vulkan_problem: str | None = None

    @classmethod
    def from_json(cls, line: str) -> GpuProbe:
        d = json.loads(line)
        if not isinstance(d, dict):
            raise ValueError("the GPU probe wrote no JSON object")
        return cls(
            ok=bool(d.get("ok")),
            reason=None if d.get("reason") is None else str(d["reason"]),
            adapter=d.get("adapter"),
            software=bool(d.get("software")),
            fully_accelerated=d.get("fully_accelerated"),
            init_ms=d.get("init_ms"),
            devices=tuple(d.get("devices", ())),
            vulkan_problem=d.get("vulkan_problem"),
        )


@lru_cache(maxsize=1)
def probe() -> GpuProbe:
    """Try the GPU once per process, in a child process: a driver that crashes or hangs cannot take the app down."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "app.backends.gpu.probe"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
        return GpuProbe.from_json(proc.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return GpuProbe(False, f"the GPU probe did not finish within {PROBE_TIMEOUT_S} s")
    except (ValueError, IndexError, OSError) as exc:
        return GpuProbe(False, f"the GPU probe crashed ({type(exc).__name__})")


class GpuBackend:
    name = Delegate.GPU
    label = "GPU (LiteRT)"

    def availability(self) -> str | None:
        result = probe()
        if not result.ok:
            return result.reason or "unknown"
        if result.software:
            return f"GPU adapter is a software renderer: {result.adapter}"
        return None

    def open(self, spec: ModelSpec, options: BackendOptions) -> GpuSession | GpuProcessSession:
        preflight.check(spec)  # a crash opening it would take the window down: see app/backends/preflight.py
        if options.precision not in tuple(GpuPrecision):
            raise ValueError(f"GPU precision must be one of {', '.join(GpuPrecision)}")
        if spec.path not in bundled_models().values():  # the bundled ones are compiled by the test suite
            crash = compile_crash(spec, options.precision)
            if crash is not None:
                raise BackendUnavailable(crash)
        if options.own_process:
            return GpuProcessSession(spec, options)
        return GpuSession(
            spec,
            options.precision,
            options.cpu_threads,
            options.allow_software,
            options.wait_hint,
        )
