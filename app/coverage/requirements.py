"""Rules on coverage (`inspect --require`): what a CI job requires of a delegate, checked against the
coverage `inspect` computed.

    DELEGATE:full              every node delegated
    DELEGATE:partitions<=N     delegated partitions compared with N (<=, ==, >=)
    DELEGATE:nodes>=N          delegated nodes compared with N (<=, ==, >=)
    DELEGATE:no-op=OPNAME      no node of op OPNAME left on the CPU by the delegate (a model without one passes)

A coverage that says nothing (a delegate unavailable here, delegation not reported) fails the rule
as "could not be checked": a gate never passes on what it could not see (docs/coverage.md). Nor on
what is not there: a counted rule that would hold of a delegate that takes no node of the model
(0 partitions is "at most 1") fails as holding only vacuously, unless it asks for none (`nodes==0`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.coverage import Coverage, NodeCoverage
from app.system.names import Delegate

# The delegates inspect reports a coverage for (the reference backend has none).
CHECKED_DELEGATES = (Delegate.CPU, Delegate.GPU, Delegate.COREML)
RULE_FORMS = "DELEGATE:full, DELEGATE:partitions<=N, DELEGATE:nodes>=N (<=, == or >=), DELEGATE:no-op=OPNAME"
LINE_NODES = 8  # nodes named on a failed rule's line; the JSON has them all
_CUSTOM = "CUSTOM:"  # the GPU names a custom node CUSTOM:NAME, XNNPACK and Core ML by its name


class RuleKind(StrEnum):
    FULL = "full"
    PARTITIONS = "partitions"
    NODES = "nodes"
    NO_OP = "no-op"


class Comparison(StrEnum):
    AT_MOST = "<="
    EXACTLY = "=="
    AT_LEAST = ">="

    def holds(self, value: int, bound: int) -> bool:
        if self is Comparison.AT_MOST:
            return value <= bound
        if self is Comparison.AT_LEAST:
            return value >= bound
        return value == bound


class RuleError(ValueError):
    """A rule that does not parse; the message names it and the forms allowed."""


@dataclass(frozen=True)
class Requirement:
    delegate: Delegate
    kind: RuleKind
    comparison: Comparison | None = None  # partitions, nodes
    bound: int | None = None  # partitions, nodes
    op: str | None = None  # no-op

    def __str__(self) -> str:
        if self.kind is RuleKind.FULL:
            return f"{self.delegate}:full"
        if self.kind is RuleKind.NO_OP:
            return f"{self.delegate}:no-op={self.op}"
        return f"{self.delegate}:{self.kind}{self.comparison}{self.bound}"


_COUNTED = re.compile(r"(partitions|nodes)(<=|==|>=)(\d+)")


def parse_requirement(text: str) -> Requirement:
    """One rule as the command line spells it; RuleError naming the rule and what is allowed."""
    delegate_name, sep, body = text.strip().partition(":")
    names = ", ".join(CHECKED_DELEGATES)
    if not sep:
        raise RuleError(f"'{text}' is not a rule (DELEGATE:RULE); rules: {RULE_FORMS}; delegates: {names}")
    delegate = next((d for d in CHECKED_DELEGATES if d.value == delegate_name.lower()), None)
    if delegate is None:
        raise RuleError(f"'{text}': '{delegate_name}' is not a delegate inspect reports; delegates: {names}")
    if body == RuleKind.FULL:
        return Requirement(delegate, RuleKind.FULL)
    if body.startswith(f"{RuleKind.NO_OP}="):
        op = body.removeprefix(f"{RuleKind.NO_OP}=")
        if op and not any(c.isspace() for c in op):
            return Requirement(delegate, RuleKind.NO_OP, op=op)
    if m := _COUNTED.fullmatch(body):
        return Requirement(delegate, RuleKind(m[1]), Comparison(m[2]), int(m[3]))
    raise RuleError(f"'{text}': '{body}' is not a rule; rules: {RULE_FORMS}")


@dataclass(frozen=True)
class BrokenBy:
    """A node that breaks a rule, and why the delegate leaves it (inspect's reason)."""

    index: int
    op: str
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "op": self.op, "reason": self.reason}


@dataclass(frozen=True)
class Verdict:
    requirement: Requirement
    passed: bool
    checked: bool  # False: the coverage said nothing to check against (the rule fails)
    detail: str  # what was found: "2 of 31 nodes not delegated", "1 partition", "could not be checked: ..."
    nodes: tuple[BrokenBy, ...] = ()

    def line(self) -> str:
        """The one line a terminal gets: the rule, ok or failed, the nodes that break it with their reasons."""
        if self.passed:
            return f"required {self.requirement} ok: {self.detail}"
        text = f"required {self.requirement} failed: {self.detail}"
        shown = [f"#{n.index} {n.op} ({n.reason or 'no reason given'})" for n in self.nodes[:LINE_NODES]]
        if len(self.nodes) > LINE_NODES:
            shown.append(f"… {len(self.nodes) - LINE_NODES} more (--json lists every node)")
        return text + (": " + ", ".join(shown) if shown else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": str(self.requirement),
            "passed": self.passed,
            "checked": self.checked,
            "detail": self.detail,
            "nodes": [n.to_dict() for n in self.nodes],
        }


def _broken(nodes: Sequence[NodeCoverage]) -> tuple[BrokenBy, ...]:
    return tuple(BrokenBy(n.index, n.op, n.reason) for n in nodes)


def _matches(op: str, wanted: str) -> bool:
    return op in (wanted, _CUSTOM + wanted)


def _concerned(requirement: Requirement, coverage: Coverage) -> list[NodeCoverage]:
    """The nodes a rule reads: those of its op for no-op, else every node."""
    if requirement.kind is RuleKind.NO_OP:
        return [n for n in coverage.nodes if _matches(n.op, requirement.op or "")]
    return list(coverage.nodes)


def _unchecked(requirement: Requirement, coverage: Coverage) -> Verdict | None:
    """The rule fails unchecked when the coverage does not say what it needs."""
    if coverage.source == "unavailable":
        why = coverage.reason or "unavailable"
    elif coverage.nodes_delegated is None or any(n.delegated is None for n in _concerned(requirement, coverage)):
        why = "which nodes it delegates is not reported"
    elif requirement.kind is RuleKind.PARTITIONS and coverage.delegated_partitions is None:
        why = "the partitions are not reported"
    else:
        return None
    detail = f"could not be checked, the {coverage.delegate} coverage is unknown: {why}"
    return Verdict(requirement, False, False, detail)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def evaluate(requirement: Requirement, coverage: Coverage) -> Verdict:
    """The verdict of one rule on its delegate's coverage."""
    unchecked = _unchecked(requirement, coverage)
    if unchecked is not None:
        return unchecked
    left = coverage.left_on_cpu
    delegated = coverage.nodes_delegated or 0  # set: _unchecked returned otherwise
    if requirement.kind is RuleKind.FULL:
        missing = coverage.nodes_total - delegated
        detail = (
            f"all {coverage.nodes_total} nodes delegated"
            if not missing
            else f"{missing} of {coverage.nodes_total} nodes not delegated"
        )
        return Verdict(requirement, not missing, True, detail, _broken(left))
    if requirement.kind is RuleKind.NO_OP:
        op = requirement.op or ""
        hits = [n for n in left if _matches(n.op, op)]
        detail = f"{len(hits)} {op} node{'s' if len(hits) != 1 else ''} left on the CPU"
        return Verdict(requirement, not hits, True, detail, _broken(hits))
    comparison, bound = requirement.comparison, requirement.bound
    assert comparison is not None and bound is not None  # parse_requirement sets both for counted rules
    if requirement.kind is RuleKind.PARTITIONS:
        value = coverage.delegated_partitions or 0
        detail = f"{_plural(value, 'partition')} delegated"
        if coverage.partitions is not None and coverage.partitions != value:  # the count a delegate's log line gives
            detail += f" ({coverage.partitions} found, {coverage.partitions - value} too small or over the limit)"
        # What splits the graph: the nodes left on the CPU between the first and the last delegated one.
        taken = [n.index for n in coverage.nodes if n.delegated]
        breaks = [n for n in left if taken and taken[0] < n.index < taken[-1]] if value > bound else []
        if breaks:
            detail += ", split by the nodes left on the CPU"
    else:
        value = delegated
        detail = f"{value} of {coverage.nodes_total} nodes delegated"
        breaks = list(left) if value < bound else []  # too few taken: the nodes left are why
    passed = comparison.holds(value, bound)
    return _vacuous(Verdict(requirement, passed, True, detail, () if passed else _broken(breaks)), coverage)


def _vacuous(verdict: Verdict, coverage: Coverage) -> Verdict:
    """A counted rule that holds of a delegate that takes no node holds of nothing: it fails, saying so.
    A rule that asks for none (`nodes==0`, `partitions<=0`) is met by none, and passes."""
    req = verdict.requirement
    asks_none = req.bound == 0 and req.comparison in (Comparison.AT_MOST, Comparison.EXACTLY)
    if not verdict.passed or coverage.nodes_delegated != 0 or asks_none:
        return verdict
    rule = str(req).partition(":")[2]
    detail = f"{req.delegate} takes no node of this model: {rule} holds only vacuously"
    return Verdict(req, False, True, detail)  # the coverage above gives each node's reason


def evaluate_all(requirements: Sequence[Requirement], coverages: Mapping[str, Coverage]) -> list[Verdict]:
    """Every rule against its delegate's coverage (`ModelCoverage.by_delegate()`), in the order given."""
    return [evaluate(r, coverages[r.delegate.value]) for r in requirements]
