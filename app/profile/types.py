"""A per-op profile of one model on one delegate: typed rows, the tables built from them, JSON both ways."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Placement(StrEnum):
    ACCELERATOR = "accelerator"  # inside a delegated partition (XNNPACK on the CPU backend, a GPU partition)
    CPU = "cpu"  # off the accelerator: LiteRT's built-in CPU kernels (or, next to a GPU, XNNPACK on the CPU)


class TimeSource(StrEnum):
    RUNTIME = "runtime profiler"  # LiteRT's own events for this op
    CPU_PROFILE = "CPU profile"  # the same node's time in the runtime's CPU profile of the same model
    DIFFERENCE = "by difference"  # the whole run, measured, minus the ops timed on the CPU
    ESTIMATE = "estimated cost"  # Core ML's MLComputePlan estimated share times the measured prediction
    NOT_REPORTED = "not reported"  # the runtime's profiler cannot take the model: where it ran, not how long


@dataclass(frozen=True)
class OpTime:
    order: int  # run order
    node: int | None  # the TFLite node index; None: an operator the delegate added (or not reported)
    op: str  # the TFLite op ("CONV_2D"), or what the row stands for ("GPU partition 0")
    kernel: str  # the runtime's own name for what ran ("Fully Connected (NC, F32) GEMM", "SOFTMAX")
    placement: Placement
    partition: int | None  # delegated partition, in execution order from 0; None off the accelerator
    # Per run: the least-disturbed of the profiled runs where the runtime timed each op (the CPU profile,
    # `least_disturbed`), else the mean (a GPU partition by difference: with the CPU ops' means, the whole run).
    ms: float
    source: TimeSource
    nodes: tuple[int, ...] = ()  # for a row that stands for several nodes (a GPU partition)
    median_ms: float | None = None  # per run, the median: what ranks the top ops (a preempted run moves a mean)
    mean_ms: float | None = None  # per run, the mean, beside a least-disturbed `ms`: waits for the CPU included


@dataclass(frozen=True)
class Segment:
    """A run of consecutive ops in one place: a delegated partition or the CPU ops between two."""

    placement: Placement
    partition: int | None
    first_node: int | None
    last_node: int | None
    ops: int
    ms: float


@dataclass(frozen=True)
class Profile:
    model: str
    requested: str  # the delegate asked for
    used: str  # the delegate that ran ("cpu" after a fallback)
    accelerator: str  # what the accelerator is, in words ("XNNPACK (CPU, 1 thread)", "GPU: <adapter>")
    threads: int
    runs: int
    ops: tuple[OpTime, ...]
    invoke_ms: float | None  # the runtime's own Invoke span per run (least-disturbed or mean, as `ms`), if reported
    wall_ms: float  # one run measured around the call (least-disturbed or mean, as `ms`)
    fallback_reason: str | None = None
    not_reported: tuple[str, ...] = ()  # what the runtime does not give, in words
    notes: tuple[str, ...] = ()
    # Nodes inside a delegated partition with no operator of their own (the delegate fused them into a
    # neighbour's, e.g. an activation into its convolution): (node, op). With the rows, every node is placed.
    fused: tuple[tuple[int, str], ...] = ()
    per_run_ms: tuple[tuple[float, ...], ...] = field(default=(), repr=False)  # op times per run (profiler runs)
    per_run_invoke_ms: tuple[float, ...] = field(default=(), repr=False)  # the runtime's Invoke span of each run
    # CPU profiles (`profile` and the Ops view alike): op times, Invoke and the measured run are each one's
    # least-disturbed run (the minimum over the runs), the means beside them; cpu_share says how much of
    # their wall time the runs had the CPU (None: not measured).
    least_disturbed: bool = False
    cpu_share: float | None = None
    invoke_mean_ms: float | None = None
    wall_mean_ms: float | None = None

    @classmethod
    def on_cpu(cls, model: str, threads: int, ops: tuple[OpTime, ...], **fields: Any) -> Profile:
        """A profile on the CPU backend: XNNPACK's when any op ran in one of its partitions, LiteRT's
        built-in kernels' otherwise (the CPU profile, or the places alone when LiteRT's profiler cannot
        take the model)."""
        xnnpack = any(op.placement is Placement.ACCELERATOR for op in ops)
        plural = "s" if threads != 1 else ""
        accelerator = f"{'XNNPACK (CPU' if xnnpack else 'LiteRT built-in kernels (CPU'}, {threads} thread{plural})"
        return cls(model=model, requested="cpu", used="cpu", accelerator=accelerator, threads=threads, ops=ops,
                   **fields)  # fmt: skip

    @property
    def ops_over_invoke(self) -> float | None:
        """The ops' sum over the runtime's Invoke span, run by run, median: how much of each run the ops
        account for, unmoved by a run preempted between two ops (which a ratio of means is not)."""
        if not self.per_run_invoke_ms or len(self.per_run_invoke_ms) != len(self.per_run_ms):
            return None
        ratios = sorted(sum(ops) / inv for ops, inv in zip(self.per_run_ms, self.per_run_invoke_ms, strict=True) if inv)
        return ratios[len(ratios) // 2] if ratios else None

    # --- derived tables -------------------------------------------------------------------------

    @property
    def ops_ms(self) -> float:
        return sum(op.ms for op in self.ops)

    @property
    def ops_mean_ms(self) -> float | None:
        """The ops' means summed, beside a least-disturbed `ops_ms` (None where the rows have no mean)."""
        means = [op.mean_ms for op in self.ops]
        return sum(m for m in means if m is not None) if means and None not in means else None

    def least_and_mean(self, op: OpTime) -> tuple[float | None, float | None]:
        """An op's least-disturbed and mean time per run, as far as the profile has them: a least-disturbed
        profile's `ms` is the least (its mean beside it), any other's `ms` is the mean."""
        return (op.ms, op.mean_ms) if self.least_disturbed else (None, op.ms)

    def share(self, op: OpTime) -> float:
        total = self.ops_ms
        return op.ms / total if total > 0 else 0.0

    def top(self, n: int = 10) -> list[OpTime]:
        """The n slowest ops, by median where the runtime timed each run (robust on a busy machine), else by mean."""
        return sorted(self.ops, key=lambda op: (-(op.median_ms if op.median_ms is not None else op.ms), op.order))[:n]

    def by_type(self) -> list[tuple[str, int, float]]:
        """(op type, count, total ms), largest first; an op the delegate added counts under its kernel."""
        totals: dict[str, list[float]] = defaultdict(list)
        for op in self.ops:
            totals[op.op if op.node is not None or not op.kernel else op.kernel].append(op.ms)
        rows = [(name, len(times), sum(times)) for name, times in totals.items()]
        return sorted(rows, key=lambda r: -r[2])

    def off_accelerator(self) -> list[OpTime]:
        return [op for op in self.ops if op.placement is Placement.CPU]

    @property
    def off_accelerator_ms(self) -> float:
        return sum(op.ms for op in self.off_accelerator())

    def segments(self) -> list[Segment]:
        """Consecutive ops grouped by where they ran: the partition boundaries in run order."""
        out: list[Segment] = []
        for op in self.ops:
            nodes = op.nodes or ((op.node,) if op.node is not None else ())
            key = (op.placement, op.partition)
            if out and (out[-1].placement, out[-1].partition) == key:
                last = out[-1]
                out[-1] = Segment(
                    last.placement,
                    last.partition,
                    last.first_node if last.first_node is not None else (min(nodes) if nodes else None),
                    max(nodes) if nodes else last.last_node,
                    last.ops + 1,
                    last.ms + op.ms,
                )
            else:
                lo, hi = (min(nodes), max(nodes)) if nodes else (None, None)
                out.append(Segment(op.placement, op.partition, lo, hi, 1, op.ms))
        return out

    # --- JSON ----------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("per_run_ms")
        d.pop("per_run_invoke_ms")
        d["ops_over_invoke"] = self.ops_over_invoke
        d["ops_ms"] = self.ops_ms
        d["ops_mean_ms"] = self.ops_mean_ms
        d["off_accelerator_ms"] = self.off_accelerator_ms
        d["off_accelerator_share"] = self.off_accelerator_ms / self.ops_ms if self.ops_ms > 0 else 0.0
        d["top"] = [op.order for op in self.top(5)]
        d["by_type"] = [{"op": name, "count": count, "ms": ms} for name, count, ms in self.by_type()]
        d["segments"] = [asdict(s) for s in self.segments()]
        d["fused"] = [{"node": node, "op": op} for node, op in self.fused]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Profile:
        """Back from to_dict() (a recording's profile sidecar). Raises TypeError/ValueError/KeyError when malformed."""
        ops = tuple(
            OpTime(
                order=int(o["order"]),
                node=None if o["node"] is None else int(o["node"]),
                op=str(o["op"]),
                kernel=str(o["kernel"]),
                placement=Placement(o["placement"]),
                partition=None if o["partition"] is None else int(o["partition"]),
                ms=float(o["ms"]),
                source=TimeSource(o["source"]),
                nodes=tuple(int(n) for n in o.get("nodes") or ()),
                median_ms=None if o.get("median_ms") is None else float(o["median_ms"]),
                mean_ms=None if o.get("mean_ms") is None else float(o["mean_ms"]),
            )
            for o in d["ops"]
        )
        return cls(
            model=str(d["model"]),
            requested=str(d["requested"]),
            used=str(d["used"]),
            accelerator=str(d["accelerator"]),
            threads=int(d["threads"]),
            runs=int(d["runs"]),
            ops=ops,
            invoke_ms=None if d.get("invoke_ms") is None else float(d["invoke_ms"]),
            wall_ms=float(d["wall_ms"]),
            fallback_reason=d.get("fallback_reason"),
            not_reported=tuple(str(s) for s in d.get("not_reported") or ()),
            notes=tuple(str(s) for s in d.get("notes") or ()),
            least_disturbed=bool(d.get("least_disturbed", False)),
            cpu_share=None if d.get("cpu_share") is None else float(d["cpu_share"]),
            invoke_mean_ms=None if d.get("invoke_mean_ms") is None else float(d["invoke_mean_ms"]),
            wall_mean_ms=None if d.get("wall_mean_ms") is None else float(d["wall_mean_ms"]),
            fused=tuple((int(f["node"]), str(f["op"])) for f in d.get("fused") or ()),
        )
