"""TFLite's "Replacing N out of M node(s) with delegate (K) node, yielding P partitions for subgraph S
(NAME)." line (app/coverage/replacing.py), for XNNPACK on the real runtime.

This LiteRT build logs the line at VERBOSE under a minimum severity of INFO and never prints it, so
it is computed: these tests hold its format to the format string in the runtime's own library,
and its figures to hand counts on small built models with refused nodes in the middle, whose
partitions the runtime's DELEGATE nodes confirm. (The GPU's line, against the GPU delegate's
printed counts under SwiftShader: tests/test_gpu_coverage.py.)
"""

from __future__ import annotations

from pathlib import Path

import ai_edge_litert
import flatbuffers
import pytest
from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.interpreter import Interpreter

from app.coverage import Coverage, read_coverage
from app.coverage.measured import from_ops_details
from app.coverage.replacing import FORMAT, WEBGPU_KERNEL, XNNPACK_KERNEL
from app.coverage.text import render
from app.system.native_log import capture_stderr
from tests.builders.gpu_models import MIXED, TIE, X, chain
from tests.builders.tflite_builder import GraphBuilder, options

LIBRARY = Path(ai_edge_litert.__file__).parent


def named(content: bytes, name: str) -> bytes:
    """The model with its subgraph named as converters name it ("main")."""
    model = fb.ModelT.InitFromPackedBuf(content, 0)
    model.subgraphs[0].name = name
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def cpu(content: bytes) -> tuple[Coverage, list[str]]:
    with capture_stderr() as log:
        interpreter = Interpreter(model_content=content, num_threads=1)
        interpreter.allocate_tensors()
    return from_ops_details(interpreter._get_ops_details(), None, content), log.lines()


def branches() -> bytes:
    """0 ADD(x), 1 LOG_SOFTMAX(x), 2 ADD(node 0's output): two outputs. XNNPACK refuses LOG_SOFTMAX.
    Read in execution order the nodes run supported, refused, supported (3 runs), but TFLite's
    partitioner takes node 2 into node 0's subset (it is ready in the first sweep): 2 subsets."""
    g = GraphBuilder()
    x = g.input(X)
    a, b, c = g.tensor(X), g.tensor(X), g.tensor(X)
    g.op("ADD", [x, g.const([[[[1.0, 1.0, 1.0]]]])], [a], options("AddOptions"))
    g.op("LOG_SOFTMAX", [x], [b], options("LogSoftmaxOptions"))
    g.op("ADD", [a, g.const([[[[2.0, 2.0, 2.0]]]])], [c], options("AddOptions"))
    return g.build([b, c])


def test_the_format_is_the_one_in_the_runtime_library():
    """The format string, its printf fields as this module's, is in both copies of the runtime the
    project loads; so are the kernel names the line gives (XNNPACK's, and the WebGPU accelerator's)."""
    printf = (FORMAT.replace("{n}", "%d").replace("{m}", "%d").replace("{kernel}", "%s").replace("{p}", "%zu")
              .replace("{s}", "%d").replace("{name}", "%s"))  # fmt: skip
    assert printf == (
        "Replacing %d out of %d node(s) with delegate (%s) node, yielding %zu partitions for subgraph %d (%s)."
    )
    for library in ("libLiteRt.so", "libpywrap_litert_common.so"):
        data = (LIBRARY / library).read_bytes()
        assert printf.encode() + b"\0" in data, library
        assert XNNPACK_KERNEL.encode() + b"\0" in data, library
    assert WEBGPU_KERNEL.encode() + b"\0" in (LIBRARY / "libLiteRtWebGpuAccelerator.so").read_bytes()


def test_the_runtime_does_not_print_it_here():
    """Were it printed, the coverage would have to carry the printed line, not a computed one."""
    coverage, log = cpu(chain(MIXED))
    assert coverage.nodes_delegated == 6  # XNNPACK replaced nodes, so the runtime reached the log call
    assert not any("Replacing" in line for line in log), log


@pytest.mark.parametrize(
    ("ops", "line"),
    [
        # 0 ADD, 1 SOFTMAX, 2 MUL, 3 SOFTMAX beta 2 (refused), 4 ADD, 5 LOG_SOFTMAX (refused), 6 ADD,
        # 7 RESHAPE: taken [0-2], [4], [6-7]; subsets [0-2] [3] [4] [5] [6-7].
        (MIXED, "Replacing 6 out of 8 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 5 partitions"),
        # 0 ADD, 1 ADD, 2 LOG_SOFTMAX (refused), 3 ADD, 4 RESHAPE: subsets [0-1] [2] [3-4].
        (TIE, "Replacing 4 out of 5 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 3 partitions"),
        # Every node taken: one subset.
        ("AMA", "Replacing 4 out of 4 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 1 partitions"),
    ],
)
def test_xnnpacks_line_on_hand_counted_chains(ops: str, line: str):
    coverage, _ = cpu(named(chain(ops), "main"))
    assert coverage.log == f"{line} for subgraph 0 (main)."
    assert coverage.log_source == "computed"


def test_p_counts_subsets_as_the_partitioner_forms_them_not_runs_in_execution_order():
    coverage, _ = cpu(branches())
    # The runtime made one DELEGATE node of nodes 0 and 2: the subset the line counts.
    assert (coverage.delegated_partitions, [n.partition for n in coverage.nodes]) == (1, [0, None, 0])
    assert coverage.log == (
        "Replacing 2 out of 3 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 2 partitions "
        "for subgraph 0 ()."
    )  # a file without a subgraph name: TFLite's Subgraph::name_ stays empty


def test_no_line_when_xnnpack_takes_nothing_or_the_runtimes_partitions_are_not_reproduced():
    g = GraphBuilder()
    x = g.input(X)
    y = g.tensor(X)
    g.op("LOG_SOFTMAX", [x], [y], options("LogSoftmaxOptions"))
    coverage, _ = cpu(g.build([y]))
    # ReplaceNodeSubsetsWithDelegateKernels returns before its log call when given no nodes.
    assert (coverage.nodes_delegated, coverage.log, coverage.log_source) == (0, None, None)
    with capture_stderr():
        interpreter = Interpreter(model_content=chain(MIXED))
        interpreter.allocate_tensors()
    # Another model's graph: what the runtime did cannot be checked against it, so no line is given.
    other = from_ops_details(interpreter._get_ops_details(), None, chain("AALA"))
    assert other.log is None and other.nodes_delegated == 6


def test_log_source_sits_beside_log_only_where_there_is_one_and_survives_a_sidecar():
    coverage, _ = cpu(chain(MIXED))
    d = coverage.to_dict()
    keys = list(d)
    assert keys[keys.index("log") + 1] == "log_source" and keys[-1] == "nodes"
    assert read_coverage(d) == coverage
    assert read_coverage({**d, "log_source": "guessed"}) is None
    bare = Coverage("coreml", "predicted", None, 1, 1, 1, 1, "CoreML delegate: 1 nodes delegated out of 1 nodes, "
                    "with 1 partitions.")  # fmt: skip
    assert "log_source" not in bare.to_dict()  # JSON written before the key existed keeps its bytes
    assert read_coverage(bare.to_dict()) == bare


def test_inspect_text_puts_the_line_under_the_summary_and_says_it_is_computed():
    coverage, _ = cpu(named(chain(MIXED), "main"))
    lines = render({"cpu": coverage})
    assert lines[0] == "CPU (XNNPACK)  measured    6 of 8 nodes delegated in 3 partitions"
    assert lines[1] == (
        "                           log (computed; this LiteRT build does not print it): "
        "Replacing 6 out of 8 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 5 partitions "
        "for subgraph 0 (main). [5 partitions: TFLite counts every node subset, the 3 XNNPACK took and the 2 runs "
        "of nodes left on the CPU]"
    )
    # A model XNNPACK takes whole: one subset, the count is the delegated partitions', nothing to explain.
    whole, _ = cpu(named(chain("AM"), "main"))
    assert render({"cpu": whole})[1].endswith("yielding 1 partitions for subgraph 0 (main).")
