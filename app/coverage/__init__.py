"""What each delegate takes of a model, node by node: measured from a runtime or predicted from its rules.

`Coverage` is one delegate's answer for one model: which nodes it takes, in how
many partitions, and for every node it leaves, why in words. CPU coverage is read
from LiteRT after XNNPACK is applied, GPU coverage from LiteRT's GPU accelerator
where an adapter exists, and Core ML coverage is predicted on every OS by
`coreml_rules`, which follows the TFLite Core ML delegate's source rule by rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

CoverageSource = Literal["measured", "predicted", "unavailable"]
# Where `log` comes from: "printed", the runtime printed it in this run (read from its native log);
# "computed", worked out from the measured nodes in the runtime's own format (app/coverage/replacing.py)
# because this build does not print it. A predicted coverage's line is always worked out: no source given.
LogSource = Literal["printed", "computed"]
NOT_REPORTED = "not reported by the runtime"


@dataclass(frozen=True)
class NodeCoverage:
    index: int  # position in the execution plan
    op: str
    version: int
    delegated: bool | None  # None: the runtime does not say
    partition: int | None  # which delegated partition, numbered in execution order from 0; None when not delegated
    reason: str | None  # why it stays on the CPU, or NOT_REPORTED; None when delegated

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Coverage:
    delegate: str  # "cpu", "gpu", "coreml"
    source: CoverageSource
    reason: str | None  # why unavailable, or what the figures rest on
    nodes_total: int
    nodes_delegated: int | None
    partitions: int | None  # partitions of supported nodes found, before any size filter
    delegated_partitions: int | None
    log: str | None  # the delegate's own summary line, word for word, when known
    nodes: tuple[NodeCoverage, ...] = ()
    log_source: LogSource | None = None  # measured coverages' `log`: printed by the runtime or computed

    def to_dict(self) -> dict[str, Any]:
        """Its fields, `log_source` beside `log` and only where there is one (JSON written before it
        existed keeps its bytes)."""
        d = asdict(self)
        source = d.pop("log_source")
        if source is None:
            return d
        items = list(d.items())
        items.insert(list(d).index("log") + 1, ("log_source", source))
        return dict(items)

    @classmethod
    def from_dict(cls, d: dict) -> Coverage:
        nodes = tuple(NodeCoverage(**n) for n in d.get("nodes") or ())
        return cls(**{**d, "nodes": nodes})

    @property
    def left_on_cpu(self) -> list[NodeCoverage]:
        return [n for n in self.nodes if n.delegated is False]

    def summary(self) -> str:
        """One line: 'N of M nodes in P partitions' in the delegate's terms, or why there is none."""
        if self.source == "unavailable":
            return f"unavailable: {self.reason}"
        if self.nodes_delegated is None:
            return f"{self.nodes_total} nodes; which of them are delegated is {NOT_REPORTED}"
        kept = self.delegated_partitions
        found = self.partitions
        text = f"{self.nodes_delegated} of {self.nodes_total} nodes delegated"
        if kept is not None:
            text += f" in {kept} partition{'s' if kept != 1 else ''}"
            if found is not None and found != kept:
                text += f" ({found} found; {found - kept} too small or over the limit stay on the CPU)"
        return text


def _typed(value: object, kinds: tuple[type, ...]) -> bool:
    return value is None or (isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds))


def read_coverage(value: object) -> Coverage | None:
    """A Coverage from a recording's sidecar (untrusted JSON): None when it is absent or malformed."""
    if not isinstance(value, dict):
        return None
    try:
        coverage = Coverage.from_dict(value)
    except (TypeError, ValueError):
        return None
    counts = (coverage.nodes_delegated, coverage.partitions, coverage.delegated_partitions)
    sound = (
        isinstance(coverage.nodes_total, int)
        and all(_typed(v, (int,)) for v in counts)
        and all(_typed(v, (str,)) for v in (coverage.delegate, coverage.source, coverage.reason, coverage.log))
        and coverage.log_source in (None, "printed", "computed")
        and all(
            isinstance(n.index, int)
            and isinstance(n.op, str)
            and _typed(n.version, (int,))
            and _typed(n.delegated, (bool,))
            and _typed(n.partition, (int,))
            and _typed(n.reason, (str,))
            for n in coverage.nodes
        )
    )
    return coverage if sound else None
