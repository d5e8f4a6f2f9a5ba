"""The per-op chart of a report, for recordings that carried a profile.

A recording carries a profile in `<name>.profile.json` beside its CSV: the window writes the Ops
view's last profile there when a recording stops while profiling is on, and
`delegate-scope profile --json > <name>.profile.json` makes one by hand. A profile file that is
absent or malformed is skipped: the report still renders.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from matplotlib.figure import Figure  # no pyplot: no backend or display involved

from app.profile.sidecar import read_profile
from app.profile.types import Placement

TOP = 15
PARTITION_COLOURS = ("#2e7d32", "#1565c0", "#00838f", "#6a1b9a")  # as the window's node strip
CPU_COLOUR = "#c62828"


class _Session(Protocol):
    path: Path
    label: str


def html_figures(sessions: Sequence[_Session]) -> list[tuple[str, bytes, str]]:
    profiled = [(s, p) for s in sessions if (p := read_profile(s.path)) is not None]
    if not profiled:
        return []
    fig = Figure(figsize=(6 * len(profiled), 0.6 + 0.32 * TOP), layout="constrained")
    axes = fig.subplots(1, len(profiled), squeeze=False)
    for ax, (session, profile) in zip(axes[0], profiled, strict=True):
        top = profile.top(TOP)[::-1]
        colours = [
            CPU_COLOUR if op.placement is Placement.CPU else PARTITION_COLOURS[(op.partition or 0) % 4] for op in top
        ]
        labels = [f"{op.op} #{op.node if op.node is not None else '-'}" for op in top]
        ax.barh(range(len(top)), [op.median_ms if op.median_ms is not None else op.ms for op in top], color=colours)
        ax.set_yticks(range(len(top)), labels, fontsize=8)
        ax.set_xlabel("ms per run (median over the profiled runs)")
        off = 100 * profile.off_accelerator_ms / profile.ops_ms if profile.ops_ms > 0 else 0.0
        ax.set_title(
            f"{session.label or session.path.name}\n{profile.used}: off the accelerator {off:.1f}% of the ops' time",
            fontsize=9,
        )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    note = (
        f"The {TOP} slowest ops of each recording that carried a profile (<name>.profile.json), ranked by median per "
        "run; green/blue: a delegated partition, red: off the accelerator. docs/profile.md says where the times "
        "come from."
    )
    return [("Per-op profile", buffer.getvalue(), note)]
