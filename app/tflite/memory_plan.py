"""What a .tflite file implies for memory, read from the file alone: its weights, the activation arena
TFLite's planner lays out for it, the tensors that set that arena's size, and each delegate's copy of
the weights, predicted.

The arena follows TFLite's own planner, rule by rule (tflite/arena_planner.cc and
tflite/simple_memory_arena.cc in LiteRT, formerly tensorflow/lite/; read, not copied):

- Lifetimes over the execution plan (the file's node order): graph inputs and variables are allocated
  at node 0, a node's outputs at that node; a tensor is freed at the node where the count of its
  readers left reaches zero. Graph inputs, graph outputs and variables get one extra reference, so
  they are never freed; neither is a tensor nothing reads.
- In-place outputs (ArenaPlanner::IdentifyInPlaceTensors): a built-in kernel that declares an input
  shareable writes its output into that input's memory when the planner's conditions hold (not a
  graph input or output; for a kernel that changes the data, same byte size above 4 bytes and no
  other reader); the output then takes no room of its own and extends its input's lifetime.
  Which kernels declare it: their registrations' `inplace_operator` (ADD, SUB, MUL, DIV, SOFTMAX,
  DYNAMIC_UPDATE_SLICE change the data; RESHAPE, SQUEEZE, EXPAND_DIMS, BITCAST do not).
- Order (ArenaPlanner::CreateTensorAllocationVector): tensors that live the whole run first (by
  index), then the rest by size, largest first, then by the node that allocates them.
- Placement (SimpleMemoryArena::Allocate): each tensor goes in the smallest gap between the tensors
  already placed whose lifetimes overlap its own, else after the last of them, at an offset aligned to
  kDefaultTensorAlignment (64). The arena's size is the highest end placed.
- Not in this arena: constants (read from the model's buffer), variables and the outputs of
  DEQUANTIZE, CAST and DENSIFY on constants (the persistent arena: `persistent_bytes`), strings and
  resources (dynamic), and each kernel's temporaries (CONV_2D's im2col, ...), which kernels add at
  Prepare and no file says.

This is the arena of the graph on LiteRT's built-in kernels. With a delegate, TFLite's arena holds
only the tensors that cross a partition's edge, and the delegate plans the partition's own (XNNPACK in
its runtime's workspace). A graph with dynamic shapes is planned at the shapes the file stores.
Equal-size tensors allocated at the same node are ordered by index here; TFLite's std::sort leaves
their order unspecified, so such a pair can swap places and, rarely, change the size.
"""

from __future__ import annotations

import bisect
import math
import struct
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ai_edge_litert import schema_py_generated as fb

from app.errors import ModelError
from app.system.names import Delegate
from app.tflite.file import check_len
from app.tflite.graph import OPTIONAL_TENSOR, Graph, read_graph

ALIGNMENT = 64  # tflite/arena_planner.h kDefaultArenaAlignment; core/c/common.h kDefaultTensorAlignment
_SCALAR_BYTES = 4  # arena_planner.cc kScalarTensorBytes: a data-changing op never shares a tensor this small
_MAX_SHARABLE_INPUTS = 3  # core/c/common.h kTfLiteMaxSharableOpInputs
_NEVER = 2**31 - 1  # arena_planner.cc kNodeNotAssigned: never freed
LARGEST = 5

# Bytes per element (tflite/util.cc GetSizeOfType); 4- and 2-bit types are packed (util.cc BytesRequired).
_ITEM_BYTES = {
    "float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "uint32": 4, "int64": 8,
    "uint64": 8, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8,
    "complex128": 16, "float8e4m3fn": 1, "float8e5m2": 1,
}  # fmt: skip
_PACKED = {"int4": 2, "uint4": 2, "int2": 4}  # elements per byte
_DYNAMIC_TYPES = ("string", "resource", "variant")  # sized at run time: never in the arena

# The built-in kernels' registrations that let the planner write an output over an input
# (`inplace_operator` in tflite/kernels/<op>.cc): op -> (inputs it may share, whether it changes the data).
_IN_PLACE: dict[str, tuple[tuple[int, ...], bool]] = {
    "ADD": ((0, 1), True), "SUB": ((0, 1), True), "MUL": ((0, 1), True), "DIV": ((0, 1), True),
    "SOFTMAX": ((0,), True), "DYNAMIC_UPDATE_SLICE": ((0,), True),
    "RESHAPE": ((0,), False), "SQUEEZE": ((0,), False), "EXPAND_DIMS": ((0,), False), "BITCAST": ((0,), False),
}  # fmt: skip
# Kernels whose output on a constant input is computed once into the persistent arena
# (tflite/kernels/dequantize.cc, cast.cc ShouldCacheOutput, densify.cc: kTfLiteArenaRwPersistent).
_CACHED_ON_CONSTANT = ("DEQUANTIZE", "CAST", "DENSIFY")

# XNNPACK packs the static weights of these operators into buffers of its own when it builds its runtime
# (xnnpack_delegate.cc: the subgraph goes to xnn_create_runtime_v4 with the delegate's weights cache).
_XNNPACK_PACKED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL")
# The GPU delegate reads as float every constant it takes, whatever its stored type
# (delegates/gpu/common/model_builder_helper.cc CreateVectorCopyData: float16 widened, int8/uint8/int32
# dequantized), then keeps it on the GPU at its calculation precision (gpu/common/precision.h: F16 and
# F32_F16 hold all data in F16, F32 in F32).
_GPU_READ_AS_FLOAT = ("float32", "float16", "int8", "uint8", "int32")

Status = Literal["predicted", "not reported"]


def tensor_bytes(shape: tuple[int, ...], dtype: str) -> int | None:
    """A tensor's bytes as TFLite sizes it (a scalar is one element); None for a type sized at run time."""
    count = math.prod(max(d, 0) for d in shape)
    if dtype in _PACKED:
        per = _PACKED[dtype]
        return (count + per - 1) // per
    item = _ITEM_BYTES.get(dtype)
    return None if item is None else count * item


def align(offset: int, alignment: int = ALIGNMENT) -> int:
    return offset if offset % alignment == 0 else offset + alignment - offset % alignment


@dataclass(frozen=True)
class TensorLife:
    """A tensor the arena holds, and the nodes that keep it there."""

    index: int
    name: str
    bytes: int
    offset: int  # where the plan places it in the arena
    first_node: int  # the node that allocates it (0 for a graph input)
    last_node: int  # the last node that reads it; the last node of the run for one never freed
    first_op: str  # "graph input" where it is one
    last_op: str
    held_to_end: bool  # never freed: a graph input or output, a variable, or read by no node
    shared_by: tuple[int, ...] = ()  # outputs written in place over it (their lifetimes are in its own)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "name": self.name, "bytes": self.bytes, "offset": self.offset,
            "first_node": self.first_node, "last_node": self.last_node, "first_op": self.first_op,
            "last_op": self.last_op, "held_to_end": self.held_to_end, "shared_by": list(self.shared_by),
        }  # fmt: skip


@dataclass(frozen=True)
class ArenaPlan:
    """The planner's layout: every arena tensor's place, the size, and the outputs that share an input."""

    size_bytes: int  # the high-water mark: the arena TFLite allocates (plus at most 63 bytes to align it)
    tensors: tuple[TensorLife, ...]  # in the order the planner placed them
    shared: Mapping[int, int]  # output tensor -> the tensor whose memory it is written into
    persistent_bytes: int  # variables and cached constant results, each aligned (the persistent arena)


@dataclass(frozen=True)
class DelegateCopy:
    """What a delegate keeps of the weights beside the model's own bytes."""

    delegate: str  # Delegate value: "cpu" (XNNPACK), "gpu", "coreml"
    bytes: int | None  # None: not reported
    status: Status
    rule: str  # how the figure is worked out, or why there is none
    nodes: int | None = None  # the nodes it was worked out over

    def to_dict(self) -> dict[str, Any]:
        return {"delegate": self.delegate, "bytes": self.bytes, "status": self.status, "rule": self.rule,
                "nodes": self.nodes}  # fmt: skip


@dataclass(frozen=True)
class MemoryPlan:
    weights_bytes: int  # the constant buffers the tensors point to, each buffer once
    constant_tensors: int
    activations_bytes: int  # the arena the greedy plan yields (built-in kernels)
    activations_sum_bytes: int  # every arena tensor's bytes added up: the plan's upper bound
    persistent_bytes: int
    largest: tuple[TensorLife, ...]  # the arena's largest tensors, largest first
    delegates: tuple[DelegateCopy, ...]
    nodes: int
    notes: tuple[str, ...]  # what the figures leave out, in words

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "constant_tensors": self.constant_tensors,
            "activations_bytes": self.activations_bytes,
            "activations_sum_bytes": self.activations_sum_bytes,
            "persistent_bytes": self.persistent_bytes,
            "alignment": ALIGNMENT,
            "nodes": self.nodes,
            "largest": [t.to_dict() for t in self.largest],
            "delegates": [d.to_dict() for d in self.delegates],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """inspect's text: one line a figure."""
        out = [
            f"weights      {mb(self.weights_bytes)} in {self.constant_tensors} constant tensors",
            f"activations  {mb(self.activations_bytes)} arena planned as TFLite does on its built-in kernels "
            f"({mb(self.activations_sum_bytes)} if nothing shared memory)",
        ]
        if self.persistent_bytes:
            out.append(f"persistent   {mb(self.persistent_bytes)} (variables, constants computed once)")
        for t in self.largest:
            span = f"node {t.first_node} ({t.first_op}) to node {t.last_node} ({t.last_op})"
            out.append(f"  {mb(t.bytes):>9}  {t.name[:60]}: {span}{', kept to the end' if t.held_to_end else ''}")
        for d in self.delegates:
            figure = f"{mb(d.bytes)}, {d.status}" if d.bytes is not None else d.status
            out.append(f"{_LABELS.get(d.delegate, d.delegate):<12} {figure}: {d.rule}")
        out += [f"note: {n}" for n in self.notes]
        return out


_LABELS: dict[str, str] = {Delegate.CPU: "XNNPACK", Delegate.GPU: "GPU", Delegate.COREML: "Core ML"}


def mb(n: int) -> str:
    """Bytes in MiB, written "MB" as the app's every memory figure is (the measured ones compare with
    these): one decimal under 10."""
    value = n / 2**20
    return f"{value:.1f} MB" if value < 10 else f"{value:.0f} MB"


@dataclass(frozen=True)
class _Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int | None
    buffer: int  # 0: none
    buffer_bytes: int  # 0 when the buffer holds no data
    variable: bool
    dynamic_shape: bool


def _tensors(data: bytes) -> tuple[list[_Tensor], dict[int, int], int]:
    """The main subgraph's tensors with their buffers; every subgraph's constant buffers (index -> bytes);
    the subgraph count."""
    limit = len(data)
    try:
        model = fb.Model.GetRootAs(data, 0)
        buffers: dict[int, int] = {}
        main: list[_Tensor] = []
        n_buffers = model.BuffersLength()
        for s in range(check_len(model.SubgraphsLength(), limit, "the subgraph list")):
            sg = model.Subgraphs(s)
            for i in range(check_len(sg.TensorsLength(), limit, "the tensor list")):
                t = sg.Tensors(i)
                b = t.Buffer()
                size = _buffer_bytes(model, b, limit) if 0 < b < n_buffers else 0
                if size:
                    buffers[b] = size
                if s:
                    continue
                shape = tuple(int(d) for d in t.ShapeAsNumpy()) if not t.ShapeIsNone() else ()
                signature = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if not t.ShapeSignatureIsNone() else ()
                dtype = _TYPES.get(t.Type(), f"type {t.Type()}")
                name = t.Name()
                main.append(_Tensor(
                    i, name.decode("utf-8", errors="replace") if name else f"tensor {i}", shape, dtype,
                    tensor_bytes(shape, dtype), b, size, bool(t.IsVariable()), any(d < 0 for d in signature),
                ))  # fmt: skip
    except (struct.error, IndexError, ValueError, TypeError, OverflowError) as exc:
        raise ModelError(
            f"model file is truncated or corrupt ({type(exc).__name__} while reading its tensors)"
        ) from None
    return main, buffers, model.SubgraphsLength()


_TYPES = {getattr(fb.TensorType, name): name.lower() for name in dir(fb.TensorType) if name.isupper()}


def _buffer_bytes(model: fb.Model, index: int, limit: int) -> int:
    buf = model.Buffers(index)
    if buf.Offset() > 1:  # >2 GB models keep buffers after the flatbuffer
        return int(buf.Size())
    return 0 if buf.DataIsNone() else check_len(buf.DataLength(), limit, "a buffer")


def plan_arena(
    graph: Graph,
    sizes: Mapping[int, int],
    arena: Collection[int],
    persistent: Collection[int] = (),
    variables: Collection[int] = (),
) -> ArenaPlan:
    """TFLite's plan for `graph`: `sizes` each tensor's bytes, `arena` the tensors of kTfLiteArenaRw (the
    rest are constants, persistent or dynamic and take no room here), `persistent` those of
    kTfLiteArenaRwPersistent, `variables` the graph's variables among them."""
    n = len(graph.nodes)
    arena = set(arena)
    persistent = set(persistent)
    inputs = [t for t in graph.inputs if t != OPTIONAL_TENSOR]
    outputs = [t for t in graph.outputs if t != OPTIONAL_TENSOR]
    variables = sorted(variables)
    # arena_planner.cc PlanAllocations: the extra reference of outputs, variables and inputs...
    base = dict.fromkeys(range(len(graph.tensors)), 0)
    alloc: dict[int, int] = {}
    for t in outputs:
        base[t] += 1
    for t in (*variables, *inputs):
        base[t] += 1
        alloc.setdefault(t, 0)
    # ...then every node's reads.
    reads = dict(base)
    for node in graph.nodes:
        for t in node.inputs:
            if t != OPTIONAL_TENSOR:
                reads[t] += 1
    shared = _in_place(graph, sizes, arena, persistent, reads, set(inputs), set(outputs))
    refs = dict(base)
    for node in graph.nodes:
        for t in node.inputs:
            if t != OPTIONAL_TENSOR:
                refs[shared.get(t, t)] += 1
    free: dict[int, int] = {}
    for i, node in enumerate(graph.nodes):
        for t in node.outputs:
            if t != OPTIONAL_TENSOR and t not in alloc:
                alloc[t] = i
        for t in node.inputs:
            if t == OPTIONAL_TENSOR:
                continue
            root = shared.get(t, t)
            refs[root] -= 1
            if refs[root] == 0 and root in alloc and root not in free:
                free[root] = i

    # CalculateAllocations: an output shared with an arena tensor of its size takes no room.
    placed_shared = {o: r for o, r in shared.items() if r in arena and sizes.get(r) == sizes.get(o)}
    candidates = [t for t in alloc if t in arena and t not in placed_shared]

    def whole_run(t: int) -> bool:
        return alloc[t] == 0 and t not in free

    order = sorted(candidates, key=lambda t: (0, t, 0, 0) if whole_run(t) else (1, -sizes[t], alloc[t], t))
    active: list[tuple[int, int, int, int]] = []  # (offset, size, first, last), by offset
    high = 0
    lives: list[TensorLife] = []
    aliases: dict[int, list[int]] = {}
    for o, r in placed_shared.items():
        aliases.setdefault(r, []).append(o)
    for t in order:
        size, first, last = sizes[t], alloc[t], free.get(t, _NEVER)
        offset = 0
        if size:
            offset = _best_fit(active, size, first, last)
            high = max(high, offset + size)
            bisect.insort_right(active, (offset, size, first, last), key=lambda a: a[0])
        end = min(last, n - 1) if n else 0
        lives.append(TensorLife(
            index=t, name=graph.tensors[t].name, bytes=size, offset=offset, first_node=first, last_node=end,
            first_op=_first_op(graph, t, first, inputs, variables),
            last_op=graph.nodes[end].op if n else "", held_to_end=last == _NEVER,
            shared_by=tuple(sorted(aliases.get(t, ()))),
        ))  # fmt: skip
    persistent_bytes = sum(align(sizes.get(t, 0)) for t in persistent)
    return ArenaPlan(high, tuple(lives), placed_shared, persistent_bytes)


def _first_op(graph: Graph, t: int, first: int, inputs: Collection[int], variables: Collection[int]) -> str:
    if t in inputs:
        return "graph input"
    if t in variables:
        return "variable"
    return graph.nodes[first].op if graph.nodes else ""


def _best_fit(active: list[tuple[int, int, int, int]], size: int, first: int, last: int) -> int:
    """SimpleMemoryArena::Allocate: the smallest gap that fits among the placed tensors whose lifetimes
    overlap [first, last], else the end of them, aligned. The gap is measured from the unaligned end of
    the tensor before it, as the source does."""
    best, best_fit = None, None
    current = 0
    for offset, other, a_first, a_last in active:
        if a_last < first or a_first > last:
            continue
        aligned = align(current)
        if aligned + size <= offset and (best_fit is None or offset - aligned < best_fit):
            best, best_fit = aligned, offset - current
        current = max(current, offset + other)
        if best_fit == 0:
            break
    return best if best is not None else align(current)


def _in_place(
    graph: Graph,
    sizes: Mapping[int, int],
    arena: set[int],
    persistent: set[int],
    reads: Mapping[int, int],
    inputs: set[int],
    outputs: set[int],
) -> dict[int, int]:
    """ArenaPlanner::IdentifyInPlaceTensors: output -> the tensor whose memory it is written into."""

    def kind(t: int) -> str:
        return "arena" if t in arena else "persistent" if t in persistent else "other"

    shared: dict[int, int] = {}
    for node in graph.nodes:
        rule = _IN_PLACE.get(node.op)
        if rule is None or not node.outputs:
            continue
        shareable, changes = rule
        out = node.outputs[0]
        chosen = None
        for j, t in enumerate(node.inputs[:_MAX_SHARABLE_INPUTS]):
            if t == OPTIONAL_TENSOR or j not in shareable:
                continue
            if changes and (sizes.get(t) != sizes.get(out) or sizes.get(t, 0) <= _SCALAR_BYTES or reads[t] > 1):
                continue
            if t in inputs or out in outputs:
                continue
            if kind(t) != kind(out) and kind(t) != "arena":
                continue
            chosen = t
            break
        if chosen is None:
            continue
        root = shared.get(chosen, chosen)
        if changes and reads[root] > 1:
            continue
        shared[out] = root
    return shared


@dataclass(frozen=True)
class _Model:
    graph: Graph
    tensors: list[_Tensor]
    buffers: dict[int, int]
    subgraphs: int
    constant: set[int]
    variables: set[int]
    persistent: set[int]
    dynamic: set[int]
    arena: set[int]

    @property
    def sizes(self) -> dict[int, int]:
        return {t.index: t.bytes or 0 for t in self.tensors}


def _read(data: bytes) -> _Model:
    """The graph and each tensor's kind, as TFLite allocates it: constants kTfLiteMmapRo, variables and
    cached constant results kTfLiteArenaRwPersistent, strings and resources dynamic, the rest the arena."""
    graph = read_graph(data)
    tensors, buffers, subgraphs = _tensors(data)
    constant = {t.index for t in tensors if t.buffer_bytes}
    variables = {t.index for t in tensors if t.variable and not t.buffer_bytes}
    persistent = variables | _cached_constants(graph, constant)
    dynamic = {t.index for t in tensors if t.bytes is None}
    arena = {t.index for t in tensors} - constant - persistent - dynamic
    return _Model(graph, tensors, buffers, subgraphs, constant, variables, persistent, dynamic, arena)


def arena_layout(data: bytes) -> ArenaPlan:
    """The arena TFLite's planner lays out for the file's main subgraph on the built-in kernels."""
    m = _read(data)
    return plan_arena(m.graph, m.sizes, m.arena, m.persistent, m.variables)


def plan_memory(
    data: bytes,
    delegated: Mapping[str, Collection[int]] | None = None,
    gpu_fp16: bool = True,
) -> MemoryPlan:
    """The file's memory figures. `delegated`: per delegate ("cpu", "gpu"), the node indices it takes (a
    coverage's delegated nodes); a delegate left out is predicted as if it took every node."""
    m = _read(data)
    sizes = m.sizes
    plan = plan_arena(m.graph, sizes, m.arena, m.persistent, m.variables)
    largest = tuple(sorted(plan.tensors, key=lambda life: (-life.bytes, life.index))[:LARGEST])
    notes = ["kernels' temporaries (CONV_2D's im2col, ...) are added by the kernels at Prepare and not counted"]
    if m.dynamic:
        notes.append(f"{len(m.dynamic)} tensors of a type sized at run time (strings, resources) not counted")
    if any(t.dynamic_shape for t in m.tensors):
        notes.append("dynamic shapes: planned at the shapes the file stores")
    if m.subgraphs > 1:
        notes.append(f"activations of the main subgraph only ({m.subgraphs} subgraphs); weights of all")
    chosen = delegated or {}
    delegates = (
        _xnnpack(m.graph, sizes, m.constant, chosen.get(Delegate.CPU)),
        _gpu(m.graph, m.tensors, m.constant, chosen.get(Delegate.GPU), gpu_fp16),
        DelegateCopy(Delegate.COREML, None, "not reported",
                     "the Core ML delegate hands the nodes it takes to Core ML, which does not say what it keeps"),
    )  # fmt: skip
    return MemoryPlan(
        weights_bytes=sum(m.buffers.values()),
        constant_tensors=len(m.constant),
        activations_bytes=plan.size_bytes,
        activations_sum_bytes=sum(sizes[t] for t in m.arena),
        persistent_bytes=plan.persistent_bytes,
        largest=largest,
        delegates=delegates,
        nodes=len(m.graph.nodes),
        notes=tuple(notes),
    )


def _cached_constants(graph: Graph, constant: set[int]) -> set[int]:
    """Outputs of DEQUANTIZE, CAST or DENSIFY on a constant (or on such an output): computed once, kept in
    the persistent arena."""
    cached: set[int] = set()
    for node in graph.nodes:
        if node.op in _CACHED_ON_CONSTANT and node.inputs and (node.inputs[0] in constant or node.inputs[0] in cached):
            cached.update(t for t in node.outputs if t != OPTIONAL_TENSOR)
    return cached


def _xnnpack(graph: Graph, sizes: Mapping[int, int], constant: set[int], nodes: Collection[int] | None) -> DelegateCopy:
    """XNNPACK reads constants in place (xnnpack_delegate.cc defines a kTfLiteMmapRo tensor's value on its
    data) and packs the static weights of its convolutions, fully connected and batch matmuls into its own
    buffers; a DEQUANTIZE of a constant it unpacks to float32 once (static_unpacked_data_)."""
    taken = set(range(len(graph.nodes))) if nodes is None else set(nodes)
    unpacked = {t for node in graph.nodes if node.index in taken and node.op == "DEQUANTIZE"
                and node.inputs and node.inputs[0] in constant for t in node.outputs}  # fmt: skip
    packed: set[int] = set()
    for node in graph.nodes:
        if node.index in taken and node.op in _XNNPACK_PACKED:
            packed.update(t for t in node.inputs[1:] if t in constant or t in unpacked)
    total = sum(sizes[t] for t in packed) + sum(sizes[t] for t in unpacked)
    which = "every node of those ops (no coverage given)" if nodes is None else f"the {len(taken)} nodes it takes"
    return DelegateCopy(
        Delegate.CPU, total, "predicted",
        "the constant weights and biases of the CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV and "
        "BATCH_MATMUL nodes it takes, packed once into its own layout (padding aside), plus float32 copies of "
        f"dequantized constants; other constants are read in place; over {which}",
        len(taken),
    )  # fmt: skip


def _gpu(graph: Graph, tensors: list[_Tensor], constant: set[int], nodes: Collection[int] | None,
         fp16: bool) -> DelegateCopy:  # fmt: skip
    taken = set(range(len(graph.nodes))) if nodes is None else set(nodes)
    read = {t for node in graph.nodes if node.index in taken for t in node.inputs
            if t in constant and tensors[t].dtype in _GPU_READ_AS_FLOAT}  # fmt: skip
    per = 2 if fp16 else 4
    total = sum(math.prod(max(d, 0) for d in tensors[t].shape) * per for t in read)
    which = "every node (no coverage given)" if nodes is None else f"the {len(taken)} nodes it takes"
    precision = "fp16 (precision loss allowed)" if fp16 else "fp32"
    return DelegateCopy(
        Delegate.GPU, total, "predicted",
        f"every constant input of the nodes it takes, read as float and held at {precision}: "
        f"{per} bytes an element whatever the stored type; over {which}",
        len(taken),
    )  # fmt: skip
