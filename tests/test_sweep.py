"""The delegate sweep: frames captured once and replayed to every configuration, through the real CLI
on the demo clip and the bundled models, and the plan of what runs where."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from app.sources import capture_frames
from app.tasks.sweep import plan_sweep, thread_counts
from tests.helpers.cli import run_cli
from tests.helpers.vulkan import NO_VULKAN

FLOAT, INT8 = "EfficientNet-Lite0 (float32)", "EfficientNet-Lite0 (int8)"


@pytest.mark.slow
def test_sweep_cli_on_the_demo_clip_with_the_bundled_models(tmp_path: Path):
    out, page = tmp_path / "sweep.json", tmp_path / "sweep.html"
    run = run_cli("sweep", "--frames", "12", "--warmup", "2", "--json", out, "--html", page, "--idle-seconds", "0.3",
                  "--warm-seconds", "0.2", env=NO_VULKAN, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    d = json.loads(out.read_text())
    assert d["frames"] == 12 and d["frame_size"] == [1280, 720] and d["source"] == "demo"
    rows = {r["label"]: r for r in d["rows"]}
    cores = os.cpu_count() or 1
    cpu = [f"{m} · CPU {n} thread{'s' if n > 1 else ''}{' (all cores)' if n == cores > 1 else ''}"
           for m in (FLOAT, INT8) for n in thread_counts()]  # fmt: skip
    assert [r["label"] for r in d["rows"] if r["delegate"] == "cpu"] == cpu
    first = d["rows"][0]
    assert d["baseline"] == first["label"] == cpu[0]
    # The baseline against itself: every captured frame answered, all agree.
    assert first["top1_agreement"] == 1.0 and first["agreement_frames"] == 12
    for label in cpu:
        r = rows[label]
        assert r["outcome"] == "measured" and r["reason"] is None, r
        assert r["inference_fps"] > 0 and r["inferences"] >= 12
        assert 0 < r["latency_p50_ms"] <= r["latency_p95_ms"]
        assert r["cpu_ms_per_inference"] > 0 and r["init_ms"] > 0 and r["first_inference_ms"] > 0
        assert r["accelerator"].startswith("XNNPACK (CPU")
        # Every configuration saw every captured frame: agreement is over all 12, whatever it is.
        assert r["agreement_frames"] == 12 and 0.5 <= r["top1_agreement"] <= 1.0
    # Same model, same frames, CPU at another thread count: the same answers.
    assert rows[cpu[1]]["top1_agreement"] == 1.0
    # What cannot run here is listed, with the reason, never dropped or run on the CPU instead.
    others = [r for r in d["rows"] if r["delegate"] != "cpu"]
    assert {(r["model"], r["delegate"]) for r in others} == {(m, b) for m in (FLOAT, INT8) for b in ("gpu", "coreml")}
    for r in others:
        assert r["outcome"] == "unavailable" and r["reason"] and r["inference_fps"] is None, r
    assert all("macOS" in r["reason"] for r in others if r["delegate"] == "coreml")
    # The table on stdout, the same figures; the report page with its table and plots.
    assert f"{cpu[0]}  " in run.stdout and "not measured:" in run.stdout
    html = page.read_text()
    assert "<table>" in html and "data:image/png;base64," in html and "Core ML needs macOS" in html
    # The power state: idle read before the first configuration, each configuration warmed, and
    # every figure a value or null beside its reason (this VM: no NVML, no cpufreq, no RAPL).
    assert d["idle_s"] >= 0.25 and d["warm_s"] == 0.2
    for label in cpu:
        power = rows[label]["power"]
        for value, reason in (("sm_clock_mhz", "gpu_reason"), ("cpu_mhz", "cpu_mhz_reason"),
                              ("cpu_package_energy_j", "cpu_energy_reason")):  # fmt: skip
            assert (power[value] is None) == (power[reason] is not None), (label, value, power)
            if power[reason]:
                assert f"not readable here ({power[reason]})" in run.stdout, power[reason]
    assert all(r["power"] is None for r in others)
    assert "Power state" in html and "mJ/inf" in run.stdout and "GPU MHz" in html


@pytest.mark.slow
def test_a_software_gpu_is_swept_only_when_asked_and_flagged(swiftshader: dict, three_ops: Path, tmp_path: Path):
    """On a three-op classifier: what is checked is which rows the sweep makes and how it flags them, the
    same for any model, and the int8 model's inferences on SwiftShader made it 12 s of CPU against 5 s."""
    out = tmp_path / "sweep.json"
    args = ["sweep", "--model", three_ops, "--frames", "2", "--warmup", "1", "--json", out]
    run = run_cli(*args, env=swiftshader, timeout=180)
    assert run.returncode == 0, run.stderr
    gpu = [r for r in json.loads(out.read_text())["rows"] if r["delegate"] == "gpu"]
    assert len(gpu) == 1 and gpu[0]["outcome"] == "unavailable"
    assert "software renderer" in gpu[0]["reason"] and "only when software GPU is allowed" in gpu[0]["reason"]

    run = run_cli(*args, "--allow-software-gpu", env=swiftshader, timeout=180)
    assert run.returncode == 0, run.stderr
    gpu = [r for r in json.loads(out.read_text())["rows"] if r["delegate"] == "gpu"]
    assert [r["setting"] for r in gpu] == ["fp16", "fp32"]
    for r in gpu:
        assert r["outcome"] == "measured" and r["software"] is True and "SwiftShader" in r["adapter"], r
        assert r["inference_fps"] > 0 and r["agreement_frames"] == 2
    assert "ran on a software GPU renderer" in run.stderr


def test_the_plan_lists_every_configuration_and_why_not(tmp_path: Path):
    assert thread_counts(1) == [1] and thread_counts(2) == [1, 2] and thread_counts(16) == [1, 2, 16]
    from app.tasks.delegates import DelegateStatus, GpuFacts

    swiftshader = GpuFacts("SwiftShader", software=True, devices=())
    software = {"gpu": DelegateStatus("gpu", "GPU", False, "GPU adapter is a software renderer: SwiftShader",
                                      gpu=swiftshader),
                "coreml": DelegateStatus("coreml", "Core ML", False, "Core ML needs macOS")}  # fmt: skip
    plan = plan_sweep(["efficientnet_lite0"], statuses=software, cores=8)
    assert [(e.delegate, e.setting) for e in plan] == [
        ("cpu", "1 thread"), ("cpu", "2 threads"), ("cpu", "8 threads (all cores)"),
        ("gpu", "fp16 / fp32"), ("coreml", "(any compute units)"),
    ]  # fmt: skip
    assert [e.options.threads for e in plan[:3]] == [1, 2, 8]
    assert plan[3].unavailable and "software GPU is allowed" in plan[3].unavailable
    allowed = plan_sweep(["efficientnet_lite0"], statuses=software, cores=2, allow_software_gpu=True)
    gpu = [e for e in allowed if e.delegate == "gpu"]
    assert [(e.options.precision, e.options.allow_software, e.unavailable) for e in gpu] == [
        ("fp16", True, None),
        ("fp32", True, None),
    ]
    here = {name: DelegateStatus(name, name, True, None) for name in ("gpu", "coreml")}
    mac = plan_sweep(["efficientnet_lite0"], statuses=here, cores=2)
    assert [e.setting for e in mac if e.delegate == "coreml"] == ["all", "cpu_and_ne", "cpu_and_gpu", "cpu_only"]


def test_captured_frames_replay_the_same_images_unpaced():
    captured = capture_frames("demo", 4)
    assert len(captured.images) == 4 and all(not i.flags.writeable for i in captured.images)
    source = captured.open(pace=True)  # a replay is never paced
    frames = [source.read() for _ in range(9)]
    assert [f.content_id for f in frames] == [0, 1, 2, 3, 0, 1, 2, 3, 0]
    assert all(np.shares_memory(f.image, captured.images[f.content_id]) for f in frames)
    assert not np.array_equal(captured.images[0], captured.images[3])  # four different frames of the clip
    assert source.info.kind == "replay" and "replayed unpaced" in source.info.description
    once = captured.open(loop=False)
    assert [once.read() is not None for _ in range(5)] == [True, True, True, True, False]


@pytest.mark.parametrize("bad", ["camera:42", "video:/nonexistent/clip.mp4"])
def test_a_source_that_gives_nothing_is_a_source_error(bad: str):
    from app.errors import SourceError

    with pytest.raises(SourceError):
        capture_frames(bad, 3)


def test_a_backend_that_refuses_is_a_row_and_cancelling_skips_the_rest():
    import threading

    from app.backends.options import BackendOptions
    from app.tasks.sweep import Outcome, SweepEntry, SweepPlan, SweepProgress, run_sweep

    captured = capture_frames("demo", 3)
    cpu = SweepEntry("efficientnet_lite0", "cpu", BackendOptions(threads=1), "1 thread")
    # Tried although the plan would have said why not: the open is refused, fallback is off.
    coreml = SweepEntry("efficientnet_lite0", "coreml", BackendOptions(), "all")
    result = run_sweep(SweepPlan(captured, (cpu, coreml), warmup=1))
    measured, refused = result.rows
    assert measured.outcome == Outcome.MEASURED and measured.top1_agreement == 1.0
    if os.uname().sysname != "Darwin":
        assert refused.outcome == Outcome.REFUSED and "Core ML needs macOS" in refused.reason
        assert refused.inference_fps is None and refused.accelerator is None  # nothing ran on the CPU in its name

    stop = threading.Event()

    def progress(p: SweepProgress) -> None:
        if p.phase == "measuring":
            stop.set()  # cancel while the first configuration runs

    result = run_sweep(SweepPlan(captured, (cpu, cpu, cpu), warmup=1), progress, stop)
    assert result.cancelled and [r.outcome for r in result.rows] == [Outcome.SKIPPED] * 3
    assert "while this configuration ran" in result.rows[0].reason and result.baseline is None


def test_live_pipeline_pauses_for_a_sweep_and_resumes_with_what_was_asked_meanwhile():
    """LiveController.pause/resume (the window's sweep) and set_pace (its unpaced mode), headless."""

    from app.live.controller import LiveController
    from app.pipeline import InferenceConfig, State
    from tests.helpers.wait import wait_until

    live = LiveController("demo", InferenceConfig(options={"threads": 1}))
    live.start()
    try:
        assert wait_until(lambda: live.snapshot().inferences_total >= 3)
        generation = live.generation
        live.pause("a sweep is running")
        assert live.paused and live.status().state == State.STOPPED and live.status().message == "a sweep is running"
        assert not any(t.is_alive() for t in live.threads())  # the CPU is the sweep's
        live.reconfigure(model="efficientnet_lite0_int8")  # asked for while paused: applies on resume
        live.set_pace(False)
        assert live.generation == generation and live.paused  # nothing started behind the sweep's back
        live.resume()
        assert not live.paused and live.generation == generation + 1
        assert wait_until(lambda: (r := live.latest_result()) is not None and r.model == "efficientnet_lite0_int8")
        assert wait_until(lambda: live.source_info() is not None)
        assert ", unpaced" in live.source_info().description
        live.resume()  # not paused: nothing happens
        assert live.generation == generation + 1
        live.set_pace(True)
        assert live.pace and live.generation == generation + 2
        assert wait_until(lambda: (info := live.source_info()) is not None and ", paced" in info.description)
    finally:
        ended, _ = live.stop()
    assert ended


def test_the_sweep_table_gives_each_configurations_clock_and_energy_on_recorded_counters():
    """Counter values recorded on an H200: the GPU row's SM clock and mJ per inference, total
    and above idle, from NVML's counter; the CPU row's energy not readable there (no RAPL)."""
    from app.metrics.energy import power_figures
    from app.report.sweep import energy_per_inference, power_lines, text_table
    from app.tasks.sweep import Outcome, SweepResult, SweepRow
    from tests.helpers.power_readings import IDLE, UNPACED

    gpu_power = power_figures(IDLE, UNPACED, inferences=14 * 770, ran_on="gpu")
    cpu_power = power_figures(IDLE, UNPACED, inferences=14 * 400, ran_on="cpu")
    gpu = SweepRow("m", "m", "gpu", "fp32", "m · GPU fp32", Outcome.MEASURED, inference_fps=770.0,
                   latency_p50_ms=1.28, latency_p95_ms=1.4, power=gpu_power)  # fmt: skip
    cpu = SweepRow("m", "m", "cpu", "16 threads", "m · CPU 16 threads", Outcome.MEASURED, inference_fps=400.0,
                   latency_p50_ms=2.06, latency_p95_ms=2.3, power=cpu_power)  # fmt: skip
    result = SweepResult("demo", "demo", (1280, 720), 100, 5, "Linux x86_64, 16 CPUs", 16, "t", 30.0, gpu.label,
                         (gpu, cpu), idle_s=5.0, warm_s=3.0)  # fmt: skip
    total, above = energy_per_inference(gpu)
    assert total == pytest.approx(1871.8 * 1000 / (14 * 770))
    assert above == pytest.approx((1871.8 - 80.0 * 14) * 1000 / (14 * 770))
    assert energy_per_inference(cpu) == (None, None)  # the GPU's energy is not the CPU run's; no RAPL there
    table = text_table(result)
    gpu_line = next(line for line in table.splitlines() if line.startswith("m · GPU fp32"))
    assert " 1980 " in gpu_line and f"{total:.2f}" in gpu_line and f"{above:.2f}" in gpu_line
    lines = power_lines(result)
    assert "idle read for 5.0 s before the first configuration: GPU 80 W at 345 MHz" in lines
    assert "each configuration held busy (unpaced) at least 3 s before its measured span" in lines
    assert "CPU package energy: not readable here (RAPL is not exposed here)" in lines
    assert not any("'none'" in line for line in lines)
    # A configuration that drew no more than the idle power (an H100 paced at 30 fps): "none", said why.
    from tests.helpers.power_readings import IDLE_H100, PACED_H100

    idle_row = replace(gpu, power=power_figures(IDLE_H100, PACED_H100, inferences=450, ran_on="gpu"))
    at_idle = replace(result, rows=(idle_row,))
    idle_line = next(line for line in text_table(at_idle).splitlines() if line.startswith("m · "))
    assert idle_line.split()[-2:] == ["2550.11", "none"]
    assert "above idle 'none': the configuration drew no more than the idle power (a figure below zero: the " \
        "idle reading's noise)" in power_lines(at_idle)
