"""The CPU profile: LiteRT's own profiler events for one model on XNNPACK and the built-in kernels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.backends.litert_c import HW_CPU, EventType, NativeModel, RawEvent
from app.errors import ModelError
from app.model.feed import InputFeeder
from app.model.spec import ModelSpec
from app.profile.placements import profile_placements
from app.profile.timed_runs import WARMUP_RUNS, timed_runs
from app.profile.types import OpTime, Placement, Profile, TimeSource
from app.profile.xnnpack_ops import align
from app.system.thread_cpu import CpuMeter, InferenceCpu, started_by
from app.tflite.graph import read_graph

_OP_EVENTS = (EventType.OPERATOR_INVOKE_EVENT, EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT)


def sample_input(spec: ModelSpec, seed: int = 0) -> np.ndarray:
    """A fixed pseudo-random image in the model's input type and shape (1, 3 or 4 channels): the kernels'
    cost does not depend on it. For a model that takes no image, its first input as the feeder makes it."""
    if spec.image_input is None:
        return sample_inputs(spec, seed)[0]
    rng = np.random.default_rng(seed)
    shape = spec.input.shape
    if spec.input_dtype == np.float32:
        return rng.uniform(-1, 1, shape).astype(np.float32)
    info = np.iinfo(spec.input_dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(spec.input_dtype)


def sample_inputs(spec: ModelSpec, seed: int = 0) -> list[np.ndarray]:
    """Every input of one run, model order: the sample image in the image's place, the others from the
    feeder (seeded, or the user's --inputs file)."""
    image = sample_input(spec, seed) if spec.image_input is not None else None
    return InputFeeder(spec, seed).inputs(image)


@dataclass(frozen=True)
class _Op:
    tag: str
    type: int
    index: int


def split_runs(events: list[RawEvent]) -> list[list[RawEvent]]:
    """The operator events of each run, split at the runtime's own 'Invoke' span."""
    runs: list[list[RawEvent]] = []
    invokes: list[int] = []
    for e in events:
        if e.type == EventType.DEFAULT and e.tag == "Invoke":
            runs.append([])
            invokes.append(e.elapsed_us)
        elif e.type in _OP_EVENTS and runs:
            runs[-1].append(e)
    return runs


def invoke_spans_us(events: list[RawEvent]) -> list[int]:
    return [e.elapsed_us for e in events if e.type == EventType.DEFAULT and e.tag == "Invoke"]


@dataclass(frozen=True)
class RunStatistics:
    """What a profile says of N runs of one thing (each op, the Invoke span, the measured call)."""

    least: np.ndarray  # the least-disturbed run: the main figure, the model's own cost whatever else runs
    mean: np.ndarray  # beside it: what a run cost here and now, waits for the CPU included
    median: np.ndarray  # ranks the top ops


def run_statistics(times_ms: np.ndarray) -> RunStatistics:
    """Over axis 0 (the runs). The one statistic `profile` and the window's Ops view report: each op's
    least-disturbed run. Profiler events are wall time, so an op preempted by another process counts its
    wait; the mean and the median grow with the load (at nice +10 beside busy processes the int8 model's
    ops read 116-133 ms by mean, 4.2 ms by least, quiet 4.4 ms: docs/profile.md), the least does not
    while one run in N got through undisturbed."""
    times = np.asarray(times_ms, dtype=np.float64)
    return RunStatistics(times.min(axis=0), times.mean(axis=0), np.median(times, axis=0))


def build_rows(spec: ModelSpec, layout: list[_Op], stats: RunStatistics) -> list[OpTime]:
    """Rows in run order: built-in kernel events carry their node index; XNNPACK's operators are aligned
    to the nodes of their partition (the nodes between two built-in ones, in execution order)."""
    graph = read_graph(spec.content)
    on_cpu = {op.index for op in layout if op.type == EventType.OPERATOR_INVOKE_EVENT}
    # Partitions: the maximal runs of nodes not run by a built-in kernel (TFLite's partitioner keeps
    # execution order: tensorflow/lite/delegates/utils.cc GraphPartitionHelper).
    partitions: list[list[tuple[int, str]]] = []
    for graph_node in graph.nodes:
        if graph_node.index in on_cpu:
            partitions.append([])
        else:
            if not partitions:
                partitions.append([])
            partitions[-1].append((graph_node.index, graph_node.op))
    partitions = [p for p in partitions if p]
    # The XNNPACK operators of each partition: consecutive delegate events, numbered from 0 per partition.
    groups: list[list[int]] = []
    for position, op in enumerate(layout):
        if op.type != EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT:
            continue
        starts = not groups or op.index == 0 or layout[position - 1].type != op.type
        if starts:
            groups.append([])
        groups[-1].append(position)
    node_of: dict[int, int | None] = {}
    partition_of: dict[int, int] = {}
    for number, positions in enumerate(groups):
        nodes = partitions[number] if number < len(partitions) else []
        for position, aligned in zip(positions, align([layout[p].tag for p in positions], nodes), strict=True):
            node_of[position] = aligned
            partition_of[position] = number
    names = {n.index: n.op for n in graph.nodes}
    rows = []
    for position, op in enumerate(layout):
        if op.type == EventType.OPERATOR_INVOKE_EVENT:
            node: int | None = op.index
            placement, partition = Placement.CPU, None
        else:
            node = node_of.get(position)
            placement, partition = Placement.ACCELERATOR, partition_of.get(position)
        rows.append(
            OpTime(
                order=position,
                node=node,
                op=names.get(node, op.tag) if node is not None else f"(XNNPACK's own) {op.tag}",
                kernel=op.tag,
                placement=placement,
                partition=partition,
                ms=float(stats.least[position]),
                source=TimeSource.RUNTIME,
                median_ms=float(stats.median[position]),
                mean_ms=float(stats.mean[position]),
            )
        )
    return rows


def compiled_and_warm(spec: ModelSpec, threads: int) -> NativeModel:
    shapes = [t.shape for t in spec.inputs]
    model = NativeModel(spec.content, HW_CPU, threads, profiling=True, input_shapes=shapes)
    try:
        model.write_inputs(sample_inputs(spec))
        for _ in range(WARMUP_RUNS):
            model.run()
    except BaseException:
        model.close()
        raise
    return model


def runtime_workers(found: set[int], threads: int) -> set[int] | None:
    """The runtime's worker threads among the native threads that appeared while the model compiled
    (started_by): XNNPACK starts `threads` - 1 (0, 1, 3 here for 1, 2, 4 threads). More than that: a native
    pool elsewhere in the process started meanwhile and cannot be told apart, so None (no CPU share)."""
    return found if len(found) <= max(0, threads - 1) else None


def _share(cpu: InferenceCpu, wall_ms: float, threads: int) -> float | None:
    if cpu.runtime_threads_ms is None or wall_ms <= 0:
        return None
    return min(1.0, cpu.inference_ms / (wall_ms * max(1, threads)))


def profile_cpu(
    spec: ModelSpec,
    threads: int,
    runs: int,
    model: NativeModel | None = None,
    runtime_threads: set[int] | None = None,
) -> Profile:
    """`runs` profiled runs after the warm-up, on a compiled model of its own (or `model`, kept open by a caller:
    the window's Ops view, with its `runtime_threads`, None when not told apart). Each op's time, the Invoke
    span and the measured call are their least-disturbed run, the means beside them (`run_statistics`):
    `profile` and the Ops view, at whatever priority and load, report the same statistic. The runs' CPU
    share says how busy the machine was.

    A model LiteRT's profiler cannot take (its CompiledModel refuses to read or run it: an LSTM here)
    gets each node's place without per-op times (profile_placements), or the Interpreter's own refusal
    (a custom op it has no kernel for, named with its node)."""
    own = model is None
    if model is None:
        try:
            # The runtime runs the model on a thread of its own: found as it starts, for its CPU time below.
            pm, found = started_by(lambda: compiled_and_warm(spec, threads))
            runtime_threads = runtime_workers(found, threads)
        except ModelError as exc:  # LiteRT's C API refuses some models its Interpreter runs (an LSTM)
            reason = f"LiteRT's CompiledModel refused it ({exc})"
            return profile_placements(spec, threads, runs, reason, sample_inputs(spec))
    else:
        pm = model
    meter = CpuMeter(runtime_threads or set())
    try:
        pm.write_inputs(sample_inputs(spec))
        pm.start()
        meter.start()
        walls = timed_runs(pm.run, runs)
        cpu = meter.stop()
        pm.stop()
        events = pm.events()
    finally:
        meter.close()
        if own:
            pm.close()
    # The CPU the runs had (this thread and the runtime's, per thread from schedstat) over the wall time
    # of `threads` cores: near 1 when nothing else wanted them, far below when the runs waited.
    share = _share(cpu, sum(walls), threads) if runtime_threads is not None else None
    return _from_events(spec, threads, events, walls, share)


def _from_events(
    spec: ModelSpec, threads: int, events: list[RawEvent], walls: list[float], share: float | None
) -> Profile:
    """The profile the runs' events and wall times make: the runs with the first run's layout of ops, each
    op's statistics over them, and the nodes no event names (fused away)."""
    per_run = split_runs(events)
    if not per_run or not per_run[0]:
        raise RuntimeError("LiteRT's profiler recorded no operator events")
    layout = [_Op(e.tag, e.type, e.index) for e in per_run[0]]
    invokes = invoke_spans_us(events)
    kept = [i for i, r in enumerate(per_run) if [_Op(e.tag, e.type, e.index) for e in r] == layout]
    complete = [per_run[i] for i in kept]
    times = np.array([[e.elapsed_us / 1000 for e in r] for r in complete])
    rows = build_rows(spec, layout, run_statistics(times))
    invoke, wall = run_statistics(np.array(invokes) / 1000) if invokes else None, run_statistics(np.array(walls))
    named = {r.node for r in rows if r.node is not None}
    fused = tuple((n.index, n.op) for n in read_graph(spec.content).nodes if n.index not in named)
    return Profile.on_cpu(
        spec.display_name,
        threads,
        tuple(rows),
        runs=len(complete),
        invoke_ms=float(invoke.least) if invoke is not None else None,
        wall_ms=float(wall.least),
        invoke_mean_ms=float(invoke.mean) if invoke is not None else None,
        wall_mean_ms=float(wall.mean),
        notes=(
            "per-op times are LiteRT's own profiler events (CompiledModel with enable_profiling, read through "
            "its C API): XNNPACK's operators inside a partition, the built-in kernels' nodes outside",
        ),
        fused=fused,
        per_run_ms=tuple(tuple(float(t) for t in row) for row in times),
        per_run_invoke_ms=tuple(invokes[i] / 1000 for i in kept) if len(invokes) == len(per_run) else (),
        least_disturbed=True,
        cpu_share=share,
    )
