"""Alternated rounds: every variant once per round, so the machine's load hits all of them alike.

`alternate` runs fixed rounds; `gated_rounds` goes on until enough rounds were undisturbed by other
processes (harness.load.OtherLoad), for figures quoted against a target on a shared machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from benchmarks.harness.load import OtherLoad

T = TypeVar("T")


def rotated(names: Sequence[T], round_index: int) -> list[T]:
    """`names` rotated by the round's index, so no variant always runs first."""
    k = round_index % len(names) if names else 0
    return [*names[k:], *names[:k]]


def alternate(
    legs: Mapping[str, Callable[[], T]],
    rounds: int,
    *,
    rotate: bool = True,
    report: Callable[[int, dict[str, T]], None] | None = None,
) -> dict[str, list[T]]:
    """Each leg once per round (in rotated order unless `rotate` is False), `rounds` times.

    Returns each leg's results in round order; `report(round_index, results_of_that_round)` after each round."""
    names = list(legs)
    results: dict[str, list[T]] = {name: [] for name in names}
    for r in range(rounds):
        this: dict[str, T] = {}
        for name in rotated(names, r) if rotate else names:
            this[name] = legs[name]()
            results[name].append(this[name])
        if report is not None:
            report(r, {name: this[name] for name in names})
    return results


@dataclass(frozen=True)
class Round(Generic[T]):
    results: dict[str, T]
    others: float  # the most CPU (cores) other processes used during any of the round's runs
    clean: bool  # others <= the gate


def gated_rounds(
    legs: Mapping[str, Callable[[], T]],
    wanted: int,
    max_rounds: int,
    max_other: float,
    *,
    rotate: bool = True,
    report: Callable[[Round[T]], None] | None = None,
) -> list[Round[T]]:
    """Rounds of every leg, each leg's run under OtherLoad, until `wanted` rounds had other processes at
    `max_other` cores or less in all their runs, or `max_rounds` rounds were run. Every round is returned."""
    names = list(legs)
    rounds: list[Round[T]] = []
    while sum(r.clean for r in rounds) < wanted and len(rounds) < max_rounds:
        results: dict[str, T] = {}
        others = 0.0
        for name in rotated(names, len(rounds)) if rotate else names:
            with OtherLoad() as load:
                results[name] = legs[name]()
            others = max(others, load.cores or 0.0)
        rounds.append(Round({name: results[name] for name in names}, others, others <= max_other))
        if report is not None:
            report(rounds[-1])
    return rounds
