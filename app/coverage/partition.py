"""How TFLite splits a graph into delegate partitions, and which of them a delegate keeps.

Every delegate hands TFLite the set of nodes it supports; TFLite groups them
(tensorflow/lite/graph_info.cc, PartitionGraphIntoIndependentNodeSubsets, called
through Subgraph::PreviewDelegatePartitioning), and the delegate's
GraphPartitionHelper (tensorflow/lite/delegates/utils.cc) then keeps the largest
partitions. Both steps are reproduced here rule by rule, so predicted coverage
counts partitions exactly as the runtime's own log does.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.tflite.graph import OPTIONAL_TENSOR, Graph

_NOT_READY = -1
_ALWAYS_READY = -2  # graph inputs and constants: available to every subset
# Subgraph::OpMightHaveSideEffect (core/subgraph.cc): nodes that touch resource (variable) tensors and
# control flow. The runtime's exact test also looks into the called subgraphs; these names cover what an
# image classifier can hold, and `has_side_effects` lets callers say when the approximation applies.
_SIDE_EFFECT_OPS = {"IF", "WHILE", "CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"}


def _might_have_side_effect(graph: Graph, index: int) -> bool:
    node = graph.nodes[index]
    tensors = [graph.tensors[t] for t in (*node.inputs, *node.outputs) if t != OPTIONAL_TENSOR]
    return node.op in _SIDE_EFFECT_OPS or any(t.dtype in ("resource", "variant") for t in tensors)


def has_side_effects(graph: Graph) -> bool:
    return any(_might_have_side_effect(graph, n.index) for n in graph.nodes)


def partition(graph: Graph, supported: Sequence[bool]) -> list[list[int]]:
    """The subsets of supported nodes TFLite would hand a delegate, in the order it forms them (see `subsets`)."""
    return [members for kind, members in subsets(graph, supported) if kind]


def subsets(graph: Graph, supported: Sequence[bool]) -> list[tuple[bool, list[int]]]:
    """Every subset, supported (True) or not, in the order TFLite forms them: also the order in which
    Subgraph::ReplaceNodeSubsetsWithDelegateKernels lays out the new execution plan, one delegate
    kernel per supported subset and the other subsets' nodes as they are.

    graph_info.cc colours the graph in epochs: an epoch takes its type (supported or not)
    from the first ready node found in execution order, then sweeps the execution plan
    again and again, adding every node of that type whose inputs are all ready, until a
    sweep adds nothing. So independent supported nodes separated only by unsupported ones
    on another branch still land in one subset; a chain is cut at every unsupported node.
    """
    n = len(graph.nodes)
    # PartitionGraphIntoIndependentNodeSubsets (greedy mode, the runtime's default) chains the nodes
    # with side effects with control edges, so they stay in their original order.
    after: dict[int, int] = {}
    last = -1
    for node in graph.nodes:
        if _might_have_side_effect(graph, node.index):
            if last >= 0:
                after[node.index] = last
            last = node.index
    tensor_epoch = [_ALWAYS_READY] * len(graph.tensors)
    for node in graph.nodes:
        for t in node.outputs:
            if t != OPTIONAL_TENSOR:
                tensor_epoch[t] = _NOT_READY
    node_epoch = [_NOT_READY] * n
    found: list[tuple[bool, list[int]]] = []
    while True:
        epoch = len(found)
        kind: bool | None = None
        members: list[int] = []
        while True:
            added = False
            for node in graph.nodes:
                i = node.index
                if node_epoch[i] != _NOT_READY:
                    continue
                if any(t != OPTIONAL_TENSOR and tensor_epoch[t] == _NOT_READY for t in node.inputs):
                    continue
                if i in after and node_epoch[after[i]] == _NOT_READY:
                    continue
                if kind is None:
                    kind = bool(supported[i])  # the first ready node sets the epoch's type
                if bool(supported[i]) != kind:
                    continue
                node_epoch[i] = epoch
                members.append(i)
                for t in node.outputs:
                    if t != OPTIONAL_TENSOR:
                        tensor_epoch[t] = epoch
                added = True
            if not added:
                break
        if not members:
            break
        found.append((bool(kind), members))
    return found


def largest(partitions: list[list[int]], max_partitions: int, min_nodes: int) -> list[list[int]]:
    """GraphPartitionHelper::GetFirstNLargestPartitions: partitions sorted by size, largest first,
    those with fewer than `min_nodes` dropped, the first `max_partitions` kept (0 or less: all)."""
    ordered = sorted(partitions, key=len, reverse=True)  # stable: ties keep TFLite's order
    kept = [p for p in ordered if len(p) >= min_nodes]
    return kept[:max_partitions] if max_partitions > 0 else kept
