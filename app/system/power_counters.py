"""The machine's power state, read where it is exposed: an NVIDIA GPU's clocks, power draw and energy
counter (NVML, the `nvidia` extra), each CPU core's current frequency (Linux cpufreq) and the CPU
packages' energy counters (Linux RAPL, `/sys/class/powercap`).

Each part of a reading is either a value or the reason it is missing ("not readable here", with
why), never a guess: a VM without cpufreq, RAPL readable by root only (Linux 5.10 on), no NVIDIA GPU.
Why it matters: an accelerator paced at 30 fps may never leave its idle clock, so a paced and an
unpaced figure compare two power states, and only the clocks say so.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from app.system.nvml import NvmlSession

CPUFREQ = Path("/sys/devices/system/cpu")
POWERCAP = Path("/sys/class/powercap")


@dataclass(frozen=True)
class GpuPower:
    """One NVIDIA GPU's power state (NVML)."""

    name: str  # "index: name"
    sm_clock_mhz: float
    memory_clock_mhz: float
    power_w: float  # the board's draw now (NVML averages it over about a second)
    energy_j: float | None  # the driver's energy counter since it loaded (Volta and later); None: not kept


@dataclass(frozen=True)
class PowerReading:
    """One reading of every counter; each `*_reason` says why its value is None."""

    t: float  # monotonic
    gpu: GpuPower | None = None
    gpu_reason: str | None = None
    cpu_mhz: tuple[float, ...] | None = None  # per core, in the order of /sys/devices/system/cpu/cpuN
    cpu_mhz_reason: str | None = None
    cpu_package_energy_j: float | None = None  # RAPL, summed over packages, wrap-arounds unfolded by the reader
    cpu_energy_reason: str | None = None


def cpufreq_files(root: Path = CPUFREQ) -> list[Path]:
    """Each core's `scaling_cur_freq`, in core order (the cores listed once, not at every reading)."""
    cores = sorted((p for p in root.glob("cpu[0-9]*") if p.name[3:].isdigit()), key=lambda p: int(p.name[3:]))
    return [core / "cpufreq" / "scaling_cur_freq" for core in cores]


def read_cpu_mhz(root: Path = CPUFREQ, files: list[Path] | None = None) -> tuple[tuple[float, ...] | None, str | None]:
    """Each core's current frequency from cpufreq's `scaling_cur_freq` (kHz); (None, why) where absent."""
    files = cpufreq_files(root) if files is None else files
    if not files:
        return None, f"no CPUs listed under {root}"
    values = []
    for path in files:
        try:
            values.append(int(path.read_text().strip()) / 1000.0)
        except FileNotFoundError:
            return None, "cpufreq is not exposed here (a VM, or a kernel without a cpufreq driver)"
        except (OSError, ValueError) as exc:
            return None, f"cpufreq not readable here: {exc.__class__.__name__}"
    return tuple(values), None


@dataclass(frozen=True)
class RaplDomain:
    """One CPU package's energy counter (microjoules, wrapping at `max_uj`)."""

    path: Path
    max_uj: int


def rapl_packages(root: Path = POWERCAP) -> tuple[list[RaplDomain], str | None]:
    """The package-level RAPL domains (`intel-rapl:N` named `package-N`; AMD's driver uses the same
    interface); ([], why) where there are none or they cannot be read."""
    if not root.is_dir():
        return [], "RAPL is not exposed here (no /sys/class/powercap: a VM, or not an x86 host)"
    domains = []
    for zone in sorted(root.glob("intel-rapl:*")):
        if zone.name.count(":") != 1:  # intel-rapl:0:0 and the like are sub-domains (core, uncore, dram)
            continue
        try:
            if not (zone / "name").read_text().startswith("package"):
                continue
            max_uj = int((zone / "max_energy_range_uj").read_text())
            int((zone / "energy_uj").read_text())  # readable at all? (root only since Linux 5.10)
        except PermissionError:
            return [], "RAPL energy is readable by root only here (Linux 5.10 and later)"
        except (OSError, ValueError) as exc:
            return [], f"RAPL not readable here: {exc.__class__.__name__}"
        domains.append(RaplDomain(zone, max_uj))
    if not domains:
        return [], "no RAPL package domain here"
    return domains, None


class RaplCounter:
    """The packages' energy in joules since the counter was made, wrap-arounds unfolded: the kernel's
    counter wraps at `max_energy_range_uj` (about 262 kJ: minutes at full power on a big package), so
    it must be read more often than it wraps; the sampler's interval is far shorter."""

    def __init__(self, domains: list[RaplDomain]) -> None:
        self._domains = domains
        self._last = [self._raw(d) for d in domains]
        self._total_uj = 0

    @staticmethod
    def _raw(domain: RaplDomain) -> int:
        return int((domain.path / "energy_uj").read_text())

    def read_j(self) -> float:
        for i, domain in enumerate(self._domains):
            now = self._raw(domain)
            delta = now - self._last[i]
            self._total_uj += delta if delta >= 0 else delta + domain.max_uj  # wrapped once
            self._last[i] = now
        return self._total_uj / 1e6


class _Nvml:
    """NVML's clocks, power and energy for one GPU of a shared session (absent: the session's reason)."""

    def __init__(self, session: NvmlSession, index: int = 0) -> None:
        self._session, self._index = session, index

    def read(self) -> tuple[GpuPower | None, str | None]:
        session = self._session
        nvml = session.module
        if nvml is None:
            return None, session.reason
        if self._index >= len(session.handles):
            return None, f"no NVIDIA GPU {self._index} here"
        handle = session.handles[self._index]
        try:
            sm = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
            mem = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)
            power_mw = nvml.nvmlDeviceGetPowerUsage(handle)
        except nvml.NVMLError as exc:
            return None, f"NVML read failed: {exc}"
        try:
            energy_j: float | None = nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0  # mJ
        except nvml.NVMLError:  # before Volta the driver keeps no energy counter
            energy_j = None
        name = session.names[self._index]
        return GpuPower(name, float(sm), float(mem), power_mw / 1000.0, energy_j), None


class PowerCounters:
    """Reads every counter at once; open once, `read()` from one thread at a time, `close()` at the end.
    `gpu=False` leaves NVML alone (a CPU-only run need not load the driver's library); `nvml`: a session
    its caller owns (the resource sampler shares its own), else one of its own that `close()` ends."""

    def __init__(
        self,
        gpu: bool = True,
        cpufreq: Path = CPUFREQ,
        powercap: Path = POWERCAP,
        nvml: NvmlSession | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._cpufreq = cpufreq
        self._cpufreq_files = cpufreq_files(cpufreq)
        self._own_session = gpu and nvml is None
        session = (nvml or NvmlSession()) if gpu else None
        self._session = session
        self._nvml = _Nvml(session) if session is not None else None
        domains, self._rapl_reason = rapl_packages(powercap)
        self._rapl = RaplCounter(domains) if domains else None

    def read(self, t: float) -> PowerReading:
        with self._lock:
            if self._nvml is not None:
                gpu, gpu_reason = self._nvml.read()
            else:
                gpu, gpu_reason = None, "GPU counters not read for this run"
            mhz, mhz_reason = read_cpu_mhz(self._cpufreq, self._cpufreq_files)
            energy, energy_reason = None, self._rapl_reason
            if self._rapl is not None:
                try:
                    energy = self._rapl.read_j()
                except (OSError, ValueError) as exc:
                    energy, energy_reason = None, f"RAPL read failed: {exc.__class__.__name__}"
            return PowerReading(t, gpu, gpu_reason, mhz, mhz_reason, energy, energy_reason)

    def close(self) -> None:
        with self._lock:
            if self._own_session and self._session is not None:
                self._session.close()
            self._session = self._nvml = None
