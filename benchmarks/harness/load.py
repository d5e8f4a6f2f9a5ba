"""How much CPU the rest of the machine used while a measurement ran (Linux), so a benchmark on a
shared machine can say which of its runs were disturbed instead of quoting them blind.

    with OtherLoad() as other:
        subprocess.run([...])          # this process and the children it waited for
    other.cores                         # CPU used by everything else over the span, in cores

Busy time is /proc/stat's all-CPU line (user + nice + system + irq + softirq + steal; idle and
iowait are not busy; guest time is already inside user). The span's own CPU is this process's
and its reaped children's user + system time (os.times). `steal` (the hypervisor running
someone else on our CPUs) counts as disturbance too. None where /proc/stat is missing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy_s() -> float | None:
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    except (OSError, ValueError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / _TICK


def _own_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class OtherLoad:
    """The CPU everything but this process and its reaped children used while the block ran."""

    cores: float | None = None  # CPU used by other processes over the span, in cores (1.0 = one busy core)

    def __enter__(self) -> OtherLoad:
        self._busy, self._own, self._t = _busy_s(), _own_s(), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        busy, own, wall = _busy_s(), _own_s(), time.monotonic() - self._t
        if busy is None or self._busy is None or wall <= 0:
            return
        self.cores = max(0.0, (busy - self._busy - (own - self._own)) / wall)
