"""A profile as Google AI Edge Model Explorer node data: per-op latency to overlay on the model's graph
(the format and the node ids: app/tflite/model_explorer.py). Rows that stand for no single node (a GPU
partition, an operator XNNPACK added) have no node to carry them and are left out; `skipped` says how many
and how much time.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.profile.types import Profile
from app.tflite import model_explorer
from app.tflite.model_explorer import GREEN, ORANGE, RED, YELLOW

_GRADIENT = ((0, GREEN), (0.33, YELLOW), (0.67, ORANGE), (1, RED))  # fast to slow


@dataclass(frozen=True)
class NodeData:
    data: dict
    skipped_rows: int
    skipped_ms: float


def node_data(profile: Profile) -> NodeData:
    values: dict[int, float] = {}
    skipped_rows, skipped_ms = 0, 0.0
    for op in profile.ops:
        if op.node is None:
            skipped_rows += 1
            skipped_ms += op.ms
            continue
        values[op.node] = values.get(op.node, 0.0) + op.ms
    data = model_explorer.node_data(
        f"{profile.model} on {profile.used}: ms per op (delegate-scope profile)",
        {node: round(ms, 6) for node, ms in values.items()},
        _GRADIENT,
    )
    return NodeData(data, skipped_rows, skipped_ms)
