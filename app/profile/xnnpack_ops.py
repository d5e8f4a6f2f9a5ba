"""Which TFLite node each XNNPACK operator in a profile stands for.

XNNPACK's profile names its own operators ("Fully Connected (NC, F32) GEMM" for a 1x1 CONV_2D),
numbered from 0 within each partition (the events' metadata), not TFLite nodes. The delegate
builds its subgraph node by node in execution order (tensorflow/lite/delegates/xnnpack/
xnnpack_delegate.cc, Subgraph::Create -> VisitNode), usually one operator per node, but it adds
some of its own (a "Static Reshape" before a FULLY_CONNECTED that flattens its input). So the
operators are aligned to the partition's nodes in order, and an operator whose kind cannot be that
node's is counted as one the delegate added (node None) rather than forced onto a node.
"""

from __future__ import annotations

# The first word(s) of an XNNPACK operator name -> the TFLite ops it can implement (xnnpack_delegate.cc's
# Visit*Node functions, each defining the XNNPACK node named here). A kind not listed aligns with any node.
_KINDS: dict[str, frozenset[str]] = {
    "Convolution": frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"}),
    "Deconvolution": frozenset({"TRANSPOSE_CONV"}),
    "Fully Connected": frozenset({"CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL"}),
    "Batch Matrix Multiply": frozenset({"BATCH_MATMUL", "FULLY_CONNECTED"}),
    "Add": frozenset({"ADD"}),
    "Multiply": frozenset({"MUL"}),
    "Subtract": frozenset({"SUB"}),
    "Divide": frozenset({"DIV"}),
    "Mean": frozenset({"MEAN"}),
    "Sum": frozenset({"SUM"}),
    "Max Pooling": frozenset({"MAX_POOL_2D"}),
    "Average Pooling": frozenset({"AVERAGE_POOL_2D", "MEAN"}),
    "Global Average Pooling": frozenset({"MEAN", "AVERAGE_POOL_2D"}),
    "Softmax": frozenset({"SOFTMAX"}),
    "Static Reshape": frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}),
    "Copy": frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}),
    "Constant Pad": frozenset({"PAD", "PADV2"}),
    "Concatenate": frozenset({"CONCATENATION"}),
    "Sigmoid": frozenset({"LOGISTIC"}),
    "HardSwish": frozenset({"HARD_SWISH"}),
    "Clamp": frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"}),
    "Leaky ReLU": frozenset({"LEAKY_RELU"}),
    "Tanh": frozenset({"TANH"}),
    "Convert": frozenset({"QUANTIZE", "DEQUANTIZE"}),
    "Transpose": frozenset({"TRANSPOSE"}),
    "Resize Bilinear": frozenset({"RESIZE_BILINEAR"}),
    "Slice": frozenset({"SLICE", "STRIDED_SLICE"}),
}


def _kind(tag: str) -> frozenset[str] | None:
    for name, ops in sorted(_KINDS.items(), key=lambda kv: -len(kv[0])):
        if tag.startswith(name):
            return ops
    return None


def align(tags: list[str], nodes: list[tuple[int, str]]) -> list[int | None]:
    """For each operator tag, the node (index) it stands for, or None for one the delegate added.

    `nodes`: the partition's (node index, op) in execution order. Equal counts map one to one."""
    if len(tags) == len(nodes):
        return [index for index, _ in nodes]
    out: list[int | None] = []
    position = 0
    for i, tag in enumerate(tags):
        ops = _kind(tag)
        surplus_nodes = (len(nodes) - position) - (len(tags) - i)  # > 0: some nodes have no operator of their own
        for j in range(position, min(len(nodes), position + max(surplus_nodes, 0) + 1)):
            if ops is None or nodes[j][1] in ops:
                out.append(nodes[j][0])
                position = j + 1
                break
        else:
            out.append(None)  # an operator the delegate added
    return out
