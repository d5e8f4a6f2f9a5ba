"""How far a CPU profile's per-op times are from the whole run, whether two profiles agree on the top
ops, and what profiling costs when it is off and when it is on.

For each model: `--profiles` CPU profiles of `--runs` runs each (app.profile.cpu.profile_cpu, LiteRT's
own profiler). Reports the ops' sum over the runtime's own Invoke span and over the run measured
around the C call (medians over the profiles, with the range), and how many of the profiles' top-5
op sets equal the first one's (and the smallest overlap). Then the cost: the mean run of
  A  the app's CPU session (LiteRT Interpreter + XNNPACK, what bench and the window run),
  B  a compiled model made through the C API with profiling off (what the window runs alongside
     when the Ops view is on: nothing; it exists only while a profile is taken),
  C  the same with enable_profiling on and the profiler started,
timed in interleaved rounds (A, B, C, A, B, C, ...) so the machine's load hits all three alike.

    python -m benchmarks.suite.profile_accuracy [--runs 20] [--profiles 5] [--rounds 7] [--threads 1]
        [--json FILE] [MODEL ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial
from pathlib import Path
from typing import Any

from app.backends import open_session
from app.backends.litert_c import HW_CPU, NativeModel
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
from app.profile.cpu import profile_cpu, sample_input
from app.profile.timed_runs import WARMUP_RUNS
from benchmarks.harness.children import write_json
from benchmarks.harness.loops import mean_ms
from benchmarks.harness.paths import BUNDLED, CORAL
from benchmarks.harness.rounds import alternate

DEFAULT_MODELS = [
    *BUNDLED,
    str(CORAL / "mobilenet_v2_1.0_224_quant.tflite"),
    str(CORAL / "mobilenet_v1_0.25_128_quant.tflite"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--profiles", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    results: dict[str, Any] = {}
    for name in args.models:
        spec = load_model_spec(name)
        profiles = [profile_cpu(spec, args.threads, args.runs) for _ in range(args.profiles)]
        invoke = [p.ops_ms / p.invoke_ms for p in profiles if p.invoke_ms]
        by_run = [p.ops_over_invoke for p in profiles if p.ops_over_invoke is not None]
        wall = [p.ops_ms / p.wall_ms for p in profiles]
        tops = [{op.order for op in p.top(5)} for p in profiles]
        same = sum(t == tops[0] for t in tops[1:])
        overlap = min(len(t & tops[0]) for t in tops[1:]) if len(tops) > 1 else 5
        print(f"{spec.display_name}: {args.profiles} profiles x {args.runs} runs, {args.threads} thread(s)")
        print(
            f"  ops/Invoke median {statistics.median(invoke):.3f} (range {min(invoke):.3f}-{max(invoke):.3f}); "
            f"ops/measured run median {statistics.median(wall):.3f} ({min(wall):.3f}-{max(wall):.3f}); "
            f"Invoke {statistics.median(p.invoke_ms for p in profiles):.3f} ms, "
            f"run {statistics.median(p.wall_ms for p in profiles):.3f} ms"
        )
        print(f"  ops/Invoke run by run (median per profile): {min(by_run):.3f}-{max(by_run):.3f}")
        print(f"  top-5 set equal to the first profile's in {same} of {len(tops) - 1}; smallest overlap {overlap}/5")
        tensor = sample_input(spec)
        session = open_session(spec, "cpu", BackendOptions(threads=args.threads))
        off = NativeModel(spec.content, HW_CPU, args.threads, profiling=False)
        on = NativeModel(spec.content, HW_CPU, args.threads, profiling=True)
        for m in (off, on):
            m.write_input(tensor)
            for _ in range(WARMUP_RUNS):
                m.run()
        on.start()
        n = max(5, int(300 / max(profiles[0].wall_ms, 0.1)))  # about 0.3 s per measurement

        def profiled(on: NativeModel = on, n: int = n) -> float:
            ms = mean_ms(on.run, n)
            on.stop()
            on.start()  # a fresh buffer each round
            return ms

        legs = {
            "app": partial(mean_ms, partial(session.run, tensor), n),
            "off": partial(mean_ms, off.run, n),
            "on": profiled,
        }
        cost = alternate(legs, args.rounds, rotate=False)  # A, B, C, A, B, C, ...
        a, b, c = cost["app"], cost["off"], cost["on"]
        session.close()
        off.close()
        on.close()
        ma, mb, mc = (statistics.median(x) for x in (a, b, c))
        print(
            f"  cost ({args.rounds} rounds x {n} runs, medians): app session {ma:.3f} ms, C API profiling off "
            f"{mb:.3f} ms ({mb / ma:.3f}x), profiling on {mc:.3f} ms ({mc / mb:.3f}x of off)"
        )
        results[spec.display_name] = {"ops_over_invoke": invoke, "ops_over_run": wall, "run_by_run": by_run,
                                      "top5_same": same, "smallest_overlap": overlap, "cost_ms": cost}  # fmt: skip
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
