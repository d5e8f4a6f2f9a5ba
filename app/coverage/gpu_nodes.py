"""Which nodes LiteRT's GPU accelerator took, for a model it does not take whole.

The runtime says three things when it leaves part of a model on the CPU: whether the
whole model is accelerated (`is_fully_accelerated`), and, in its native log, the op
kinds it refused with its reason ("LOG_SOFTMAX: Operation is not supported.") and
how many nodes it runs ("3 operations will run on the GPU, and the remaining 3
operations will run on the CPU."). It never names nodes. So:

1. a node whose op kind the log does not list was supported (the runtime lists the
   kind of every node it refuses);
2. a node whose kind is listed is compiled alone, in a one-node model with the same
   op, options, tensor shapes and types and constant inputs: the GPU accelerator
   takes it or refuses it, and says why, in its own words. A kind can be refused for
   some nodes and taken for others (shapes, constant inputs), hence per node;
3. the supported nodes are grouped into partitions by TFLite's rule
   (`partition.partition`), and the largest ones are taken until they hold exactly
   the runtime's count: the delegate keeps its largest partitions
   (GraphPartitionHelper::GetFirstNLargestPartitions; LiteRT's GPU accelerator keeps 1).

The answer is checked against the runtime before it is used: a count that no number
of largest partitions adds up to, or a full model that is not fully accelerated,
means this reasoning does not match what the runtime did, and the nodes are then
"not reported". Compiling a node alone is not the runtime's whole-graph decision,
which is why only refused kinds are compiled alone and the result must add up.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from app.coverage import NOT_REPORTED
from app.coverage.partition import partition
from app.tflite.graph import OPTIONAL_TENSOR, Graph, GraphNode

# TFLite GPU delegate's summary (delegates/gpu/common/model_builder.cc, GetOpsToReplace), as LiteRT logs it.
REFUSED_HEADER = "Following operations are not supported by GPU delegate:"
_SPLIT = re.compile(
    r"(?:(\d+)|No) operations will run on the GPU, and (?:the remaining|all) (\d+) operations will run on the CPU\."
)
_REFUSED_LINE = re.compile(r"^([A-Za-z0-9_: .-]+?): (.+)$")
# Compiling nodes alone costs a few ms each (one environment, reused); a time cap keeps a
# pathological model (hundreds of refused nodes with huge kernels) from holding inspect for minutes.
ALONE_BUDGET_S = 30.0


@dataclass(frozen=True)
class GpuSplit:
    """What LiteRT's GPU log says about a model it did not take whole, word for word where quoted."""

    refused: tuple[tuple[str, str], ...]  # (op kind, the runtime's reason), one per distinct pair
    gpu_nodes: int | None  # "N operations will run on the GPU"
    cpu_nodes: int | None
    line: str | None  # the count line, word for word


def parse_split(lines: list[str]) -> GpuSplit | None:
    """The refused-ops block of LiteRT's GPU log; None when the log has none (the model was taken whole,
    or this build does not print it)."""
    refused: list[tuple[str, str]] = []
    gpu = cpu = said = None
    found = False
    in_block = False
    for line in lines:
        text = line.strip()
        if REFUSED_HEADER in text:
            found, in_block = True, True
            continue
        if m := _SPLIT.search(text):
            gpu = int(m.group(1)) if m.group(1) else 0
            cpu, said = int(m.group(2)), text[m.start() :]
            found, in_block = True, False
            continue
        if in_block:
            m = _REFUSED_LINE.match(text)
            if m is None:
                in_block = False
            elif (m.group(1), m.group(2)) not in refused:
                refused.append((m.group(1), m.group(2)))
    return GpuSplit(tuple(refused), gpu, cpu, said) if found else None


def _kinds(node: GraphNode) -> set[str]:
    """The names the log may give the node's op: the builtin name, or for a custom op its name with and
    without the "CUSTOM" prefix (an unmatched name only makes the count check fail: not reported)."""
    if node.op.startswith("CUSTOM:"):
        name = node.op.split(":", 1)[1]
        return {node.op, name, f"CUSTOM {name}"}
    return {node.op}


def one_node_model(model: fb.ModelT, content: bytes, index: int) -> bytes:
    """A model of node `index` alone: its op and options, its tensors (shapes, types, quantization), its
    constant inputs with their data; every other input becomes a model input, its outputs the outputs."""
    sg = model.subgraphs[0]
    op = copy.copy(sg.operators[index])
    tensors: list[fb.TensorT] = []
    buffers: list[fb.BufferT] = [fb.BufferT()]  # buffer 0: the empty sentinel
    remap: dict[int, int] = {}
    inputs: list[int] = []

    def take(t: int) -> int:
        if t == OPTIONAL_TENSOR:
            return t
        if t not in remap:
            tensor = copy.copy(sg.tensors[t])
            source = model.buffers[tensor.buffer] if tensor.buffer else None
            data = None
            if source is not None and source.offset > 1:  # >2 GB models keep buffers after the flatbuffer
                data = np.frombuffer(content, np.uint8, source.size, source.offset)
            elif source is not None and source.data is not None and len(source.data):
                data = source.data
            tensor.buffer = 0
            if data is not None:
                b = fb.BufferT()
                b.data = data
                buffers.append(b)
                tensor.buffer = len(buffers) - 1
            tensors.append(tensor)
            remap[t] = len(tensors) - 1
        return remap[t]

    op.inputs = [take(int(t)) for t in (op.inputs if op.inputs is not None else [])]
    op.outputs = [take(int(t)) for t in (op.outputs if op.outputs is not None else [])]
    op.intermediates = None
    for t in op.inputs:
        if t != OPTIONAL_TENSOR and tensors[t].buffer == 0 and t not in inputs and t not in op.outputs:
            inputs.append(t)
    op.opcodeIndex = 0
    one = fb.SubGraphT()
    one.tensors, one.operators, one.inputs, one.outputs = tensors, [op], inputs, list(op.outputs)
    out = fb.ModelT()
    out.version = model.version
    out.operatorCodes = [model.operatorCodes[sg.operators[index].opcodeIndex]]
    out.subgraphs = [one]
    out.buffers = buffers
    builder = flatbuffers.Builder(1024)
    builder.Finish(out.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


# compile(model bytes) -> (fully accelerated, the native log's lines)
Compile = Callable[[bytes], tuple[bool, list[str]]]


@dataclass(frozen=True)
class GpuNodes:
    delegated: tuple[bool | None, ...]  # per node; None: the runtime's count leaves it open (equal partitions)
    partition: tuple[int | None, ...]  # delegated partitions numbered in execution order from 0
    reasons: tuple[str | None, ...]  # why each node not delegated stays on the CPU
    partitions_found: int  # partitions of supported nodes
    partitions_delegated: int
    compiled_alone: tuple[int, ...]  # the nodes whose answer comes from compiling them alone
    seconds: float


def _alone_reason(node: GraphNode, lines: list[str], split: GpuSplit) -> str:
    said = parse_split(lines)
    mine = [r for op, r in (said.refused if said else ()) if op in _kinds(node)]
    if not mine:  # the one-node log did not say: the whole model's reason, when its kind had only one
        mine = list({r for op, r in split.refused if op in _kinds(node)})
    if len(mine) == 1:
        return f"the GPU accelerator refuses it: {mine[0]} (this node compiled alone)"
    return f"the GPU accelerator refuses it (this node compiled alone); why is {NOT_REPORTED}"


def resolve(
    graph: Graph, content: bytes, split: GpuSplit, fully_accelerated: bool, compile_one: Compile
) -> GpuNodes | str:
    """Node-level GPU coverage, or a sentence saying why it cannot be given (the runtime's answer and
    this reasoning disagree, or the log lacks the count)."""
    started = time.perf_counter()
    disagreement = _count_disagreement(split, len(graph.nodes), fully_accelerated)
    if disagreement is not None:
        return disagreement
    support = _compile_refused(graph, content, split, compile_one, started)
    if isinstance(support, str):
        return support
    return _largest_partitions(graph, split, support, started)


def _count_disagreement(split: GpuSplit, n: int, fully_accelerated: bool) -> str | None:
    """Why the log's node count cannot be used (absent, or at odds with the model or the runtime), else None."""
    if split.gpu_nodes is None:
        return "LiteRT's GPU log lists refused ops but not how many nodes run on the GPU"
    if split.cpu_nodes is not None and split.gpu_nodes + split.cpu_nodes != n:
        return f"the GPU log counts {split.gpu_nodes} + {split.cpu_nodes} nodes, the model has {n}"
    if fully_accelerated != (split.gpu_nodes == n):
        return f"the GPU log's count ({split.gpu_nodes} of {n}) disagrees with is_fully_accelerated"
    return None


@dataclass(frozen=True)
class _Support:
    """Which nodes the GPU accelerator supports (step 2: the refused kinds' nodes compiled alone), and why not."""

    supported: tuple[bool, ...]
    reasons: tuple[str | None, ...]
    alone: tuple[int, ...]  # the nodes compiled alone


def _compile_refused(
    graph: Graph, content: bytes, split: GpuSplit, compile_one: Compile, started: float
) -> _Support | str:
    """Each node of a kind the log refuses compiled alone; a sentence when that overruns the time budget or
    contradicts the log."""
    n = len(graph.nodes)
    refused_kinds = {op for op, _ in split.refused}
    listed = [node for node in graph.nodes if _kinds(node) & refused_kinds]
    model = fb.ModelT.InitFromPackedBuf(content, 0) if listed else None
    supported = [True] * n
    reasons: list[str | None] = [None] * n
    alone: list[int] = []
    for node in listed:
        if time.perf_counter() - started > ALONE_BUDGET_S:
            return f"compiling the refused kinds' nodes alone took over {ALONE_BUDGET_S:.0f} s; stopped"
        assert model is not None
        taken, lines = compile_one(one_node_model(model, content, node.index))
        alone.append(node.index)
        supported[node.index] = taken
        if not taken:
            reasons[node.index] = _alone_reason(node, lines, split)
    # Every kind the log refuses must be refused for some node compiled alone; a kind taken alone everywhere
    # means the whole-graph decision differed from the one-node ones.
    for kind in sorted(refused_kinds):
        of_kind = [node.index for node in listed if kind in _kinds(node)]
        if of_kind and all(supported[i] for i in of_kind):
            return f"the GPU log refuses {kind}, but each {kind} node compiled alone was taken"
    return _Support(tuple(supported), tuple(reasons), tuple(alone))


def _largest_partitions(graph: Graph, split: GpuSplit, support: _Support, started: float) -> GpuNodes | str:
    """Step 3: the supported nodes' largest partitions that hold the log's count, or why none do."""
    n = len(graph.nodes)
    reasons = list(support.reasons)
    found = partition(graph, support.supported)
    ordered = sorted(found, key=len, reverse=True)  # stable: ties keep TFLite's order
    sizes = [len(p) for p in ordered]
    k = next((k for k in range(len(ordered) + 1) if sum(sizes[:k]) == split.gpu_nodes), None)
    if k is None:
        return (
            f"the GPU log says {split.gpu_nodes} nodes run on the GPU, but no number of the largest partitions "
            f"of the supported nodes ({', '.join(map(str, sizes)) or 'none'}) adds up to it"
        )
    chosen = ordered[:k]
    # std::sort leaves equal partitions in any order: when the cut falls between two of one size,
    # which of them the GPU took is not said.
    open_size = sizes[k - 1] if 0 < k < len(ordered) and sizes[k - 1] == sizes[k] else None
    delegated: list[bool | None] = [False] * n
    number: list[int | None] = [None] * n
    taken_in_order = sorted((p for p in chosen if len(p) != open_size), key=min)
    for i, p in enumerate(taken_in_order):
        for member in p:
            delegated[member], number[member] = True, i
    kept = f"its {k} largest partitions" if k != 1 else "its largest partition"
    for p in ordered:
        if open_size is not None and len(p) == open_size:
            for member in p:
                delegated[member] = None
                reasons[member] = (
                    f"supported; the GPU took {sum(1 for q in chosen if len(q) == open_size)} of the "
                    f"{sum(1 for q in ordered if len(q) == open_size)} partitions of {open_size} nodes, "
                    f"and which is {NOT_REPORTED}"
                )
        elif p not in chosen and k == 0:
            for member in p:
                reasons[member] = "the GPU accelerator takes it compiled alone, but took no node of this model"
        elif p not in chosen:
            for member in p:
                reasons[member] = (
                    f"the GPU accelerator supports it, but delegates only {kept} "
                    f"({sizes[0]} nodes); this one's has {len(p)}"
                )
    return GpuNodes(
        tuple(delegated),
        tuple(number),
        tuple(reasons),
        len(found),
        k,
        support.alone,
        time.perf_counter() - started,
    )
