"""Which nodes to cut, and each cut's row: every node (`ALL`), or a bisection for the first node whose
error crosses the threshold, then every node in a window around it and a few cuts from there to the
outputs (`SEARCH`), the trade-off measured in docs/numerics.md.

The bisection assumes what LiteRT's culprit finder assumes: once a node's error crosses the threshold,
the nodes after it stay across (an fp16 overflow propagates). It is checked, not trusted: the first
breaking node is, under every mode, the first measured row that crosses the threshold (the rule that
marks the rows), so a measured row before the node the bisection finds, or one that crosses though the
outputs do not, is the first (said in a note, its window measured too); `ALL` measures every node."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np

from app.numerics.cuts import Cut, CutModel, Uncut
from app.numerics.metrics import ErrorStats, Threshold, dequantized, error_stats
from app.numerics.runners import CutRefused, DelegateCuts, InputSet, ReferenceTensors


class Mode(StrEnum):
    SEARCH = "search"  # bisection, a window around the first breaking node, its growth to the outputs
    ALL = "all"  # every node


DEFAULT_WINDOW = 3  # nodes each side of the first breaking one
DEFAULT_GROWTH = 6  # cuts from the first breaking node to the outputs (the last node always among them)


@dataclass(frozen=True)
class NodeError:
    """One node's row: the error of its tensors on the delegate against the reference's, or why there is none."""

    node: int
    op: str
    tensors: tuple[str, ...]  # the node's output tensors compared (its cut's outputs)
    shape: tuple[int, ...]  # the first one's
    dtype: str  # the first one's (integer tensors are compared dequantized)
    stats: ErrorStats | None  # None: not cut, or the delegate refused the cut (`not_run` says which)
    breaks: bool = False
    why: str | None = None  # what crossed the threshold
    not_run: str | None = None
    on_delegate: bool | None = None  # every node of the cut ran on the delegate (False: some on its CPU kernels)
    cut_nodes: int = 0  # nodes in the cut (the prefix the node needs)
    compile_s: float = 0.0
    run_s: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node,
            "op": self.op,
            "tensors": list(self.tensors),
            "shape": list(self.shape),
            "dtype": self.dtype,
            "error": self.stats.to_dict() if self.stats is not None else None,
            "breaks": self.breaks,
            "why": self.why,
            "not_run": self.not_run,
            "on_delegate": self.on_delegate,
            "cut_nodes": self.cut_nodes,
            "compile_s": round(self.compile_s, 3),
            "run_s": round(self.run_s, 3),
        }

    @classmethod
    def from_dict(cls, d: dict) -> NodeError:
        """Back from to_dict() (a stored `numerics --json`, read by the session report)."""
        error = d.get("error")
        return cls(
            node=int(d["node"]),
            op=str(d["op"]),
            tensors=tuple(str(t) for t in d.get("tensors") or ()),
            shape=tuple(int(x) for x in d.get("shape") or ()),
            dtype=str(d.get("dtype", "")),
            stats=ErrorStats.from_dict(error) if isinstance(error, dict) else None,
            breaks=bool(d.get("breaks")),
            why=d.get("why"),
            not_run=d.get("not_run"),
            on_delegate=d.get("on_delegate"),
            cut_nodes=int(d.get("cut_nodes", 0)),
            compile_s=float(d.get("compile_s", 0.0)),
            run_s=float(d.get("run_s", 0.0)),
        )


@dataclass(frozen=True)
class ScanCost:
    cuts_compiled: int  # cuts the delegate was asked to compile (refused ones included)
    cuts_refused: int
    compile_s: float  # the delegate's compiles, all cuts
    run_s: float  # the delegate's runs, all cuts and input sets
    seconds: float  # the scan's wall time (cutting and comparing included)

    def to_dict(self) -> dict[str, object]:
        return {
            "cuts_compiled": self.cuts_compiled,
            "cuts_refused": self.cuts_refused,
            "compile_s": round(self.compile_s, 3),
            "run_s": round(self.run_s, 3),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Scan:
    mode: Mode
    rows: tuple[NodeError, ...]  # execution order: the nodes measured, and the uncut nodes among them
    first_breaking: int | None  # the node; None when no measured node crosses the threshold
    output_breaks: bool  # the last cut (the outputs' node) crosses the threshold
    notes: tuple[str, ...]
    cost: ScanCost
    cuttable: int  # cuts: the nodes a cut can end after (and the model's outputs, when no one node writes them all)
    nodes: int  # nodes in the model
    uncut: tuple[Uncut, ...] = ()  # every node no cut ends after, with why (the rows show those in their span)

    def row(self, node: int) -> NodeError | None:
        return next((r for r in self.rows if r.node == node), None)


class _Measured:
    """The rows measured so far, by cut position: each cut runs on the delegate once, however often the
    phases of a scan ask for it, and is reported (`on_row`) as it is measured."""

    def __init__(self, run: Callable[[int], NodeError], on_row: Callable[[NodeError], None] | None) -> None:
        self._run = run
        self._on_row = on_row
        self.rows: dict[int, NodeError] = {}
        self.refused = 0

    def __call__(self, position: int) -> NodeError:
        if position not in self.rows:
            row = self._run(position)
            self.refused += row.not_run is not None
            self.rows[position] = row
            if self._on_row is not None:
                self._on_row(row)
        return self.rows[position]


def scan(
    model: CutModel,
    runner: DelegateCuts,
    reference: ReferenceTensors,
    sets: Sequence[InputSet],
    shapes: Sequence[tuple[int, ...]],
    threshold: Threshold,
    mode: Mode = Mode.SEARCH,
    window: int = DEFAULT_WINDOW,
    growth: int = DEFAULT_GROWTH,
    on_row: Callable[[NodeError], None] | None = None,
) -> Scan:
    """Rows for the cuts `mode` picks; `sets` are the model's input sets (model order), `shapes` its inputs'."""
    started = time.perf_counter()
    cuts = model.cuts
    measure = _Measured(lambda p: _measure(model, cuts[p], runner, reference, sets, shapes, threshold), on_row)
    if not cuts:
        return Scan(
            mode,
            _with_uncut(model, [], None),
            None,
            False,
            ("no node of this model can be cut",),
            ScanCost(0, 0, 0.0, 0.0, time.perf_counter() - started),
            0,
            len(model.graph.nodes),
            model.uncut,
        )
    last = len(cuts) - 1
    notes: list[str] = []
    shown = None
    if mode == Mode.ALL:
        for position in range(len(cuts)):
            measure(position)
    else:
        shown, notes = _search(measure, cuts, window, growth)
    output = measure(last)
    first = _first_breaking(measure.rows)  # the outputs' row counts too (measured first by the search)
    if output.not_run is not None:
        notes.append(f"the outputs' node {output.node} could not be run on the delegate: {output.not_run}")
    elif not output.breaks and first is None:
        notes.append(
            f"no node crosses the threshold at the outputs ({threshold.describe()})"
            + ("; the bisection looks no further: --all measures every node" if mode == Mode.SEARCH else "")
        )
    rows = [measure.rows[p] for p in sorted(measure.rows)]
    compile_s = sum(r.compile_s for r in rows)
    run_s = sum(r.run_s for r in rows)
    cost = ScanCost(len(rows), measure.refused, compile_s, run_s, time.perf_counter() - started)
    return Scan(
        mode=mode,
        rows=_with_uncut(model, rows, shown if mode == Mode.SEARCH else (0, len(model.graph.nodes) - 1)),
        first_breaking=cuts[first].node if first is not None else None,
        output_breaks=output.breaks,
        notes=tuple(notes),
        cost=cost,
        cuttable=len(cuts),
        nodes=len(model.graph.nodes),
        uncut=model.uncut,
    )


def _search(
    measure: _Measured, cuts: Sequence[Cut], window: int, growth: int
) -> tuple[tuple[int, int] | None, list[str]]:
    """`SEARCH`'s cuts measured: the node span its rows show (None when nothing crosses the threshold) and
    the notes that say where the error is not monotone, so the bisection's answer was overruled."""
    last = len(cuts) - 1
    # The bisection proposes; the measured rows decide. A row before the proposal that crosses (the error
    # is not monotone) is the first breaking node, by the one rule the rows are marked by, and its window
    # is measured in turn, until no measured row before the first crosses.
    found = _bisect(measure, last)
    first = found
    while True:
        if first is None:
            picked = _spread(0, last, growth + 1)
        else:
            picked = sorted(
                set(range(max(0, first - window), min(last, first + window) + 1)) | set(_spread(first, last, growth))
            )
        for position in picked:
            measure(position)
        earliest = _first_breaking(measure.rows)
        if earliest is None or earliest == first:
            break
        first = earliest
    if first is None:
        return None, []
    notes = []
    if found is None:
        notes.append(
            f"node {cuts[first].node} crosses the threshold though the outputs do not: the error is not "
            "monotone here, so the bisection had nothing to search; --all measures every node"
        )
    elif first != found:
        notes.append(
            f"node {cuts[first].node} crosses the threshold before node {cuts[found].node}, the one the "
            "bisection found: the error is not monotone here; --all measures every node"
        )
    return (cuts[max(0, first - window)].node, cuts[min(last, first + window)].node), notes


def _first_breaking(measured: dict[int, NodeError]) -> int | None:
    """The first cut position, in execution order, whose measured row crosses the threshold: the one
    definition of "the first breaking node", under every mode (a row's `breaks` is Threshold.breaks)."""
    return next((p for p in sorted(measured) if measured[p].breaks), None)


def _bisect(measure: Callable[[int], NodeError], last: int) -> int | None:
    """The first cut position whose row crosses the threshold, if the last one's does; cuts the delegate
    refuses are stepped over (to the next runnable one inside the bracket)."""
    if not measure(last).breaks:
        return None
    lo, hi = -1, last  # lo: known not to cross (-1: the inputs), hi: known to cross
    while hi - lo > 1:
        mid = (lo + hi) // 2
        probe = next((p for p in [*range(mid, hi), *range(mid - 1, lo, -1)] if measure(p).not_run is None), None)
        if probe is None:
            break  # nothing between runs on the delegate: hi is the first we can tell
        if measure(probe).breaks:
            hi = probe
        else:
            lo = probe
    return hi


def _spread(start: int, stop: int, count: int) -> list[int]:
    """`count` positions from start to stop, both included, evenly apart."""
    if count <= 1 or stop <= start:
        return [stop]
    return sorted({round(float(x)) for x in np.linspace(start, stop, count)})


def _with_uncut(model: CutModel, rows: list[NodeError], span: tuple[int, int] | None) -> tuple[NodeError, ...]:
    """The measured rows and, inside `span` (nodes), the nodes no cut ends after, with why: in execution order."""
    extra = []
    if span is not None:
        for u in model.uncut:
            if span[0] <= u.node <= span[1]:
                extra.append(NodeError(u.node, u.op, (), (), "", None, not_run=f"not cut: {u.reason}"))
    return tuple(sorted([*rows, *extra], key=lambda r: r.node))


def _measure(
    model: CutModel,
    cut: Cut,
    runner: DelegateCuts,
    reference: ReferenceTensors,
    sets: Sequence[InputSet],
    shapes: Sequence[tuple[int, ...]],
    threshold: Threshold,
) -> NodeError:
    base = NodeError(cut.node, cut.op, cut.names, cut.shapes[0], cut.dtypes[0], None, cut_nodes=len(cut.nodes))
    cut_shapes = [shapes[i] for i in cut.inputs]
    cut_sets = [[inputs[i] for i in cut.inputs] for inputs in sets]
    try:
        out = runner.run(model.prefix(cut), cut_shapes, cut_sets)
    except CutRefused as exc:
        return replace(base, not_run=str(exc))
    ours: list[np.ndarray] = []
    theirs: list[np.ndarray] = []
    for k, produced in enumerate(out.outputs):
        for t, value in zip(cut.outputs, produced, strict=True):
            q = model.quantization(t)
            ours.append(dequantized(value, q))
            theirs.append(dequantized(reference.tensors[k][t], q))
    try:
        stats = error_stats(ours, theirs)
    except ValueError as exc:
        return replace(
            base, not_run=f"not compared: {exc}", on_delegate=out.on_delegate, compile_s=out.compile_s, run_s=out.run_s
        )
    return replace(
        base,
        stats=stats,
        breaks=threshold.breaks(stats),
        why=threshold.why(stats),
        on_delegate=out.on_delegate,
        compile_s=out.compile_s,
        run_s=out.run_s,
    )
