"""Power-counter readings recorded on an H200 host and an H100 host, as the counters return them:
inputs for the energy figures and the clock-state sentences, not a faked backend."""

from __future__ import annotations

from app.system.power_counters import GpuPower, PowerReading


def _reading(gpu: str, memory_mhz: float, t: float, sm: float, watts: float, joules: float) -> PowerReading:
    return PowerReading(t, GpuPower(gpu, sm, memory_mhz, watts, joules), cpu_mhz_reason="x",
                        cpu_energy_reason="RAPL is not exposed here")  # fmt: skip


def h200(t: float, sm: float, watts: float, joules: float) -> PowerReading:
    return _reading("0: NVIDIA H200", 3201.0, t, sm, watts, joules)


# Idle 80 W at 345 MHz; 15 s of bench each, the GPU unpaced and paced at 30 fps.
IDLE = [h200(0.0, 345, 80.0, 10_000.0), h200(2.5, 345, 80.0, 10_200.0), h200(5.0, 345, 80.0, 10_400.0)]
UNPACED = [h200(10.0 + i, 1980, 135.0, 20_000.0 + 133.7 * i) for i in range(15)]  # 1872 J in 14 s
PACED = [h200(40.0 + i, 345, 80.0, 40_000.0 + 91.3 * i) for i in range(15)]  # 1278 J in 14 s


def h100(t: float, sm: float, watts: float, joules: float) -> PowerReading:
    return _reading("0: NVIDIA H100 80GB HBM3", 2619.0, t, sm, watts, joules)


# An H100 host (2026-12-06, docs/performance.md), the GPU side of an A/B paced at 30 fps: 450 inferences in
# 15 s drew 76.5 W against 76.65 W idle, 1147.55 J: 2550.1 mJ per inference, -4.97 "above idle".
IDLE_H100 = [h100(float(t), 360, 76.66, 5_000.0 + 76.6524 * t) for t in range(3)]
PACED_H100 = [h100(10.0 + i, 345, 76.5, 9_000.0 + 1147.55 * i / 15) for i in range(16)]
