"""Coverage read from a runtime that applied its delegate: LiteRT's node list after XNNPACK or the GPU."""

from __future__ import annotations

from app.coverage import NOT_REPORTED, Coverage, LogSource, NodeCoverage
from app.coverage.gpu_nodes import GpuNodes
from app.coverage.partition import subsets as node_subsets
from app.coverage.replacing import XNNPACK_KERNEL, replacing_line, subgraph_name
from app.errors import ModelError
from app.tflite.graph import read_graph

# XNNPACK does not log why it refuses a node; the runtime's own kernel then runs it.
_XNNPACK_LEFT = "XNNPACK did not take it (the runtime does not say why); LiteRT's built-in CPU kernel runs it"


def _xnnpack_line(content: bytes, partitions: list[set[int]], n_nodes: int) -> str | None:
    """TFLite's line for XNNPACK's replacement (app/coverage/replacing.py), from the nodes its DELEGATE
    nodes hold; None when the model's graph is not the interpreter's or graph_info.cc's partitioning
    as reproduced by `partition.subsets` does not give back the partitions the runtime made."""
    try:
        graph = read_graph(content)
        name = subgraph_name(content)
    except ModelError:
        return None
    if len(graph.nodes) != n_nodes:
        return None
    taken = [any(i in p for p in partitions) for i in range(n_nodes)]
    reproduced = {frozenset(members) for kind, members in node_subsets(graph, taken) if kind}
    if reproduced != {frozenset(p) for p in partitions}:
        return None
    return replacing_line(graph, taken, XNNPACK_KERNEL, name)


def from_ops_details(ops: list[dict], versions: list[int] | None = None, content: bytes | None = None) -> Coverage:
    """CPU coverage from `Interpreter._get_ops_details()` after allocation.

    The list holds the model's nodes, then one DELEGATE node per partition XNNPACK
    replaced. A node belongs to a partition when the partition's outputs depend on it
    without passing through the partition's inputs. With the model's bytes (`content`),
    `log` is TFLite's "Replacing N out of M node(s)…" line for XNNPACK, computed.
    """
    original = [op for op in ops if op["op_name"] != "DELEGATE"]
    delegates = [op for op in ops if op["op_name"] == "DELEGATE"]
    producer = {int(t): op["index"] for op in original for t in op["outputs"]}
    by_index = {op["index"]: op for op in original}
    partition_of: dict[int, int] = {}
    for number, d in enumerate(delegates):
        boundary = {int(t) for t in d["inputs"]}
        stack = [int(t) for t in d["outputs"]]
        while stack:
            tensor = stack.pop()
            node = producer.get(tensor)
            if tensor in boundary or node is None or node in partition_of:
                continue
            partition_of[node] = number
            stack.extend(int(t) for t in by_index[node]["inputs"] if t >= 0)
    # Partitions in execution order of their first node, as a reader scans the graph.
    order = sorted(set(partition_of.values()), key=lambda p: min(n for n, q in partition_of.items() if q == p))
    renumber = {p: i for i, p in enumerate(order)}
    nodes = tuple(
        NodeCoverage(
            index=op["index"],
            op=op["op_name"],
            version=versions[op["index"]] if versions and op["index"] < len(versions) else 0,
            delegated=op["index"] in partition_of,
            partition=renumber.get(partition_of.get(op["index"], -1)),
            reason=None if op["index"] in partition_of else _XNNPACK_LEFT,
        )
        for op in original
    )
    members = [{n for n, q in partition_of.items() if q == p} for p in range(len(delegates))]
    log = None if content is None else _xnnpack_line(content, members, len(original))
    return Coverage(
        delegate="cpu",
        source="measured",
        reason="read from LiteRT's node list after XNNPACK was applied",
        nodes_total=len(original),
        nodes_delegated=len(partition_of),
        partitions=len(delegates),
        delegated_partitions=len(delegates),
        log=log,
        nodes=nodes,
        log_source=None if log is None else "computed",
    )


def gpu_replacing_line(
    content: bytes, fully_accelerated: bool, taken: GpuNodes | str | None, kernel: str | None
) -> str | None:
    """TFLite's "Replacing N out of M node(s)…" line for the GPU accelerator (app/coverage/replacing.py),
    from the nodes it took: all of them when it reports the whole model accelerated, else the nodes
    `gpu_nodes.resolve` found; None when some are open (equal partitions), the nodes are not reported,
    or the accelerator's kernel name is not known (`kernel` None). LiteRT applies the GPU accelerator
    before XNNPACK (its log creates XNNPACK after the GPU's summary), so M is every node of the model."""
    if kernel is None:
        return None
    try:
        graph = read_graph(content)
        name = subgraph_name(content)
    except ModelError:
        return None
    if fully_accelerated:
        chosen: list[bool] = [True] * len(graph.nodes)
    elif isinstance(taken, GpuNodes) and all(d is not None for d in taken.delegated):
        chosen = [bool(d) for d in taken.delegated]
    else:
        return None
    return replacing_line(graph, chosen, kernel, name)


def gpu_coverage(
    ops: list[str],
    versions: list[int],
    fully_accelerated: bool,
    nodes_delegated: int | None,
    partitions: int | None,
    printed: str | None,
    subsets: int | None = None,
    taken: GpuNodes | str | None = None,
    summary: str | None = None,
    computed: str | None = None,
) -> Coverage:
    """GPU coverage from what LiteRT's CompiledModel says: whether every node is accelerated, the node
    count its log prints, and, for a partly accelerated model, which nodes it took as worked out by
    `gpu_nodes.resolve` from its log (`taken`); when that is absent or does not add up (a sentence),
    the nodes are NOT_REPORTED rather than guessed from an op list.

    `log` is TFLite's "Replacing N out of M node(s)…" line: the one the runtime `printed`, else the one
    `computed` from the nodes (`gpu_replacing_line`), else the GPU delegate's own `summary` line as
    printed ("3 operations will run on the GPU, …"), which the reason then quotes when it is not the log."""
    nodes = tuple(_gpu_node(i, op, versions, fully_accelerated, taken) for i, op in enumerate(ops))
    found = taken.partitions_found if not fully_accelerated and isinstance(taken, GpuNodes) else partitions
    basis = _gpu_basis(fully_accelerated, taken)
    if subsets is not None:
        basis += f"; its log splits the graph into {subsets} node subsets, delegated and not"
    source: LogSource = "computed" if computed and not printed else "printed"
    log = printed or computed or summary
    if summary and log != summary:
        basis += f"; its log says: {summary}"
    return Coverage(
        delegate="gpu",
        source="measured",
        reason=basis,
        nodes_total=len(ops),
        nodes_delegated=nodes_delegated,
        partitions=found,
        delegated_partitions=partitions,
        log=log,
        nodes=nodes,
        log_source=source if log else None,
    )


def _gpu_node(
    i: int, op: str, versions: list[int], fully_accelerated: bool, taken: GpuNodes | str | None
) -> NodeCoverage:
    """Node `i` as far as the runtime's answer tells: all on the GPU, as `taken` worked it out, or not reported."""
    version = versions[i] if i < len(versions) else 0
    if fully_accelerated:
        return NodeCoverage(i, op, version, True, 0, None)
    if isinstance(taken, GpuNodes) and i < len(taken.delegated):
        return NodeCoverage(i, op, version, taken.delegated[i], taken.partition[i], taken.reasons[i])
    return NodeCoverage(i, op, version, None, None, NOT_REPORTED)


def _gpu_basis(fully_accelerated: bool, taken: GpuNodes | str | None) -> str:
    """What the GPU coverage rests on: the runtime's word, the reasoning of `gpu_nodes.resolve`, or why neither."""
    if fully_accelerated:
        return "LiteRT's GPU accelerator reports the whole model accelerated"
    if isinstance(taken, GpuNodes):
        return (
            "LiteRT's GPU accelerator reports the model NOT fully accelerated; which nodes it took: the op kinds its "
            f"log refuses, {len(taken.compiled_alone)} node(s) of those kinds each compiled alone "
            f"({taken.seconds:.1f} s), and TFLite's partitioning of the supported nodes, whose largest partitions "
            "add up to the count the runtime logs"
        )
    basis = "LiteRT's GPU accelerator reports the model NOT fully accelerated; which nodes stay on the CPU is "
    basis += NOT_REPORTED
    if isinstance(taken, str):
        basis += f" ({taken})"
    return basis
