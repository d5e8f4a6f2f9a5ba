"""A run's power state and energy per inference, from power-counter readings taken before it (idle)
and during it (app/system/power_counters.py), and the sentence that says when two speeds were
measured at different clocks.

Energy comes from the counters' differences (NVML's energy counter, RAPL's), never from a guess;
where the GPU keeps no counter it is the power samples integrated over time, and said so. "Above
idle" takes the idle power measured before the run off each inference: what the inference costs
beyond keeping the device on.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from app.system.power_counters import PowerReading

IDLE_CLOCK_SLACK = 1.2  # an SM clock within 20% of the idle one is "its idle clock"
CLOCKS_DIFFER = 1.25  # two runs' SM clocks this far apart: the speeds compare two power states


@dataclass(frozen=True)
class PowerFigures:
    """Medians of a run's samples and its energy; each None where not readable, with the reason."""

    gpu_name: str | None = None
    sm_clock_mhz: float | None = None
    memory_clock_mhz: float | None = None
    power_w: float | None = None  # mean over the run: energy counter / span, else the samples' median
    idle_sm_clock_mhz: float | None = None  # before the run, the device idle
    idle_power_w: float | None = None  # likewise over the idle readings
    gpu_energy_j: float | None = None
    gpu_energy_source: str | None = None  # "counter" (NVML's), "power samples" (integrated), None
    gpu_mj_per_inference: float | None = None
    gpu_mj_per_inference_above_idle: float | None = None
    gpu_reason: str | None = None  # why there is no GPU reading at all
    gpu_energy_reason: str | None = None  # why the GPU's energy is not the inference's (the model ran elsewhere)
    cpu_mhz: float | None = None  # median over cores and samples
    cpu_mhz_reason: str | None = None
    cpu_package_energy_j: float | None = None
    cpu_package_mj_per_inference: float | None = None
    cpu_package_mj_per_inference_above_idle: float | None = None
    cpu_energy_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _per_inference(joules: float | None, inferences: int) -> float | None:
    return joules * 1000.0 / inferences if joules is not None and inferences > 0 else None


def _integrated_w(samples: Sequence[tuple[float, float]]) -> float | None:
    """Joules from (t, watts) samples, trapezoids; None with fewer than two."""
    if len(samples) < 2:
        return None
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in itertools.pairwise(samples))


def _idle_watts(idle: Sequence[PowerReading], energy_of: Callable[[PowerReading], float | None]) -> float | None:
    """Mean power over readings from their energy counter's difference (or None)."""
    if len(idle) < 2:
        return None
    first, last = energy_of(idle[0]), energy_of(idle[-1])
    span = idle[-1].t - idle[0].t
    return (last - first) / span if first is not None and last is not None and span > 0 else None


def power_figures(
    idle: Sequence[PowerReading], run: Sequence[PowerReading], inferences: int, ran_on: str | None = None
) -> PowerFigures:
    """`idle`: readings before the run (the device idle), `run`: readings from its first inference to its
    last (at least the two ends), `inferences`: how many ran between them, `ran_on`: the backend the
    model ran on; the GPU's energy is given per inference only when that is the GPU (None: not known,
    as for a script that times the GPU alone)."""
    last = run[-1] if run else (idle[-1] if idle else None)
    if last is None:
        return PowerFigures(gpu_reason="no reading", cpu_mhz_reason="no reading", cpu_energy_reason="no reading")
    span = run[-1].t - run[0].t if len(run) >= 2 else 0.0
    gpus = [r.gpu for r in run if r.gpu is not None]
    idle_gpus = [r.gpu for r in idle if r.gpu is not None]
    figures: dict[str, Any] = {"gpu_reason": last.gpu_reason}
    if gpus:
        idle_power = _idle_watts(idle, lambda r: r.gpu.energy_j if r.gpu else None)
        if idle_power is None:
            idle_power = _median([g.power_w for g in idle_gpus])
        energy, source = None, None
        first_gpu, last_gpu = run[0].gpu, run[-1].gpu
        if first_gpu and last_gpu and first_gpu.energy_j is not None and last_gpu.energy_j is not None:
            energy, source = last_gpu.energy_j - first_gpu.energy_j, "counter"
        else:
            energy = _integrated_w([(r.t, r.gpu.power_w) for r in run if r.gpu is not None])
            source = "power samples" if energy is not None else None
        above = energy - idle_power * span if energy is not None and idle_power is not None else None
        mean_power = energy / span if source == "counter" and energy is not None and span > 0 else None
        elsewhere = ran_on is not None and ran_on != "gpu"
        figures.update(
            gpu_name=gpus[-1].name,
            sm_clock_mhz=_median([g.sm_clock_mhz for g in gpus]),
            memory_clock_mhz=_median([g.memory_clock_mhz for g in gpus]),
            power_w=mean_power if mean_power is not None else _median([g.power_w for g in gpus]),
            idle_sm_clock_mhz=_median([g.sm_clock_mhz for g in idle_gpus]),
            idle_power_w=idle_power,
            gpu_energy_j=energy,
            gpu_energy_source=source,
            gpu_mj_per_inference=None if elsewhere else _per_inference(energy, inferences),
            gpu_mj_per_inference_above_idle=None if elsewhere else _per_inference(above, inferences),
            gpu_energy_reason=f"the model ran on {ran_on}, not the GPU" if elsewhere else None,
        )
    mhz = [m for r in run if r.cpu_mhz for m in r.cpu_mhz]
    figures.update(cpu_mhz=_median(mhz), cpu_mhz_reason=None if mhz else last.cpu_mhz_reason)
    first_e, last_e = (run[0].cpu_package_energy_j, run[-1].cpu_package_energy_j) if run else (None, None)
    if first_e is not None and last_e is not None and len(run) >= 2:
        cpu_energy = last_e - first_e
        idle_w = _idle_watts(idle, lambda r: r.cpu_package_energy_j)
        above_cpu = cpu_energy - idle_w * span if idle_w is not None else None
        figures.update(
            cpu_package_energy_j=cpu_energy,
            cpu_package_mj_per_inference=_per_inference(cpu_energy, inferences),
            cpu_package_mj_per_inference_above_idle=_per_inference(above_cpu, inferences),
        )
    else:
        figures["cpu_energy_reason"] = last.cpu_energy_reason or "fewer than two readings in the run"
    return PowerFigures(**figures)


def stored_clocks(power: object) -> PowerFigures:
    """The SM clocks of a power section read back from a stored JSON file (untrusted: numbers only)."""
    if not isinstance(power, dict):
        return PowerFigures()

    def mhz(key: str) -> float | None:
        value = power.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    return PowerFigures(sm_clock_mhz=mhz("sm_clock_mhz"), idle_sm_clock_mhz=mhz("idle_sm_clock_mhz"))


def clock_state_sentence(a_label: str, a: PowerFigures, b_label: str, b: PowerFigures) -> str | None:
    """When two speeds were measured at different GPU clocks, one sentence with the figures ("GPU at
    30 fps: SM clock 345 MHz, its idle clock; unpaced: 1980 MHz"); None when the clocks agree or are
    not known (then nothing can be said about it)."""
    if a.sm_clock_mhz is None or b.sm_clock_mhz is None:
        return None
    lo, hi = sorted((a.sm_clock_mhz, b.sm_clock_mhz))
    if lo <= 0 or hi / lo < CLOCKS_DIFFER:
        return None

    def part(label: str, f: PowerFigures) -> str:
        assert f.sm_clock_mhz is not None
        idle = f.idle_sm_clock_mhz
        at_idle = idle is not None and f.sm_clock_mhz <= idle * IDLE_CLOCK_SLACK
        return f"{label}: SM clock {f.sm_clock_mhz:.0f} MHz" + (", its idle clock" if at_idle else "")

    return (
        f"{part(a_label, a)}; {part(b_label, b)}: the two speeds were measured at different power states "
        "(a paced run may never raise the clock), so their ratio is not the hardware's."
    )


def paced_clock_sentence(label: str, f: PowerFigures) -> str | None:
    """A paced run whose GPU stayed at its idle clock, with the figures ("GPU at 30 fps: SM clock 345 MHz,
    its idle clock (idle 345 MHz)"): its speed there is not the GPU's unpaced. None when the GPU's clock
    rose above idle, or is not known."""
    if f.sm_clock_mhz is None or f.idle_sm_clock_mhz is None or f.sm_clock_mhz > f.idle_sm_clock_mhz * IDLE_CLOCK_SLACK:
        return None
    return (
        f"{label}: SM clock {f.sm_clock_mhz:.0f} MHz, its idle clock (idle {f.idle_sm_clock_mhz:.0f} MHz): a paced "
        "GPU may never raise its clock, so a speed measured here is not its speed unpaced (bench --no-pace "
        "--warm-seconds, or sweep, measures that)."
    )


def power_lines(f: PowerFigures) -> list[str]:
    """The power state and energy in words, one line for the GPU and one for the CPU: each figure or why
    it is missing (`bench`'s output)."""

    def mj(total: float | None, above: float | None) -> str:
        if total is None:
            return ""
        if above is None:
            return f"; {total:.2f} mJ per inference"
        if above < 0:
            return f"; {total:.2f} mJ per inference ({NONE_ABOVE_IDLE}: the run drew no more than the idle power)"
        return f"; {total:.2f} mJ per inference ({above:.2f} above idle)"

    if f.sm_clock_mhz is not None:
        idle_clock = f" (idle {f.idle_sm_clock_mhz:.0f})" if f.idle_sm_clock_mhz is not None else ""
        idle_power = f" (idle {f.idle_power_w:.0f})" if f.idle_power_w is not None else ""
        counter = "NVML's energy counter" if f.gpu_energy_source == "counter" else f.gpu_energy_source
        gpu = (
            f"GPU {f.gpu_name}: SM clock {f.sm_clock_mhz:.0f} MHz{idle_clock}, memory {f.memory_clock_mhz:.0f} MHz, "
            f"{f.power_w:.0f} W{idle_power}"
            + (
                f"; no energy per inference: {f.gpu_energy_reason}"
                if f.gpu_energy_reason
                else mj(f.gpu_mj_per_inference, f.gpu_mj_per_inference_above_idle)
                + (f", from {counter}" if counter else "")
            )
        )
    else:
        gpu = f"GPU: {f.gpu_reason or 'not read'}"
    clock = f"clock {f.cpu_mhz:.0f} MHz (median over cores)" if f.cpu_mhz is not None else f"clock: {f.cpu_mhz_reason}"
    if f.cpu_package_energy_j is not None:
        energy = "package energy" + mj(f.cpu_package_mj_per_inference, f.cpu_package_mj_per_inference_above_idle)[1:]
    else:
        energy = f"package energy: {f.cpu_energy_reason}"
    return [gpu, f"CPU {clock}; {energy}"]


NOT_READABLE = "not readable here"
# An energy above idle below zero: the run drew no more than the idle reading, within that reading's noise
# (a GPU paced at 30 fps on the H100 host: 77 W against 77 W idle, -4.97 mJ per inference). The JSON keeps
# the figure; words say it, never a negative energy.
NONE_ABOVE_IDLE = "none above idle"


@dataclass(frozen=True)
class PowerNotes:
    """What the window's clock and power plots cannot show, in words ("not readable here" and why);
    None for a figure that is readable (its curve says it)."""

    gpu: str | None  # the GPU's SM clock and power draw
    cpu_clock: str | None

    @classmethod
    def of(cls, reading: PowerReading | None) -> PowerNotes:
        if reading is None:
            return cls(f"GPU clock and power: {NOT_READABLE} (no reading yet)", f"CPU clock: {NOT_READABLE}")
        gpu = None if reading.gpu is not None else f"GPU clock and power: {NOT_READABLE} ({reading.gpu_reason})"
        cpu = None if reading.cpu_mhz else f"CPU clock: {NOT_READABLE} ({reading.cpu_mhz_reason})"
        return cls(gpu, cpu)
