"""TFLite's own line about a delegate's partitioning, worked out from the nodes the delegate took.

When a delegate hands TFLite its nodes, Subgraph::ReplaceNodeSubsetsWithDelegateKernels
(tflite/core/subgraph.cc) partitions the execution plan and logs, at VERBOSE (printed on desktop
only in debug builds, and in production on Android, where users read it in logcat):

    Replacing N out of M node(s) with delegate (K) node, yielding P partitions for subgraph S (NAME).

N: the nodes the delegate asked for (`nodes_to_replace->size`); M: the execution plan's size at
that moment (every node of the model, for the first delegate applied); K: the delegate kernel's
registration name; P: `node_subsets.size()`, every node subset of the partitioning, delegated or
not; S, NAME: the subgraph's index and its name from the model file (empty when the file has none).
The wording differs between releases: older TensorFlow Lite says "… node(s) with delegate (K) node,
yielding P partitions." or "… for the whole graph.", TensorFlow 2.21's copy "… for subgraph S."; the
one here is the format string in the LiteRT build this project runs (ai-edge-litert 2.3.0's
libLiteRt.so and libpywrap_litert_common.so). That build logs it at VERBOSE under a minimum
severity of INFO with no way to lower it (no environment variable, no exported logger call), so
here the line is computed: the same figures from the nodes the runtime's DELEGATE nodes hold and
`partition.subsets` (graph_info.cc's partitioning), in the runtime's format.
"""

from __future__ import annotations

from collections.abc import Sequence

from ai_edge_litert import schema_py_generated as fb

from app.coverage.partition import subsets
from app.tflite.graph import Graph

# The format string, printf's %d/%s/%zu as fields (subgraph.cc; checked against the library's strings in
# tests/test_coverage_log_line.py).
FORMAT = (
    "Replacing {n} out of {m} node(s) with delegate ({kernel}) node, yielding {p} partitions for subgraph {s} ({name})."
)
# The XNNPACK delegate kernel's registration custom_name (delegates/xnnpack/xnnpack_delegate.cc).
XNNPACK_KERNEL = "TfLiteXNNPackDelegate"
# LiteRT's WebGPU accelerator's delegate kernel: the name this build's runtime gives its DELEGATE node
# ("Node number 8 (LITERT_WEBGPU) failed to invoke."), a string of libLiteRtWebGpuAccelerator.so.
WEBGPU_KERNEL = "LITERT_WEBGPU"


def subgraph_name(content: bytes, index: int = 0) -> str:
    """The subgraph's name as the interpreter builder sets it (interpreter_builder.cc: SetName when the
    file has one; Subgraph::name_ stays empty otherwise). The caller has read the graph already."""
    model = fb.Model.GetRootAs(content, 0)
    name = model.Subgraphs(index).Name()
    return name.decode("utf-8", "replace") if name else ""


def replacing_line(graph: Graph, taken: Sequence[bool], kernel: str, name: str, index: int = 0) -> str | None:
    """The line TFLite logs when a delegate, applied first, replaces the nodes `taken` of subgraph
    `index`; None when it takes none (ReplaceNodeSubsetsWithDelegateKernels returns before logging)."""
    if len(taken) != len(graph.nodes) or not any(taken):
        return None
    p = len(subsets(graph, taken))
    return FORMAT.format(n=sum(map(bool, taken)), m=len(graph.nodes), kernel=kernel, p=p, s=index, name=name)
