"""Alternated rounds: every variant once per round, so the machine's load hits all of them alike.

`alternate` runs fixed rounds; `gated_rounds` goes on until enough rounds were undisturbed by other
processes (harness.load.OtherLoad), for figures quoted against a target on a shared machine.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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


def add_gated_arguments(parser: argparse.ArgumentParser, frames: int) -> None:
    """The options of a script that runs gated rounds of bench against raw loops."""
    parser.add_argument("--rounds", type=int, default=5, help="undisturbed rounds wanted per model")
    parser.add_argument("--max-rounds", type=int, default=12, help="give up after this many per model")
    parser.add_argument("--max-other", type=float, default=0.25, help="other processes' CPU (cores) that disturbs")
    parser.add_argument("--frames", type=int, default=frames)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", default="demo")


def print_setup(args: argparse.Namespace, legs: str, extra: str = "") -> None:
    """The run's settings in one line (the options of add_gated_arguments), `legs` as "tool / interp / bench"."""
    print(
        f"{os.cpu_count()} cores; threads {args.threads}; source {args.source} unpaced, throttle 0; rounds of "
        f"{legs} (order rotated) until {args.rounds} undisturbed (others <= {args.max_other} cores); "
        f"{args.frames} runs or measured inferences each{extra}",
        flush=True,
    )


def used_rounds(per_round: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The undisturbed rounds and how many of all they are; every round, marked so, when none was."""
    clean = [r for r in per_round if r["clean"]]
    if clean:
        return clean, f"{len(clean)} of {len(per_round)}"
    return per_round, f"DISTURBED: all {len(per_round)}"


def print_per_round(rows: list[tuple[str, list[dict[str, Any]]]]) -> None:
    """Every round's figures as a table, a row per model and round (ratios, keys with a "/", to 3 places)."""
    keys = [k for k in rows[0][1][0] if k != "clean"]
    print("| model | round | disturbed | " + " | ".join(keys) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in keys) + " |")
    for model, per_round in rows:
        for i, r in enumerate(per_round, 1):
            cells = " | ".join(f"{r[k]:.3f}" if "/" in k else f"{r[k]:.2f}" for k in keys)
            print(f"| {model} | {i} | {'' if r['clean'] else 'DISTURBED'} | {cells} |")


def gated_rows(
    models: Sequence[str],
    legs_of: Callable[[str], Mapping[str, Callable[[], T]]],
    args: argparse.Namespace,
    figures: Callable[[Round[T]], dict[str, float]],
    headline: Callable[[dict[str, float]], str],
) -> list[tuple[str, list[dict[str, Any]]]]:
    """Per model, gated rounds of its legs (the options of add_gated_arguments), each round printed as it
    ends with its `headline` ("bench/tool 0.970"); every round's `figures`, marked clean or not."""
    rows: list[tuple[str, list[dict[str, Any]]]] = []
    for name in models:

        def report(r: Round[T], name: str = name) -> None:
            line = f"{name}: {'' if r.clean else 'DISTURBED '}{headline(figures(r))}"
            print(f"{line}; others {r.others:.2f} cores", flush=True)

        rounds = gated_rounds(legs_of(name), args.rounds, args.max_rounds, args.max_other, report=report)
        rows.append((name, [{"clean": r.clean, **figures(r)} for r in rounds]))
    return rows
