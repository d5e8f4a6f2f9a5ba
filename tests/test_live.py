"""The window's session controller, headless: real pipeline, recording, source switch."""

import threading

import pytest

from app.backends.describe import delegation_panel_facts, offload_sentence
from app.live.controller import LiveController
from app.pipeline import InferenceConfig
from app.recording.writer import read_recording
from tests.helpers.wait import wait_until


@pytest.mark.slow
def test_record_switch_source_and_stop(tmp_path):
    session = LiveController("synthetic:320x240@30", InferenceConfig(options={"threads": 1}))
    session.start()
    try:
        assert wait_until(lambda: session.snapshot().inferences_total >= 3)
        path = tmp_path / "live.csv"
        session.start_recording(path)
        assert wait_until(lambda: session.recording_status().rows >= 5)
        session.switch_source("demo")
        assert wait_until(lambda: (r := session.latest_result()) is not None and r.frame_size == (1280, 720))
        assert wait_until(lambda: session.recording_status().rows >= 15)
    finally:
        ended, recording = session.stop()
    assert ended and recording is not None and recording.error is None
    assert not any(t.is_alive() for t in session.threads())
    assert not [t for t in threading.enumerate() if t.name == "delegate-scope-recorder"]
    rows = read_recording(path).rows
    events = [r["event"] for r in rows if r["event"]]
    assert events[0] == "start" and "source" in events and events[-1] == "stop"
    sources = {r["source"] for r in rows if not r["event"]}
    assert sources == {"synthetic:320x240@30", "demo"}  # rows say which source they came from
    assert read_recording(path).metadata["models"]  # the session open before recording is described


def test_offload_sentence_reads_the_ratio_honestly():
    assert "runs off the CPU" in offload_sentence(0.04, "gpu", 0.4, 10.0)
    assert "4%" in offload_sentence(0.04, "gpu", 0.4, 10.0)
    on_cpu = offload_sentence(1.0, "cpu", 10.0, 10.0)
    assert "runs on the CPU" in on_cpu
    gpu_spin = offload_sentence(1.0, "gpu", 10.0, 10.0)
    assert "spinning" in gpu_spin  # a GPU driver that waits on a core does not prove CPU execution
    assert "cores" in offload_sentence(1.9, "cpu", 19.0, 10.0)


def test_the_offload_sentence_tells_waiting_from_offloading():
    """Found demoing: the CPU backend at 35% of wall on a loaded machine and the TensorFlow reference
    (a child process) at 1% both read "the work runs off the CPU"."""
    cpu = offload_sentence(0.35, "cpu", 3.5, 10.0, machine_cpu_pct=97.0)
    assert "off the CPU" not in cpu and "waited for a core" in cpu and "97% busy" in cpu
    assert "off the CPU" not in offload_sentence(0.35, "cpu", 3.5, 10.0)
    reference = offload_sentence(0.01, "reference", 0.1, 10.0)
    assert "off the CPU" not in reference and "child process" in reference
    busy_gpu = offload_sentence(0.1, "gpu", 1.0, 10.0, machine_cpu_pct=95.0)
    assert "off the CPU, or waited for a core" in busy_gpu
    assert offload_sentence(0.1, "gpu", 1.0, 10.0, machine_cpu_pct=20.0).endswith("the work runs off the CPU.")


def test_the_threads_wait_and_sleep_name_what_the_ratio_means():
    """With the inference thread's wait for a core and its sleep read from schedstat, the sentence says
    which of the two made the ratio low (recorded values: a GPU asleep while the device works, a GPU
    run on a busy machine, a CPU backend that waited)."""
    offloaded = offload_sentence(0.1, "gpu", 1.0, 10.0, 99.0, waited_ms=0.5, slept_ms=8.5)
    assert "slept 8.5 ms" in offloaded and "runs off the CPU" in offloaded
    waiting = offload_sentence(0.2, "gpu", 2.0, 10.0, 99.0, waited_ms=7.0, slept_ms=1.0)
    assert "waited 7.0 ms for a core" in waiting and "waiting, not offloading" in waiting
    assert "off the CPU" not in waiting
    cpu = offload_sentence(0.35, "cpu", 3.5, 10.0, waited_ms=6.0, slept_ms=0.5)
    assert "waited 6.0 ms for a core" in cpu and "nothing runs elsewhere" in cpu and "off the CPU" not in cpu
    reference = offload_sentence(0.9, "reference", 9.0, 10.0, waited_ms=0.0, slept_ms=9.5)
    assert "child process" in reference and "runs on the CPU" in reference
    # Its thread here sleeps while the child works: that sleep is not offloading.
    waiting_reference = offload_sentence(0.6, "reference", 6.0, 10.0, waited_ms=0.0, slept_ms=9.5)
    assert "off the CPU" not in waiting_reference and "every op on this machine's CPU" in waiting_reference


def test_delegation_panel_facts_flag_fallback_and_software():
    from app.backends.base import DelegationReport

    report = DelegationReport("gpu", "cpu", "XNNPACK (CPU, 1 thread)", fallback_reason="no GPU adapter", nodes_total=64,
                           nodes_delegated=61, partitions=2, cpu_ops=["CUSTOM"],
                           warnings=["fell back to CPU: no GPU adapter"])  # fmt: skip
    facts = {f.label: f for f in delegation_panel_facts(report)}
    assert facts["Backend"].level == "warn" and "requested GPU" in facts["Backend"].value
    assert facts["Fallback"].value == "no GPU adapter"
    # What runs is the CPU: XNNPACK's 61 of 64 is said, not flagged (the fallback is, in Backend and Fallback).
    assert facts["Nodes delegated"].value == "61 of 64" and facts["Nodes delegated"].level == "info"
    assert facts["Partitions"].value == "2" and "Warning" not in facts  # the fallback is not repeated
    soft = DelegationReport("gpu", "gpu", "LiteRT GPU", adapter="SwiftShader Device", software=True)
    assert "SOFTWARE RENDERER" in {f.label: f for f in delegation_panel_facts(soft)}["Adapter"].value
