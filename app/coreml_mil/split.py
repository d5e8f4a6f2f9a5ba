"""Split a TFLite model where the Core ML delegate would: pieces that run one after another.

The delegate hands TFLite its kept partitions (app/coverage/coreml_rules.py), and TFLite
(tensorflow/lite/core/subgraph.cc, ReplaceNodeSubsetsWithDelegateKernels) partitions the graph
again with exactly those nodes (graph_info.cc, PartitionGraphIntoIndependentNodeSubsets) and lays
out the new execution plan subset by subset: one delegate kernel per delegated subset, the other
subsets' nodes as they were. Each subset becomes a piece here, written as a stand-alone .tflite
(the schema's object API), so a delegated piece can be translated to Core ML and the rest run in
LiteRT, in the runtime's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.coverage import Coverage
from app.coverage.partition import has_side_effects, subsets
from app.errors import ModelError
from app.tflite.cut import cut_model, unpack
from app.tflite.graph import OPTIONAL_TENSOR, Graph


@dataclass(frozen=True)
class Piece:
    index: int  # position in the split execution plan
    delegated: bool  # a Core ML partition (True) or nodes left to LiteRT's CPU kernels
    nodes: tuple[int, ...]  # node indices of the whole graph, in execution order
    inputs: tuple[int, ...]  # whole-graph tensor indices it reads from the model's inputs or earlier pieces
    outputs: tuple[int, ...]  # whole-graph tensor indices later pieces or the model's outputs read

    @property
    def where(self) -> str:
        return "coreml" if self.delegated else "cpu"


def plan_pieces(graph: Graph, coverage: Coverage) -> list[Piece]:
    """The pieces of `graph` for the Core ML delegate's selection `coverage`, in execution order."""
    if len(coverage.nodes) != len(graph.nodes):
        raise ValueError("the coverage does not belong to this graph")
    if has_side_effects(graph):
        raise ModelError("the model has ops with side effects (variables, control flow); it is not split")
    delegated = [bool(n.delegated) for n in coverage.nodes]
    groups = _with_fp16_weights(graph, [(kind, sorted(members)) for kind, members in subsets(graph, delegated)])
    constant = {t.index for t in graph.tensors if t.constant}
    produced_in = {}
    for position, (_, members) in enumerate(groups):
        for i in members:
            for t in graph.nodes[i].outputs:
                if t != OPTIONAL_TENSOR:
                    produced_in[t] = position
    read_later: dict[int, set[int]] = {}  # tensor -> pieces that read it
    for position, (_, members) in enumerate(groups):
        for i in members:
            for t in graph.nodes[i].inputs:
                if t != OPTIONAL_TENSOR:
                    read_later.setdefault(t, set()).add(position)
    pieces = []
    for position, (kind, members) in enumerate(groups):
        inputs: list[int] = []
        outputs: list[int] = []
        for i in members:
            for t in graph.nodes[i].inputs:
                if t == OPTIONAL_TENSOR or t in constant or produced_in.get(t) == position or t in inputs:
                    continue
                inputs.append(t)
            for t in graph.nodes[i].outputs:
                if t == OPTIONAL_TENSOR:
                    continue
                if t in graph.outputs or any(p > position for p in read_later.get(t, ())):
                    outputs.append(t)
        pieces.append(Piece(position, kind, members, tuple(inputs), tuple(outputs)))
    return pieces


def _fp16_dequantize_outputs(graph: Graph) -> Mapping[int, int]:
    """DEQUANTIZE output -> node, for DEQUANTIZEs of constant fp16 tensors (fp16 weights)."""
    found = {}
    for node in graph.nodes:
        if node.op == "DEQUANTIZE" and node.inputs and node.outputs and node.inputs[0] != OPTIONAL_TENSOR:
            source = graph.tensors[node.inputs[0]]
            if source.dtype == "float16" and source.constant:
                found[node.outputs[0]] = node.index
    return found


def _with_fp16_weights(graph: Graph, groups: list[tuple[bool, list[int]]]) -> list[tuple[bool, tuple[int, ...]]]:
    """A partly delegated model keeps its fp16 DEQUANTIZEs on the CPU, but the delegate reads their fp16
    constants itself (FP16GraphPartitionHelper::RemapFp16InputTensors, delegates/utils.cc): so each
    delegated piece takes a copy of the DEQUANTIZEs it reads (their constant becomes its weight), and a
    CPU DEQUANTIZE that no CPU node and no model output then reads is dropped."""
    fp16 = _fp16_dequantize_outputs(graph)
    if not fp16:
        return [(kind, tuple(members)) for kind, members in groups]
    out: list[tuple[bool, list[int]]] = []
    for kind, members in groups:
        if kind:
            pulled = {fp16[t] for i in members for t in graph.nodes[i].inputs if t in fp16}
            members = sorted(set(members) | pulled)
        out.append((kind, members))
    read_on_cpu = {t for kind, members in out if not kind for i in members for t in graph.nodes[i].inputs}
    kept = []
    for kind, members in out:
        if not kind:
            members = [
                i for i in members
                if not (graph.nodes[i].outputs and graph.nodes[i].outputs[0] in fp16)
                or graph.nodes[i].outputs[0] in read_on_cpu or graph.nodes[i].outputs[0] in graph.outputs
            ]  # fmt: skip
        if members:
            kept.append((kind, tuple(members)))
    return kept


def piece_models(data: bytes, pieces: list[Piece]) -> list[bytes]:
    """One stand-alone .tflite per piece: its nodes, the tensors they touch, the buffers those use
    (app/tflite/cut.py)."""
    model = unpack(data)
    return [
        cut_model(model, p.nodes, p.inputs, p.outputs, f"piece{p.index}",
                  f"piece {p.index} ({p.where}) of a model split at its Core ML partitions")
        for p in pieces
    ]  # fmt: skip


def _span(nodes: tuple[int, ...]) -> str:
    contiguous = list(nodes) == list(range(nodes[0], nodes[-1] + 1))
    if len(nodes) == 1:
        return f"node {nodes[0]}"
    return f"nodes {nodes[0]}–{nodes[-1]}" if contiguous else f"{len(nodes)} nodes from {nodes[0]} to {nodes[-1]}"


@dataclass(frozen=True)
class PieceSummary:
    """One piece as people read it: where it runs, its nodes, and the op kinds in it."""

    index: int
    where: str  # "coreml" or "cpu" (Piece.where)
    nodes: tuple[int, ...]
    ops: tuple[str, ...]  # op kinds, sorted

    def text(self, max_ops: int | None = 4) -> str:
        """'Core ML nodes 0–57', 'CPU node 58 (MEAN)': a CPU piece names its op kinds (`max_ops` at most)."""
        if self.where == "coreml":
            return f"Core ML {_span(self.nodes)}"
        ops = self.ops if max_ops is None else self.ops[:max_ops]
        return f"CPU {_span(self.nodes)} ({', '.join(ops)}{', …' if len(ops) < len(self.ops) else ''})"


@dataclass(frozen=True)
class CoreMLPieces:
    """How the Core ML backend runs a model on a Mac: its pieces in order, or why it is not split.

    Carried by a Core ML request's DelegationReport, so the window shows what inspect prints."""

    pieces: tuple[PieceSummary, ...] = ()
    not_split: str | None = None  # why there are no pieces
    first_inference_ms: tuple[float, ...] | None = None  # per piece, when this session ran them (macOS)

    @property
    def runs_core_ml(self) -> bool:
        return any(p.where == "coreml" for p in self.pieces)

    def sentence(self, where: str = "on a Mac", limit: int | None = None) -> str:
        """'Core ML on a Mac runs it in 3 pieces: Core ML nodes 0–57 → CPU node 58 (MEAN) → Core ML nodes 59–60'
        (`limit`: name that many pieces at most)."""
        if self.not_split:
            return f"{self.headline(where)}: {self.not_split}"
        return f"{self.headline(where)}: {describe_pieces(self.pieces, limit)}"

    def headline(self, where: str = "on a Mac") -> str:
        """'Core ML on a Mac runs it in 3 pieces' ('where' empty: where it runs now)."""
        subject = f"Core ML {where}" if where else "Core ML"
        if self.not_split:
            return f"{subject} does not split it into pieces"
        n = len(self.pieces)
        return f"{subject} runs it in {n} piece{'s' if n != 1 else ''}"

    def piece_time(self, position: int) -> str:
        """A piece's first-inference time, or "not reported"."""
        times = self.first_inference_ms
        if times is None or position >= len(times):
            return "not reported"
        return f"{times[position]:.2f} ms"

    @classmethod
    def from_dict(cls, d: dict) -> CoreMLPieces:
        times = d.get("first_inference_ms")
        return cls(
            pieces=tuple(
                PieceSummary(int(p["index"]), str(p["where"]), tuple(p["nodes"]), tuple(p["ops"]))
                for p in d.get("pieces") or ()
            ),
            not_split=d.get("not_split"),
            first_inference_ms=tuple(float(t) for t in times) if times is not None else None,
        )


def summarize_pieces(graph: Graph, pieces: Sequence[Piece]) -> tuple[PieceSummary, ...]:
    return tuple(
        PieceSummary(p.index, p.where, p.nodes, tuple(sorted({graph.nodes[i].op for i in p.nodes}))) for p in pieces
    )


def coreml_pieces(graph: Graph, coverage: Coverage) -> CoreMLPieces:
    """The pieces the Core ML backend would run `graph` in for the delegate's selection `coverage`."""
    if has_side_effects(graph):
        return CoreMLPieces(not_split="the model has ops with side effects (variables, control flow)")
    return CoreMLPieces(summarize_pieces(graph, plan_pieces(graph, coverage)))


def describe_pieces(pieces: Sequence[PieceSummary], limit: int | None = None) -> str:
    """'Core ML nodes 0–57 → CPU node 58 (MEAN) → Core ML nodes 59–60': the execution plan in one line
    (`limit`: the first pieces, then how many more)."""
    shown = pieces if limit is None or len(pieces) <= limit else pieces[:limit]
    text = " → ".join(p.text() for p in shown)
    return text + (f" → … ({len(pieces) - len(shown)} more)" if len(shown) < len(pieces) else "")


def pieces_to_dict(pieces: Sequence[Piece | PieceSummary]) -> list[dict]:
    return [{"piece": p.index, "where": p.where, "nodes": list(p.nodes)} for p in pieces]
