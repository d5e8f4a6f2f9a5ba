"""The numerics table as people read it, one home for the command's text and the session report's HTML."""

from __future__ import annotations

from collections.abc import Sequence

from app.numerics.cuts import OUTPUTS
from app.numerics.scan import NodeError

HEAD = ("node", "op", "shape", "max abs", "mean abs", "cosine", "SNR dB", "on delegate", "breaks")


def cells(row: NodeError) -> tuple[str, ...]:
    """One row's cells, HEAD's columns; a row without figures says why in the fourth cell and leaves the rest empty."""
    node = "out" if row.op == OUTPUTS else str(row.node)
    shape = "x".join(map(str, row.shape)) or "-"
    if row.stats is None:
        return node, row.op, shape, row.not_run or "", "", "", "", "", ""
    max_abs, mean_abs, cosine, snr = row.stats.cells()
    where = {True: "all", False: "partly", None: "?"}[row.on_delegate]
    return node, row.op, shape, max_abs, mean_abs, cosine, snr, where, f"BREAKS: {row.why}" if row.breaks else ""


def text_lines(rows: Sequence[NodeError], caption: str) -> list[str]:
    """The table in fixed-width columns (the command's text output); `caption` closes the head line."""
    out = [
        f"{'node':>5}  {'op':<20} {'shape':<16} {'max abs':>9} {'mean abs':>9} {'cosine':>9} {'SNR dB':>7}  "
        f"{'on delegate':<11}  breaks   ({caption})"
    ]
    for row in rows:
        node, op, shape, max_abs, mean_abs, cosine, snr, where, mark = cells(row)
        if row.stats is None:
            out.append(f"{node:>5}  {op[:20]:<20} {shape[:16]:<16} {max_abs}")
            continue
        out.append(
            f"{node:>5}  {op[:20]:<20} {shape[:16]:<16} {max_abs:>9} {mean_abs:>9} {cosine[:9]:>9} "
            f"{snr:>7}  {where:<11}  {mark}".rstrip()
        )
    return out
