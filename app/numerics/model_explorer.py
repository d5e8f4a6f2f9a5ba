"""A numerics table as Google AI Edge Model Explorer node data: each node's SNR against the reference, to
overlay on the model's graph (the format and the node ids: app/tflite/model_explorer.py).

The value is the SNR in dB, the figure that falls as the error grows: a node whose values went inf or NaN
on the delegate gets 0 (the worst), an exact one SNR_CAP. Rows without figures (a node not cut, a cut the
delegate refused) and the extra row of the model's outputs have no value; `skipped` counts them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.numerics.cuts import OUTPUTS
from app.numerics.scan import Scan
from app.tflite import model_explorer
from app.tflite.model_explorer import GREEN, ORANGE, RED, YELLOW

SNR_CAP = 150.0  # dB: past float32's own resolution (an exact match, or 24-bit mantissas agreeing)
_GRADIENT = ((0, RED), (0.2, ORANGE), (0.4, YELLOW), (1, GREEN))  # low SNR red, high green


@dataclass(frozen=True)
class NumericsNodeData:
    data: dict
    skipped: int  # rows with no value on a node


def node_data(scan: Scan, title: str) -> NumericsNodeData:
    """`title`: what was compared, e.g. "efficientnet_lite0: gpu fp16 against cpu"."""
    values: dict[int, float] = {}
    skipped = 0
    for row in scan.rows:
        if row.stats is None or row.op == OUTPUTS:
            skipped += 1
            continue
        if row.stats.nonfinite or row.stats.values == 0:
            value = 0.0
        else:
            value = min(row.stats.snr_db, SNR_CAP) if not math.isnan(row.stats.snr_db) else 0.0
        values[row.node] = round(max(value, 0.0), 3)
    data = model_explorer.node_data(
        f"{title}: SNR dB per node (delegate-scope numerics; 0: inf/NaN on the delegate)", values, _GRADIENT
    )
    return NumericsNodeData(data, skipped)
