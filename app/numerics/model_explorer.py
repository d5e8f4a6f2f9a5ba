"""A numerics table as Google AI Edge Model Explorer node data: each node's SNR against the reference, to
overlay on the model's graph (the format and the node ids as app/profile/model_explorer.py says: Model
Explorer's TFLite adapter names each node by its operator index, which is the node index here).

The value is the SNR in dB, the figure that falls as the error grows: a node whose values went inf or NaN
on the delegate gets 0 (the worst), an exact one SNR_CAP. Rows without figures (a node not cut, a cut the
delegate refused) and the extra row of the model's outputs have no value; `skipped` counts them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.numerics.cuts import OUTPUTS
from app.numerics.scan import Scan

SNR_CAP = 150.0  # dB: past float32's own resolution (an exact match, or 24-bit mantissas agreeing)
# Low SNR red, high green: Model Explorer spreads the stops over the values' range.
_GRADIENT = [
    {"stop": 0, "bgColor": "#e53935"},
    {"stop": 0.2, "bgColor": "#ffb74d"},
    {"stop": 0.4, "bgColor": "#fff59d"},
    {"stop": 1, "bgColor": "#e8f5e9"},
]


@dataclass(frozen=True)
class NumericsNodeData:
    data: dict
    skipped: int  # rows with no value on a node


def node_data(scan: Scan, title: str) -> NumericsNodeData:
    """`title`: what was compared, e.g. "efficientnet_lite0: gpu fp16 against cpu"."""
    results: dict[str, dict[str, float]] = {}
    skipped = 0
    for row in scan.rows:
        if row.stats is None or row.op == OUTPUTS:
            skipped += 1
            continue
        if row.stats.nonfinite or row.stats.values == 0:
            value = 0.0
        else:
            value = min(row.stats.snr_db, SNR_CAP) if not math.isnan(row.stats.snr_db) else 0.0
        results[str(row.node)] = {"value": round(max(value, 0.0), 3)}
    data = {
        "name": f"{title}: SNR dB per node (delegate-scope numerics; 0: inf/NaN on the delegate)",
        "results": results,
        "gradient": _GRADIENT,
    }
    return NumericsNodeData(data, skipped)
