"""Node data for Google AI Edge Model Explorer: one value per node of a .tflite graph, to overlay on it (the
profile's latency per op, numerics' SNR per node; both exports are made here).

The format is Model Explorer's `GraphNodeData` (model_explorer/node_data_builder.py in
google-ai-edge/model-explorer): {"name", "results": {node id: {"value": v}}, "gradient": [...]}.
Without a graph id at the top, Model Explorer applies it to the graph on screen
(node_data_provider_extension_service.ts). Its TFLite adapter names each node by its operator index
in the subgraph (direct_flatbuffer_to_json_graph_convert.cc: node_ids = StrCat(i)), which is the
node index here. Model Explorer spreads the gradient's stops over the values' range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The colours both exports grade with, from good to bad.
GREEN, YELLOW, ORANGE, RED = "#e8f5e9", "#fff59d", "#ffb74d", "#e53935"


def node_data(name: str, values: Mapping[int, float], gradient: Sequence[tuple[float, str]]) -> dict[str, Any]:
    """`values`: node index -> value, in the order they are to be written; `gradient`: (stop, colour) from 0 to 1."""
    return {
        "name": name,
        "results": {str(node): {"value": value} for node, value in values.items()},
        "gradient": [{"stop": stop, "bgColor": colour} for stop, colour in gradient],
    }
