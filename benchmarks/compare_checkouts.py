"""bench of this checkout against another one, alternated with the raw LiteRT loops.

For a change meant to speed the pipeline up: make a worktree of the commit before it
(`git worktree add /tmp/before COMMIT`) and run this. Per round, in rotating order, each in
its own process: LiteRT's benchmark_litert_model ("tool"), the raw Interpreter loop
("interp"), and `delegate-scope bench --no-pace --throttle-ms 0` from the other checkout
("before") and from this one ("after"), same model, 1 thread, `--frames` each. Per round the
ratios after / before and each bench / tool; the medians over rounds at the end. Rounds where
other processes used more than `--max-other` cores in any run are printed and left out.

    python benchmarks/compare_checkouts.py --before /tmp/before [--model efficientnet_lite0_int8]
                                           [--rounds 12] [--frames 1000] [--extra-before ARG ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from machine_load import OtherLoad
from pipeline_overhead import interp, pipeline, tool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--max-other", type=float, default=0.25)
    parser.add_argument("--extra-before", nargs="*", default=[], help="extra bench arguments for 'before'")
    args = parser.parse_args()
    runs = {
        "tool": lambda: tool(args.model, 1, args.frames)[1],
        "interp": lambda: interp(args.model, 1, args.frames)[1],
        "before": lambda: pipeline(args.model, 1, args.frames, "demo", args.before, tuple(args.extra_before))[
            "inference_fps"
        ],
        "after": lambda: pipeline(args.model, 1, args.frames, "demo")["inference_fps"],
    }
    names = list(runs)
    rows = []
    print(f"{args.model}, 1 thread, {args.frames} runs or inferences each; before = {args.before}")
    for r in range(args.rounds):
        order = names[r % 4 :] + names[: r % 4]
        rate, other = {}, 0.0
        for name in order:
            with OtherLoad() as load:
                rate[name] = runs[name]()
            other = max(other, load.cores or 0.0)
        disturbed = other > args.max_other
        if not disturbed:
            rows.append(rate)
        print(
            f"round {r + 1}{' (disturbed)' if disturbed else ''}: "
            + ", ".join(f"{k} {rate[k]:.1f}/s" for k in names)
            + f"; after/before {rate['after'] / rate['before']:.3f}, after/tool {rate['after'] / rate['tool']:.3f}, "
            f"before/tool {rate['before'] / rate['tool']:.3f}; others {other:.2f} cores",
            flush=True,
        )
    if not rows:
        raise SystemExit("every round was disturbed")
    med = statistics.median
    wins = sum(r["after"] > r["before"] for r in rows)
    print(
        f"\nmedians over {len(rows)} rounds: after / before {med(r['after'] / r['before'] for r in rows):.3f} "
        f"(after faster in {wins}); after / tool {med(r['after'] / r['tool'] for r in rows):.3f}, "
        f"before / tool {med(r['before'] / r['tool'] for r in rows):.3f}; "
        f"after / interp {med(r['after'] / r['interp'] for r in rows):.3f}, "
        f"before / interp {med(r['before'] / r['interp'] for r in rows):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
