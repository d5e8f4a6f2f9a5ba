"""app/tflite/memory_plan.py: weights, the activation arena as TFLite's planner lays it out, the tensors
that set it, and each delegate's predicted copy of the weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from app.system.names import Delegate
from app.tflite.graph import read_graph
from app.tflite.memory_plan import ALIGNMENT, MemoryPlan, arena_layout, plan_memory
from tests.builders.tflite_builder import GraphBuilder, options
from tests.helpers.paths import ROOT

BUNDLED = [ROOT / "models" / "efficientnet_lite0.tflite", ROOT / "models" / "efficientnet_lite0_int8.tflite"]


def constant_buffer_bytes(data: bytes) -> int:
    """The constant buffers every subgraph's tensors point to, each once, read through the schema's object
    API (not the reader under test)."""
    model = fb.ModelT.InitFromPackedBuf(data, 0)
    used = {t.buffer for sg in model.subgraphs for t in sg.tensors if t.buffer}
    return sum(len(model.buffers[b].data) for b in used if model.buffers[b].data is not None)


def real_arena(data: bytes, arena: set[int]) -> tuple[dict[int, int], int, int]:
    """LiteRT's own arena on its built-in kernels (no delegate): each tensor of `arena`'s offset from the
    arena's start (the tensor placed first sits at 0), the highest end, and the tensors the kernels added
    (temporaries: in the real arena, absent from the file)."""
    builtin = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interpreter = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=builtin)
    interpreter.allocate_tensors()
    in_file = len(fb.ModelT.InitFromPackedBuf(data, 0).subgraphs[0].tensors)
    placed: dict[int, tuple[int, int]] = {}
    for i in sorted(arena):
        view = interpreter.tensor(i)()
        if view.nbytes:
            placed[i] = (view.ctypes.data, view.nbytes)
        del view
    base = min(address for address, _ in placed.values())
    offsets = {i: address - base for i, (address, _) in placed.items()}
    top = max(address - base + size for address, size in placed.values())
    return offsets, top, interpreter._interpreter.NumTensors(0) - in_file


def arena_tensors(plan_data: bytes) -> set[int]:
    """The file's non-constant tensors: what the arena holds (these test graphs have no variables)."""
    graph = read_graph(plan_data)
    return {t.index for t in graph.tensors if not t.constant}


def concat_chain() -> bytes:
    """x[1,10] -> concat(x,x) a[1,20] -> concat(a,a) b[1,40] -> relu c[1,40] -> concat(c,c) y[1,80]: float32."""
    g = GraphBuilder()
    x = g.input((1, 10))
    a, b, c, y = g.tensor((1, 20)), g.tensor((1, 40)), g.tensor((1, 40)), g.tensor((1, 80))
    axis = options("ConcatenationOptions", axis=1)
    g.op("CONCATENATION", [x, x], [a], axis)
    g.op("CONCATENATION", [a, a], [b], axis)
    g.op("RELU", [b], [c])
    g.op("CONCATENATION", [c, c], [y], axis)
    return g.build([y])


def in_place_chain() -> bytes:
    """x[1,100] -> relu a -> add(a, k) b -> reshape(b, [10,10]) c -> tanh y[10,10]: float32."""
    g = GraphBuilder()
    x = g.input((1, 100))
    a = g.tensor((1, 100))
    k = g.const(np.full((1, 100), 0.5))
    b = g.tensor((1, 100))
    shape = g.const([10, 10], "int32")
    c, y = g.tensor((10, 10)), g.tensor((10, 10))
    g.op("RELU", [x], [a])
    g.op("ADD", [a, k], [b], options("AddOptions"))
    g.op("RESHAPE", [b, shape], [c], options("ReshapeOptions", newShape=[10, 10]))
    g.op("TANH", [c], [y])
    return g.build([y])


def test_a_chain_is_planned_as_worked_out_by_hand_and_as_litert_lays_it_out():
    data = concat_chain()
    plan = plan_memory(data)
    # By hand, TFLite's rules: x (graph input: whole run) at 0; then by size, largest first: y[3,end) after
    # x at align(40) = 64; b[1,2] overlaps x only (y starts at node 3): 64; c[2,3] overlaps x, y and b:
    # after y's end, 384; a[0,1] overlaps x and b: after b's end 224, aligned 256. The arena ends at c's
    # end, 384 + 160 = 544; the tensors add up to 40 + 80 + 160 + 160 + 320 = 760.
    assert (plan.activations_bytes, plan.activations_sum_bytes) == (544, 760)
    layout = arena_layout(data)
    offsets = {life.index: life.offset for life in layout.tensors}
    assert offsets == {0: 0, 4: 64, 2: 64, 3: 384, 1: 256}
    real, top, added = real_arena(data, arena_tensors(data))
    assert added == 0  # no kernel of this graph adds temporaries: the file says everything
    assert real == offsets and top == plan.activations_bytes


def test_outputs_written_in_place_take_no_room_of_their_own():
    data = in_place_chain()
    layout = arena_layout(data)
    # ADD writes b over a (a has no other reader, same size); RESHAPE writes c over b, so over a: a lives
    # from node 0 to the TANH that reads c, node 3. x at 0, a at align(400) = 448, y after a at 896.
    assert dict(layout.shared) == {3: 1, 5: 1}  # tensors: x 0, a 1, k 2, b 3, shape 4, c 5, y 6
    assert {life.index: life.offset for life in layout.tensors} == {0: 0, 1: 448, 6: 896}
    assert layout.size_bytes == 1296
    a = next(life for life in layout.tensors if life.index == 1)
    assert (a.first_node, a.last_node, a.shared_by) == (0, 3, (3, 5))
    real, top, added = real_arena(data, arena_tensors(data))
    assert added == 0
    assert real[3] == real[5] == real[1] == 448 and real[6] == 896 and top == 1296


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_the_bundled_models_arena_is_litert_s_but_where_kernels_add_temporaries(path: Path):
    data = path.read_bytes()
    plan = plan_memory(data)
    graph = read_graph(data)
    layout = arena_layout(data)
    mine = {life.index: life.offset for life in layout.tensors if life.bytes}
    real, top, added = real_arena(data, set(mine))
    # Measured: the same arena size, and every tensor where LiteRT puts it but the MEAN's output, whose
    # place the MEAN kernel's own temporaries (reduce.cc: 4 tensors the file does not hold) took.
    assert added > 0
    assert top == plan.activations_bytes
    moved = {i for i in mine if real[i] != mine[i]}
    mean_outputs = {t for node in graph.nodes if node.op == "MEAN" for t in node.outputs}
    assert moved <= mean_outputs, moved


def check_invariants(data: bytes, plan: MemoryPlan) -> None:
    assert plan.weights_bytes == constant_buffer_bytes(data)
    assert 0 < plan.activations_bytes <= plan.activations_sum_bytes
    graph = read_graph(data)
    sizes = [t.bytes for t in plan.largest]
    assert sizes == sorted(sizes, reverse=True) and len(plan.largest) == min(5, len(plan.largest))
    for t in plan.largest:
        assert 0 <= t.first_node <= t.last_node < len(graph.nodes)
        assert t.offset % ALIGNMENT == 0 and t.offset + t.bytes <= plan.activations_bytes
        assert t.last_op == graph.nodes[t.last_node].op
        assert t.first_op == ("graph input" if t.index in graph.inputs else graph.nodes[t.first_node].op)
    as_json = plan.to_dict()
    assert json.loads(json.dumps(as_json)) == as_json
    assert len(plan.lines()) >= 3 + len(plan.largest)


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_bundled_models_weights_and_activations(path: Path):
    data = path.read_bytes()
    plan = plan_memory(data)
    check_invariants(data, plan)
    # EfficientNet-Lite0's largest activation: block 1's expansion (112x112x96), from its CONV_2D to the
    # DEPTHWISE_CONV_2D that reads it
    top = plan.largest[0]
    item = 4 if path.stem == "efficientnet_lite0" else 1
    assert top.bytes == 112 * 112 * 96 * item and (top.first_op, top.last_op) == ("CONV_2D", "DEPTHWISE_CONV_2D")


def test_fixture_models_weights_and_activations(coral: Path, vision: Path):
    models = sorted(coral.glob("*.tflite")) + sorted(vision.glob("*.tflite"))
    assert models
    for path in models:
        data = path.read_bytes()
        check_invariants(data, plan_memory(data))


def test_each_delegate_s_copy_is_predicted_or_said_not_reported():
    floats, int8 = (plan_memory(p.read_bytes()) for p in BUNDLED)
    for plan in (floats, int8):
        by = {d.delegate: d for d in plan.delegates}
        assert set(by) == {Delegate.CPU, Delegate.GPU, Delegate.COREML}
        assert by[Delegate.COREML].bytes is None and by[Delegate.COREML].status == "not reported"
        xnnpack = by[Delegate.CPU].bytes
        # every weight of EfficientNet-Lite0 belongs to a convolution or the classifier's dense layer
        assert xnnpack is not None and 0.95 * plan.weights_bytes <= xnnpack <= plan.weights_bytes
        assert all(d.status == "predicted" for d in plan.delegates if d.bytes is not None)
        text = plan.lines()
        assert any(line.startswith("Core ML") and "not reported" in line for line in text)
        assert any(line.startswith("XNNPACK") and "predicted" in line for line in text)
    gpu16 = next(d for d in floats.delegates if d.delegate == Delegate.GPU).bytes
    gpu32 = next(d for d in plan_memory(BUNDLED[0].read_bytes(), gpu_fp16=False).delegates if d.delegate == "gpu").bytes
    assert gpu16 is not None and gpu32 == 2 * gpu16
    assert gpu32 == pytest.approx(floats.weights_bytes, rel=0.01)  # float32 weights held as float32
    int8_gpu = next(d for d in int8.delegates if d.delegate == Delegate.GPU).bytes
    assert int8_gpu == pytest.approx(gpu16, rel=0.01)  # int8 weights read as float, held at fp16: the same


def test_a_delegate_s_copy_follows_the_nodes_it_takes():
    data = BUNDLED[0].read_bytes()
    graph = read_graph(data)
    none = plan_memory(data, delegated={Delegate.CPU: (), Delegate.GPU: ()})
    assert [(d.bytes, d.nodes) for d in none.delegates[:2]] == [(0, 0), (0, 0)]
    convs = [n.index for n in graph.nodes if n.op == "CONV_2D"]
    some = {d.delegate: d for d in plan_memory(data, delegated={Delegate.CPU: convs}).delegates}
    every = {d.delegate: d for d in plan_memory(data).delegates}
    cpu_some, cpu_every = some[Delegate.CPU].bytes, every[Delegate.CPU].bytes
    assert cpu_some is not None and cpu_every is not None and 0 < cpu_some < cpu_every
    assert "no coverage given" in every[Delegate.CPU].rule and f"the {len(convs)} nodes" in some[Delegate.CPU].rule


def test_a_float16_model_s_weights_are_unpacked_for_xnnpack():
    """A DEQUANTIZE of float16 weights: TFLite keeps its float32 result in the persistent arena, XNNPACK
    unpacks it once and packs it again for the FULLY_CONNECTED."""
    g = GraphBuilder()
    x = g.input((1, 64))
    w16 = g.const(np.ones((32, 64)), "float16")
    w = g.tensor((32, 64))
    y = g.tensor((1, 32))
    g.op("DEQUANTIZE", [w16], [w])
    g.op("FULLY_CONNECTED", [x, w, -1], [y], options("FullyConnectedOptions"))
    data = g.build([y])
    plan = plan_memory(data)
    assert plan.weights_bytes == 32 * 64 * 2
    assert plan.persistent_bytes == 32 * 64 * 4
    assert plan.activations_sum_bytes == 64 * 4 + 32 * 4  # the dequantized weights are not activations
    xnnpack = next(d for d in plan.delegates if d.delegate == Delegate.CPU)
    assert xnnpack.bytes == 2 * 32 * 64 * 4  # the unpacked float32 copy and the packed one
