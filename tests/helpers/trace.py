"""What the trace tests check a Chrome trace for, as Perfetto reads it."""

from __future__ import annotations

from collections import defaultdict


def improperly_nested(events: list[dict]) -> list[tuple]:
    """Complete slices on one thread that overlap without one holding the other (what Perfetto refuses)."""
    bad = []
    by_thread = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_thread[(e["pid"], e["tid"])].append(e)
    for track in by_thread.values():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for e in track:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
                bad.append((stack[-1], e))
            stack.append(e)
    return bad


def thread_names(events: list[dict]) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
