"""The Ops view's profiles on a busy machine: do its op times stay near the model's, or grow with the load,
and do they agree with `delegate-scope profile` taken under the same load?

The window's background profiler (app/profile/background.py) runs at nice +10; LiteRT's profiler events
are wall time. Both it and `profile` report each op's least-disturbed run, the means beside it
(app/profile/cpu.py run_statistics). This takes a quiet profile of the model, then starts `--spinners`
busy processes and lets the live profiler take `--profiles` profiles, printing for each the op sum
(least-disturbed: what the Ops view shows), the mean op sum over its runs, the Invoke span and the share
of their wall time the runs had the CPU; meanwhile, under the same load, it runs the real `profile`
command (`--cli-runs` runs, normal priority) `--cli` times and prints its op sums beside, and the ratio
of each live profile's op sum to the last `profile`'s.

    python -m benchmarks.investigations.live_profile_contention [--model efficientnet_lite0_int8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
from app.profile.background import LiveProfiler, Target
from app.profile.cpu import profile_cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--runs", type=int, default=20, help="runs of the quiet profile")
    parser.add_argument("--spinners", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--profiles", type=int, default=5)
    parser.add_argument("--cli", type=int, default=3, help="runs of the `profile` command under the load")
    parser.add_argument("--cli-runs", type=int, default=20, help="its --runs")
    args = parser.parse_args(argv)
    spec = load_model_spec(args.model)
    quiet = profile_cpu(spec, 1, args.runs)
    print(f"quiet: ops {quiet.ops_ms:.2f} ms least-disturbed, {quiet.ops_mean_ms or 0:.2f} ms mean of {quiet.runs} "
          f"runs; Invoke {quiet.invoke_ms or 0:.2f} ms; CPU share {_share(quiet.cpu_share)}")  # fmt: skip
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.spinners)]
    profiler = LiveProfiler(lambda: {"a": Target(args.model, "cpu", BackendOptions(threads=1))}, interval_s=0.5)
    started = time.monotonic()
    cli: subprocess.Popen[str] | None = None
    cli_done: list[dict] = []
    try:
        profiler.start()
        seen: set[int] = set()
        print(f"{args.spinners} busy processes; the live profiler (nice +10) and `profile` (nice 0) beside it:")
        print("   s   who        ops least-disturbed   ops mean of runs   Invoke (least)   CPU share   live/profile")
        while (len(seen) < args.profiles or len(cli_done) < args.cli) and time.monotonic() - started < 600:
            now = time.monotonic() - started
            if cli is None and len(cli_done) < args.cli:
                cli = _profile_command(args.model, args.cli_runs)
            if cli is not None and cli.poll() is not None:
                out, err = cli.communicate()
                if cli.returncode != 0:
                    raise SystemExit(f"profile failed: {err.strip()}")
                d = json.loads(out)["profile"]
                cli_done.append(d)
                print(f"{now:4.0f}   profile    {d['ops_ms']:17.2f}   {d['ops_mean_ms'] or 0:16.2f}   "
                      f"{d['invoke_ms'] or 0:14.2f}   {_share(d['cpu_share']):>9}")  # fmt: skip
                cli = None
            live = profiler.latest().get("a")
            if live is not None and live.profile is not None and live.seq not in seen and len(seen) < args.profiles:
                seen.add(live.seq)
                p = live.profile
                ratio = f"{p.ops_ms / cli_done[-1]['ops_ms']:.3f}" if cli_done else "-"
                print(f"{now:4.0f}   Ops view   {p.ops_ms:17.2f}   {p.ops_mean_ms or 0:16.2f}   "
                      f"{p.invoke_ms or 0:14.2f}   {_share(p.cpu_share):>9}   {ratio:>12}")  # fmt: skip
            time.sleep(0.1)
    finally:
        profiler.stop()
        if cli is not None:
            cli.kill()
        for s in spinners:
            s.kill()
    return 0


def _profile_command(model: str, runs: int) -> subprocess.Popen[str]:
    """The real command, as a user runs it: its own process at normal priority."""
    command = [sys.executable, "-m", "app", "profile", "--model", model, "--threads", "1", "--runs", str(runs)]
    command.append("--json")
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _share(share: float | None) -> str:
    return "-" if share is None else f"{share:.2f}"


if __name__ == "__main__":
    sys.exit(main())
