"""The memory anchor's readings of outside tools and its verdicts (benchmarks/suite/memory_anchor.py), on
recorded outputs: GNU time's maximum resident set, nvidia-smi's per-process memory, the tolerances."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.suite.memory_anchor import GNU_TIME, max_rss_mb, slowdown, smi_used_mb, within

TIME_V = """\tCommand being timed: "python -m app bench --json s.json"
\tUser time (seconds): 3.61
\tPercent of CPU this job got: 61%
\tMaximum resident set size (kbytes): 171136
\tAverage resident set size (kbytes): 0
\tExit status: 0
"""
SMI = """pid, used_memory [MiB]
4242, 512 MiB
4243, 96 MiB
9999, 20000 MiB
4244, [N/A]
"""


def test_gnu_times_peak_is_read_in_mib():
    assert max_rss_mb(TIME_V) == 171136 / 1024
    assert max_rss_mb("Command exited with non-zero status 2\n") is None


@pytest.mark.skipif(not Path(GNU_TIME).exists(), reason="no GNU time here")
def test_gnu_times_real_output_is_read():
    proc = subprocess.run([GNU_TIME, "-v", sys.executable, "-c", "b = bytearray(64 << 20)"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    peak = max_rss_mb(proc.stderr)
    assert peak is not None and peak > 64  # the 64 MiB the child wrote, and its interpreter


def test_nvidia_smis_memory_is_summed_over_the_processes_asked_for():
    assert smi_used_mb(SMI, {4242, 4243}) == 608.0
    assert smi_used_mb(SMI, {4244}) is None  # listed, its memory not reported
    assert smi_used_mb(SMI, {1}) is None  # not listed: no GPU context
    assert smi_used_mb("", {4242}) is None


def test_the_tolerances_take_the_larger_of_share_and_floor():
    assert within(13.0, 10.0, 0.35, 6.0) is True  # 30%
    assert within(21.1, 13.1, 0.35, 6.0) is False  # 61% and 8 MB
    assert within(5.0, 0.5, 0.35, 6.0) is True  # 4.5 MB: under the floor
    assert within(170.0, 150.0, 0.15) is True and within(180.0, 150.0, 0.15) is False
    assert within(None, 10.0, 0.35) is None


def test_slowdown_is_the_median_of_pairwise_ratios():
    assert slowdown([99.0, 100.0, 50.0], [100.0, 100.0, 100.0]) == pytest.approx(0.01)
    assert slowdown([101.0], [100.0]) == pytest.approx(-0.01)
