"""A profile as Google AI Edge Model Explorer node data: per-op latency to overlay on the model's graph.

The format is Model Explorer's `GraphNodeData` (model_explorer/node_data_builder.py in
google-ai-edge/model-explorer): {"name", "results": {node id: {"value": ms}}, "gradient": [...]}.
Without a graph id at the top, Model Explorer applies it to the graph on screen
(node_data_provider_extension_service.ts). Its TFLite adapter names each node by its operator index
in the subgraph (direct_flatbuffer_to_json_graph_convert.cc: node_ids = StrCat(i)), which is the
node index here. Rows that stand for no single node (a GPU partition, an operator XNNPACK added)
have no node to carry them and are left out; `skipped` says how many and how much time.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.profile.types import Profile

_GRADIENT = [
    {"stop": 0, "bgColor": "#e8f5e9"},
    {"stop": 0.33, "bgColor": "#fff59d"},
    {"stop": 0.67, "bgColor": "#ffb74d"},
    {"stop": 1, "bgColor": "#e53935"},
]


@dataclass(frozen=True)
class NodeData:
    data: dict
    skipped_rows: int
    skipped_ms: float


def node_data(profile: Profile) -> NodeData:
    values: dict[str, float] = {}
    skipped_rows, skipped_ms = 0, 0.0
    for op in profile.ops:
        if op.node is None:
            skipped_rows += 1
            skipped_ms += op.ms
            continue
        key = str(op.node)
        values[key] = values.get(key, 0.0) + op.ms
    data = {
        "name": f"{profile.model} on {profile.used}: ms per op (delegate-scope profile)",
        "results": {key: {"value": round(ms, 6)} for key, ms in values.items()},
        "gradient": _GRADIENT,
    }
    return NodeData(data, skipped_rows, skipped_ms)
