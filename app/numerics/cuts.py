"""The cuts of a model: for each node in execution order, the prefix that ends after it (the node and
every node its outputs depend on) as a stand-alone model whose outputs are the node's own, and the one
model that makes every cut's tensors outputs of the whole graph (the CPU reference reads them all from
one run). Written by app/tflite/cut.py, the splitter the Core ML pieces use."""

from __future__ import annotations

from dataclasses import dataclass

from ai_edge_litert import schema_py_generated as fb

from app.coverage.partition import has_side_effects
from app.errors import ModelError
from app.tflite.cut import cut_model, quantization, unpack
from app.tflite.graph import OPTIONAL_TENSOR, Graph, read_graph

# Values a cut can compare: a node whose outputs are all of other types (bool, string, resource) is not cut.
_NUMERIC = ("float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64")


@dataclass(frozen=True)
class Cut:
    """The prefix that ends after `node`: its `nodes` (execution order), the graph inputs it reads
    (`inputs`: positions in the model's input list) and the tensors it writes (`outputs`: the node's)."""

    position: int  # among the model's cuttable nodes, in execution order
    node: int
    op: str
    nodes: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]  # whole-graph tensor indices
    names: tuple[str, ...]  # those tensors' names
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Uncut:
    """A node no cut ends after, and why (said per node, never skipped silently)."""

    node: int
    op: str
    reason: str


class CutModel:
    """A model read once for cutting: its graph, its cuts in execution order, the bytes of each cut."""

    def __init__(self, content: bytes) -> None:
        self.graph: Graph = read_graph(content)
        if has_side_effects(self.graph):
            raise ModelError("the model has ops with side effects (variables, control flow); it is not cut")
        self._model: fb.ModelT = unpack(content)
        self.cuts, self.uncut = _plan(self.graph)

    def prefix(self, cut: Cut) -> bytes:
        graph_inputs = tuple(self.graph.inputs[i] for i in cut.inputs)
        return cut_model(
            self._model,
            cut.nodes,
            graph_inputs,
            cut.outputs,
            f"cut{cut.node}",
            f"the prefix of a model that ends after node {cut.node} ({cut.op})",
        )

    def every_tensor(self) -> tuple[bytes, tuple[int, ...]]:
        """The whole graph with every cut's tensors (and the model's outputs) as its outputs, and those
        tensors in output order."""
        outputs: list[int] = []
        for cut in self.cuts:
            outputs.extend(t for t in cut.outputs if t not in outputs)
        outputs.extend(t for t in self.graph.outputs if t not in outputs)
        nodes = tuple(n.index for n in self.graph.nodes)
        content = cut_model(
            self._model,
            nodes,
            self.graph.inputs,
            outputs,
            "every_tensor",
            "a model with every node's outputs made graph outputs",
        )
        return content, tuple(outputs)

    def quantization(self, tensor: int) -> tuple[float, int] | None:
        return quantization(self._model, tensor)


OUTPUTS = "(model outputs)"  # the op of the last cut when no one node writes every output


def _plan(graph: Graph) -> tuple[tuple[Cut, ...], tuple[Uncut, ...]]:
    """A cut per node that writes numbers from the model's inputs; then, when the last one's tensors are not
    every output of the model (several outputs written by several nodes), one more cut that writes them all
    (node index = the node count, op OUTPUTS), so that the last row is always the model's outputs."""
    producer = {t: n.index for n in graph.nodes for t in n.outputs if t != OPTIONAL_TENSOR}
    input_position = {t: i for i, t in enumerate(graph.inputs)}
    constant = {t.index for t in graph.tensors if t.constant}
    cuts: list[Cut] = []
    uncut: list[Uncut] = []

    def cut(node: int, op: str, outputs: tuple[int, ...]) -> Cut | None:
        needed: set[int] = set()
        reads: set[int] = set()
        stack = [producer[t] for t in outputs if t in producer]
        reads.update(input_position[t] for t in outputs if t in input_position)
        while stack:
            i = stack.pop()
            if i in needed:
                continue
            needed.add(i)
            for t in graph.nodes[i].inputs:
                if t in producer:
                    stack.append(producer[t])
                elif t in input_position:
                    reads.add(input_position[t])
        if not reads:
            return None
        return Cut(
            position=len(cuts),
            node=node,
            op=op,
            nodes=tuple(sorted(needed)),
            inputs=tuple(sorted(reads)),
            outputs=outputs,
            names=tuple(graph.tensors[t].name for t in outputs),
            shapes=tuple(graph.tensors[t].shape for t in outputs),
            dtypes=tuple(graph.tensors[t].dtype for t in outputs),
        )

    for node in graph.nodes:
        outputs = tuple(t for t in node.outputs if t != OPTIONAL_TENSOR and t not in constant)
        if not outputs:
            uncut.append(Uncut(node.index, node.op, "it writes no tensor"))
            continue
        odd = [graph.tensors[t] for t in outputs if graph.tensors[t].dtype not in _NUMERIC]
        if odd:
            uncut.append(Uncut(node.index, node.op, f"its output '{odd[0].name}' is {odd[0].dtype}, not numbers"))
            continue
        made = cut(node.index, node.op, outputs)
        if made is None:
            uncut.append(Uncut(node.index, node.op, "it reads no model input (its outputs are constants)"))
            continue
        cuts.append(made)
    wanted = tuple(t for t in graph.outputs if graph.tensors[t].dtype in _NUMERIC and t not in constant)
    if wanted and (not cuts or set(wanted) != set(cuts[-1].outputs)):
        made = cut(len(graph.nodes), OUTPUTS, wanted)
        if made is not None:
            cuts.append(made)
    return tuple(cuts), tuple(uncut)
