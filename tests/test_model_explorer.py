"""Model Explorer node data, made in one place (app/tflite/model_explorer.py) for the profile's and numerics'
exports: Model Explorer's GraphNodeData with node ids the TFLite operator indices as strings."""

from __future__ import annotations

import json

from app.tflite.model_explorer import GREEN, RED, YELLOW, node_data


def test_graph_node_data_as_model_explorer_reads_it():
    data = node_data("m on cpu: ms per op", {3: 0.5, 0: 1.25}, ((0, GREEN), (0.5, YELLOW), (1, RED)))
    assert json.dumps(data) == (
        '{"name": "m on cpu: ms per op", "results": {"3": {"value": 0.5}, "0": {"value": 1.25}}, '
        '"gradient": [{"stop": 0, "bgColor": "#e8f5e9"}, {"stop": 0.5, "bgColor": "#fff59d"}, '
        '{"stop": 1, "bgColor": "#e53935"}]}'
    )
