"""A software "GPU" is named as such by the one wording function every view uses (app/backends/describe.py):
the adapter names are the ones the Vulkan loader and LiteRT gave here (SwiftShader, llvmpipe)."""

from __future__ import annotations

import time

from app.backends.base import DelegationReport
from app.backends.describe import backend_words, delegation_panel_facts, report_backend_words, software_renderer
from app.live.events import marker_text
from app.pipeline import Event, EventKind
from app.recording.segments import delegate_facts

SWIFTSHADER = "SwiftShader Device (Subzero) (Vulkan, CPU / Software)"  # as LiteRT's log names it, prettified


def _gpu(software: bool, adapter: str = SWIFTSHADER) -> DelegationReport:
    return DelegationReport("gpu", "gpu", "LiteRT GPU (WebGPU/Vulkan)", nodes_total=3, nodes_delegated=3,
                            partitions=1, fully_accelerated=True, adapter=adapter, software=software)  # fmt: skip


def test_the_renderer_is_named_short_as_its_maker_spells_it():
    assert software_renderer(SWIFTSHADER) == "SwiftShader"
    assert software_renderer("llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3.230)") == "llvmpipe"
    assert software_renderer("Some CPU Renderer (Vulkan)") == "Some CPU Renderer"  # unknown: up to the bracket
    assert software_renderer(None) == "a CPU renderer"


def test_a_software_gpu_is_said_and_a_real_one_is_plain():
    assert backend_words("gpu", True, SWIFTSHADER) == "GPU (software: SwiftShader)"
    assert backend_words("gpu") == "GPU" and backend_words("coreml") == "Core ML" and backend_words("cpu") == "CPU"
    assert report_backend_words(_gpu(software=True)) == "GPU (software: SwiftShader)"
    assert report_backend_words(_gpu(software=False, adapter="NVIDIA H200 (Vulkan, Discrete GPU)")) == "GPU"


def test_the_panel_marker_and_report_say_it_too():
    backend = {f.label: f for f in delegation_panel_facts(_gpu(software=True))}["Backend"]
    assert (backend.value, backend.level) == ("GPU (software: SwiftShader)", "warn")
    event = Event(EventKind.OPEN, time.monotonic(), time.time(), "opened", session_id=1, report=_gpu(software=True))
    assert marker_text(event).startswith("GPU (software: SwiftShader) · ")
    # A recording's sidecar facts, read back for the report and Review.
    lines = dict(delegate_facts(_gpu(software=True).to_dict(), []))
    assert lines["backend"] == "GPU (software: SwiftShader)"
    assert dict(delegate_facts(_gpu(software=False).to_dict(), []))["backend"] == "gpu"
