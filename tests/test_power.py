"""Power state and energy: the counters' parsing on sysfs trees written as Linux lays them out, the
figures on counter values recorded on an H200 host, and the null-with-reason on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.metrics.energy import PowerFigures, clock_state_sentence, power_figures, power_lines
from app.system.power_counters import (
    GpuPower,
    PowerCounters,
    PowerReading,
    RaplCounter,
    rapl_packages,
    read_cpu_mhz,
)
from tests.helpers.power_readings import IDLE, IDLE_H100, PACED, PACED_H100, UNPACED


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cpu_frequencies_are_read_per_core_in_core_order(tmp_path: Path):
    for core, khz in ((0, 2_400_000), (1, 800_000), (10, 3_100_000), (2, 1_200_000)):
        _write(tmp_path / f"cpu{core}" / "cpufreq" / "scaling_cur_freq", f"{khz}\n")
    _write(tmp_path / "cpufreq" / "policy0" / "scaling_cur_freq", "1\n")  # not a core
    (tmp_path / "cpuidle").mkdir()
    mhz, reason = read_cpu_mhz(tmp_path)
    assert mhz == (2400.0, 800.0, 1200.0, 3100.0) and reason is None


def test_cpu_frequencies_missing_give_a_reason_not_a_figure(tmp_path: Path):
    (tmp_path / "cpu0").mkdir()  # a VM: the core is listed, its cpufreq folder is not
    mhz, reason = read_cpu_mhz(tmp_path)
    assert mhz is None and reason and "cpufreq is not exposed" in reason


def _rapl(root: Path, zone: str, name: str, uj: int, max_uj: int = 262_143_328_850) -> Path:
    _write(root / zone / "name", name + "\n")
    _write(root / zone / "energy_uj", f"{uj}\n")
    _write(root / zone / "max_energy_range_uj", f"{max_uj}\n")
    return root / zone / "energy_uj"


def test_rapl_sums_the_packages_and_unfolds_a_wrap_around(tmp_path: Path):
    p0 = _rapl(tmp_path, "intel-rapl:0", "package-0", 1_000_000, max_uj=10_000_000)
    p1 = _rapl(tmp_path, "intel-rapl:1", "package-1", 5_000_000, max_uj=10_000_000)
    _rapl(tmp_path, "intel-rapl:0:0", "core", 7)  # a sub-domain: inside package 0, not added again
    _rapl(tmp_path, "intel-rapl:2", "psys", 7)  # the platform domain: not a package
    domains, reason = rapl_packages(tmp_path)
    assert reason is None and [d.path.name for d in domains] == ["intel-rapl:0", "intel-rapl:1"]
    counter = RaplCounter(domains)
    p0.write_text("3000000\n")  # +2 J
    p1.write_text("1000000\n")  # wrapped: 5 -> 10 -> 1 J, +6 J
    assert counter.read_j() == pytest.approx(8.0)
    p0.write_text("3500000\n")
    assert counter.read_j() == pytest.approx(8.5)


def test_rapl_absent_gives_a_reason(tmp_path: Path):
    domains, reason = rapl_packages(tmp_path / "powercap")
    assert domains == [] and reason and "not exposed" in reason


def test_every_counter_on_this_machine_is_a_value_or_a_reason():
    """Null-with-reason where the counters are not there (this VM: no cpufreq, no powercap, no GPU)."""
    counters = PowerCounters(gpu=True)
    try:
        r = counters.read(0.0)
    finally:
        counters.close()
    assert (r.gpu is None) != (r.gpu_reason is None), r
    assert (r.cpu_mhz is None) != (r.cpu_mhz_reason is None), r
    assert (r.cpu_package_energy_j is None) != (r.cpu_energy_reason is None), r
    off = PowerCounters(gpu=False)
    assert off.read(0.0).gpu_reason == "GPU counters not read for this run"
    off.close()


def test_energy_per_inference_from_the_counters_and_above_idle():
    f = power_figures(IDLE, UNPACED, inferences=14 * 770)
    assert f.gpu_energy_source == "counter" and f.gpu_energy_j == pytest.approx(1871.8)
    assert f.gpu_mj_per_inference == pytest.approx(1871.8 * 1000 / (14 * 770))
    above = (1871.8 - 80.0 * 14) * 1000 / (14 * 770)  # the idle power's share taken off
    assert f.gpu_mj_per_inference_above_idle == pytest.approx(above)
    assert (f.sm_clock_mhz, f.idle_sm_clock_mhz) == (1980, 345)
    # Mean power from the counter (a paced run's bursts fall between 1 s power samples: on an H100 the
    # samples' median read 72.9 W where the counter gave 90.5 W).
    assert f.power_w == pytest.approx(1871.8 / 14) and f.idle_power_w == pytest.approx(80.0)
    assert f.cpu_package_energy_j is None and f.cpu_energy_reason == "RAPL is not exposed here"


def test_a_run_that_drew_no_more_than_idle_says_so_in_words_not_a_negative_energy():
    """Recorded on an H100 host: the GPU paced at 30 fps drew 76.5 W against 76.65 W idle. The JSON keeps the
    figure (-4.97 mJ, the idle reading's noise); the text never prints a negative energy."""
    f = power_figures(IDLE_H100, PACED_H100, inferences=450)
    assert f.gpu_mj_per_inference == pytest.approx(2550.1, abs=0.1)
    assert f.gpu_mj_per_inference_above_idle == pytest.approx(-4.97, abs=0.01)
    gpu_line = power_lines(f)[0]
    assert "2550.11 mJ per inference (none above idle: the run drew no more than the idle power)" in gpu_line
    assert "-4.97" not in gpu_line
    above = power_lines(power_figures(IDLE, UNPACED, inferences=14 * 770))[0]
    assert f"({(1871.8 - 80.0 * 14) * 1000 / (14 * 770):.2f} above idle)" in above  # a real excess: the figure


def test_the_gpus_energy_is_not_given_per_inference_when_the_model_ran_elsewhere():
    f = power_figures(IDLE, UNPACED, inferences=1000, ran_on="cpu")
    assert f.gpu_mj_per_inference is None and f.gpu_mj_per_inference_above_idle is None
    assert f.gpu_energy_reason == "the model ran on cpu, not the GPU" and f.sm_clock_mhz == 1980
    assert power_figures(IDLE, UNPACED, inferences=1000, ran_on="gpu").gpu_mj_per_inference is not None


def test_without_an_energy_counter_the_power_samples_are_integrated_and_said_so():
    run = [PowerReading(float(t), GpuPower("0: old GPU", 1500, 5000, 100.0, None)) for t in range(5)]
    f = power_figures([], run, inferences=400)
    assert f.gpu_energy_source == "power samples" and f.gpu_energy_j == pytest.approx(400.0)
    assert f.gpu_mj_per_inference == pytest.approx(1000.0) and f.gpu_mj_per_inference_above_idle is None


def test_a_paced_run_at_the_idle_clock_is_named_beside_an_unpaced_one():
    paced, unpaced = power_figures(IDLE, PACED, 14 * 30), power_figures(IDLE, UNPACED, 14 * 770)
    sentence = clock_state_sentence("GPU at 30 fps", paced, "unpaced", unpaced)
    assert sentence and "GPU at 30 fps: SM clock 345 MHz, its idle clock" in sentence
    assert "unpaced: SM clock 1980 MHz" in sentence and "different power states" in sentence
    assert clock_state_sentence("a", unpaced, "b", unpaced) is None  # same clocks: nothing to say
    assert clock_state_sentence("a", power_figures([], [], 0), "b", unpaced) is None  # not known: silent


@pytest.mark.slow
def test_bench_reports_each_power_figure_or_why_it_is_missing(tmp_path: Path):
    """bench's JSON carries the power section; here (no NVML, cpufreq or RAPL in this VM) every figure is
    null beside its reason, and the text says the same. On a machine with the counters: numbers."""
    from tests.helpers.cli import run_cli

    out = tmp_path / "b.json"
    run = run_cli("bench", "--source", "synthetic", "--frames", "20", "--warmup", "2", "--idle-seconds", "0.3",
                  "--json", out)  # fmt: skip
    assert run.returncode == 0, run.stderr
    power = PowerFigures(**__import__("json").loads(out.read_text())["power"])
    assert (power.sm_clock_mhz is None) == (power.gpu_reason is not None), power
    assert (power.cpu_mhz is None) == (power.cpu_mhz_reason is not None), power
    assert (power.cpu_package_energy_j is None) == (power.cpu_energy_reason is not None), power
    assert "power     " in run.stdout
    if power.gpu_reason:
        assert power.gpu_reason in run.stdout


def test_the_sampler_opens_nvml_once_for_utilisation_and_the_power_counters(monkeypatch):
    """One NVML session per sampler (it was opened twice: once for utilisation, once for clocks)."""
    import app.metrics.resources as resources
    from app.system.nvml import NvmlSession

    opened: list[NvmlSession] = []

    class Counted(NvmlSession):
        def __init__(self) -> None:
            super().__init__()
            opened.append(self)

    monkeypatch.setattr(resources, "NvmlSession", Counted)
    import app.system.power_counters as power_counters

    monkeypatch.setattr(power_counters, "NvmlSession", Counted)
    sampler = resources.ResourceSampler(interval_s=0.05)
    with sampler:
        reading = sampler.read_power_now()
    assert len(opened) == 1, opened
    assert reading is not None and (reading.gpu is None) == (reading.gpu_reason is not None)
    assert not opened[0].open  # closed by the sampler at stop


def test_a_paced_gpu_left_at_its_idle_clock_is_said_with_its_figures():
    """A paced A/B (CPU vs GPU at 30 fps on an H200): the GPU at 345 MHz, its idle clock."""
    from app.metrics.energy import paced_clock_sentence

    paced = power_figures(IDLE, PACED, 14 * 30, ran_on="gpu")
    sentence = paced_clock_sentence("GPU (side B) at 30 fps", paced)
    assert sentence and sentence.startswith("GPU (side B) at 30 fps: SM clock 345 MHz, its idle clock (idle 345 MHz)")
    assert "not its speed unpaced" in sentence
    assert paced_clock_sentence("GPU at 30 fps", power_figures(IDLE, UNPACED, 14 * 770)) is None  # clock rose
    assert paced_clock_sentence("GPU at 30 fps", power_figures([], PACED, 420)) is None  # idle clock unknown


@pytest.mark.slow
def test_an_ab_bench_reads_the_power_state_over_its_span(tmp_path: Path):
    """bench --compare-with: the power section over the span both sides ran, each figure a value or null
    beside its reason; here (no NVML) no clock sentence, since no GPU clock is known."""
    import json

    from tests.helpers.cli import run_cli

    out = tmp_path / "ab.json"
    run = run_cli("bench", "--source", "synthetic", "--frames", "12", "--warmup", "2", "--compare-with", "cpu",
                  "--compare-alone-seconds", "0", "--idle-seconds", "0.3", "--json", out)  # fmt: skip
    assert run.returncode == 0, run.stderr
    d = json.loads(out.read_text())
    power = PowerFigures(**d["power"])
    assert (power.sm_clock_mhz is None) == (power.gpu_reason is not None), power
    assert (power.cpu_mhz is None) == (power.cpu_mhz_reason is not None), power
    assert (power.cpu_package_energy_j is None) == (power.cpu_energy_reason is not None), power
    assert "power      " in run.stdout
    if power.sm_clock_mhz is None:
        assert d["speed"]["clock_sentence"] is None


@pytest.mark.slow
def test_bench_warm_seconds_holds_the_warm_up_that_long(tmp_path: Path):
    """--warm-seconds: the measured span opens no sooner than that long after the first result, however
    few warm-up inferences were asked for (the recording's `measure` row says when)."""
    from app.recording.writer import read_recording
    from tests.helpers.cli import run_cli

    csv_path = tmp_path / "w.csv"
    run = run_cli("bench", "--source", "synthetic", "--no-pace", "--frames", "10", "--warmup", "1",
                  "--warm-seconds", "1.5", "--csv", csv_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = read_recording(csv_path).rows
    first = next(float(r["t_s"]) for r in rows if not r["event"])
    measure = next(r for r in rows if r["event"] == "measure")
    assert float(measure["t_s"]) - first >= 1.5, (first, measure["t_s"])
    assert "over 1.5 s or more" in measure["message"]
