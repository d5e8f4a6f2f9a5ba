"""Power-counter readings recorded on an H200 host (issue 36's table), as the counters return them:
inputs for the energy figures and the clock-state sentences, not a faked backend."""

from __future__ import annotations

from app.system.power_counters import GpuPower, PowerReading


def h200(t: float, sm: float, watts: float, joules: float) -> PowerReading:
    return PowerReading(t, GpuPower("0: NVIDIA H200", sm, 3201.0, watts, joules), cpu_mhz_reason="x",
                        cpu_energy_reason="RAPL is not exposed here")  # fmt: skip


# Idle 80 W at 345 MHz; 15 s of bench each, the GPU unpaced and paced at 30 fps.
IDLE = [h200(0.0, 345, 80.0, 10_000.0), h200(2.5, 345, 80.0, 10_200.0), h200(5.0, 345, 80.0, 10_400.0)]
UNPACED = [h200(10.0 + i, 1980, 135.0, 20_000.0 + 133.7 * i) for i in range(15)]  # 1872 J in 14 s
PACED = [h200(40.0 + i, 345, 80.0, 40_000.0 + 91.3 * i) for i in range(15)]  # 1278 J in 14 s
