"""The window's Ops view on a busy machine: its op times stay near the model's, do not grow with the
load, agree with `profile` taken under the same load, and the profile says it was taken under contention
(app/profile/background.py, app/profile/cpu.py).

Its thread runs at nice +10; LiteRT's profiler events are wall time, so means of a few runs counted the
time each op waited for the CPU: 130-470 ms for an int8 model that runs in ~5 ms, rising with the load.
Both report each op's least-disturbed run (app/profile/cpu.py run_statistics)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
from app.profile.background import LiveProfiler, Target
from app.profile.cpu import profile_cpu
from app.profile.text import CONTENDED_SHARE, headline
from tests.helpers.cli import run_cli
from tests.helpers.wait import wait_until

MODEL = "efficientnet_lite0_int8"


def test_a_profile_taken_beside_busy_processes_stays_near_the_model_and_says_so():
    spec = load_model_spec(MODEL)
    baseline = profile_cpu(spec, 1, 8).ops_ms  # whatever else runs now: the same method
    # One more spinner than cores, each allowed on every core: a child inherits its parent thread's CPUs, and an
    # earlier test in this worker may have left that thread on one (a fresh clone read a share of 0.91 once:
    # the spinners shared one core while the profile had the other to itself).
    spin = (
        "import os\ntry:\n    os.sched_setaffinity(0, range(os.cpu_count()))\nexcept OSError:\n    pass\n"
        "while True: pass"
    )
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range((os.cpu_count() or 1) + 1)]
    # Spinning before the first profile: a profile taken while they still started read a share of 0.8+.
    for s in spinners:
        assert wait_until(lambda s=s: sum(psutil.Process(s.pid).cpu_times()[:2]) > 0.2, timeout=30), "no spin"
    # The window's runs per profile (RUNS, 8): with 4 the least-disturbed run read 22% over `profile`'s once.
    profiler = LiveProfiler(lambda: {"a": Target(MODEL, "cpu", BackendOptions(threads=1))}, interval_s=0.2)
    try:
        profiler.start()
        seen: dict[int, object] = {}
        deadline = time.monotonic() + 120
        while len(seen) < 2 and time.monotonic() < deadline:
            live = profiler.latest().get("a")
            if live is not None and live.profile is not None:
                seen[live.seq] = live.profile
            time.sleep(0.1)
        # `profile`, the command, under the same load while the live profiler runs on (normal priority)
        run = run_cli("profile", "--model", MODEL, "--threads", "1", "--runs", "20", "--json", timeout=300)
        assert run.returncode == 0, run.stderr
        command = run.json()["profile"]
    finally:
        profiler.stop()
        for s in spinners:
            s.kill()
        for s in spinners:
            s.wait()  # reaped here: left, a later test's Popen reaped them and was charged their CPU
    profiles = list(seen.values())
    assert len(profiles) == 2, "the live profiler took fewer than 2 profiles in 120 s"
    for p in profiles:
        assert p.least_disturbed
        assert p.ops_ms < 3 * baseline, (p.ops_ms, baseline)  # means here read 30-100x the baseline
        # Issue 33's target: the Ops view within 20% of `profile` on a loaded machine (the same statistic)
        assert abs(p.ops_ms / command["ops_ms"] - 1) <= 0.2, (p.ops_ms, command["ops_ms"])
        # The CPU share, where read, flags the contention (it read 0.999 once when a thread another part of
        # the process started during the compile was counted as the runtime's: tests/test_thread_cpu.py).
        if p.cpu_share is not None:
            assert p.cpu_share < CONTENDED_SHARE, p.cpu_share
            assert any("taken under contention" in line for line in headline(p))
    ops = [p.ops_ms for p in profiles]
    assert max(ops) < 2 * min(ops), ops  # steady, not growing with each refresh
