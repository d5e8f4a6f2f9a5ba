"""app/metrics/memory.py: the process's memory from the kernel, what opening a model costs, NVML's share."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from app.metrics import memory
from app.metrics.memory import (
    MemoryDelta,
    MemoryReading,
    gpu_mb,
    measure_open,
    memory_figures,
    peak_reset,
    read_memory,
    read_tree,
)
from app.system.nvml import NvmlSession
from app.tflite.memory_plan import plan_memory
from tests.helpers.paths import ROOT

linux = pytest.mark.skipif(memory.memory_unavailable() is not None, reason="the kernel's counters are Linux's")

# A fresh process opens one bundled model on the CPU at 1 thread and prints the delta: nothing else of
# the test process (other models, the arena of earlier tests) is in the figures.
_OPEN = """
import json, sys
from app.backends.cpu import CpuBackend
from app.backends.options import BackendOptions
from app.metrics.memory import measure_open
from app.model.spec import load_model_spec
spec = load_model_spec(sys.argv[1])
session, opened = measure_open(lambda: CpuBackend().open(spec, BackendOptions(threads=1)))
print(json.dumps({**opened.to_dict(), "rss_before": opened.before.rss_mb, "rss_after": opened.after.rss_mb}))
"""


@linux
def test_a_reading_splits_the_resident_set_into_file_backed_and_anonymous_pages():
    reading = read_memory()
    assert reading is not None and reading.file_mb is not None and reading.anon_mb is not None
    assert reading.rss_mb > 0 and reading.anon_mb > 0 and reading.file_mb > 0  # Python's heap; its own binary
    # status and smaps_rollup are two reads a moment apart: their totals agree within what moved between them
    assert abs(reading.file_mb + reading.anon_mb - reading.rss_mb) < 8
    assert reading.hwm_mb is not None and reading.hwm_mb >= reading.rss_mb - 8


@linux
def test_held_memory_shows_as_anonymous_and_the_peak_keeps_it_until_reset():
    before = read_memory()
    block = b"\x01" * (96 << 20)  # written, so resident
    held = read_memory()
    assert before is not None and held is not None and held.anon_mb is not None and before.anon_mb is not None
    assert held.anon_mb - before.anon_mb > 90
    del block
    freed = read_memory()
    assert freed is not None and freed.hwm_mb is not None
    assert freed.hwm_mb >= held.rss_mb - 1  # the peak outlives the memory
    if not peak_reset():
        pytest.skip("this kernel does not let the process write /proc/self/clear_refs")
    reset = read_memory()
    assert reset is not None and reset.hwm_mb is not None
    assert reset.hwm_mb < freed.hwm_mb - 80  # back to about the resident set now
    assert reset.hwm_mb <= reset.rss_mb + 8


@linux
@pytest.mark.parametrize("model", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_opening_a_model_costs_memory_and_its_parts_add_up(model: str):
    out = subprocess.run([sys.executable, "-c", _OPEN, model], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    opened = json.loads(out.stdout.strip().splitlines()[-1])
    assert opened["reason"] is None
    assert opened["init_mb"] > 0 and opened["anon_mb"] > 0 and opened["file_mb"] >= 0
    assert opened["file_mb"] + opened["anon_mb"] == pytest.approx(opened["init_mb"], abs=1e-6)
    # the split and the resident set are read a moment apart; both tell the same growth
    assert opened["init_mb"] == pytest.approx(opened["rss_after"] - opened["rss_before"], abs=4)
    # the session's heap holds at least XNNPACK's packed copy of the weights (the model's bytes were read
    # into the spec before the open, so they are not in the delta)
    packed = next(d.bytes for d in plan_memory((ROOT / "models" / f"{model}.tflite").read_bytes()).delegates
                  if d.delegate == "cpu")  # fmt: skip
    assert packed is not None and opened["anon_mb"] > 0.8 * packed / 2**20


@linux
def test_a_child_started_by_the_open_counts_whole():
    code = "import time; b = b'\\x01' * (48 << 20); print('ready', flush=True); time.sleep(60)"
    children: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        children.append(child)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        return child

    try:
        _, opened = measure_open(start)
        assert opened.init_mb is not None and opened.init_mb > 48
        alone = measure_open(lambda: None, children=False)[1]
        assert alone.init_mb is not None and abs(alone.init_mb) < 8
        tree, own = read_tree(), read_memory()
        assert tree is not None and own is not None and tree.rss_mb - own.rss_mb > 48
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_off_linux_every_figure_is_none_with_its_reason(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(memory.sys, "platform", "darwin")
    assert read_memory() is None and read_tree() is None
    assert peak_reset() is False
    result, opened = measure_open(lambda: 7)
    assert result == 7 and opened.init_mb is None and opened.reason == memory.NOT_LINUX
    figures = memory_figures(opened, [], None, None)
    assert figures.init_mb is None and figures.peak_mb is None and figures.steady_mb is None
    assert set(figures.reasons) == {"init_mb", "file_mb", "anon_mb", "steady_mb", "peak_mb", "gpu_mb"}
    assert figures.reasons["peak_mb"] == memory.NOT_LINUX
    assert figures.describe().startswith(f"init not measured: {memory.NOT_LINUX}")


def test_gpu_memory_is_nvmls_or_says_why_not():
    session = NvmlSession()
    try:
        value, reason = gpu_mb(session=session)
        if not session.open:
            assert value is None and reason is not None and reason.startswith(memory.NVML_UNAVAILABLE)
        else:  # a GPU machine: this process holds no context, so NVML lists none of it
            assert value is None and reason is not None and "lists no process" in reason
    finally:
        session.close()


def test_the_figures_describe_themselves_in_one_line_and_as_json():
    before = MemoryReading(rss_mb=100.0, hwm_mb=100.0, file_mb=60.0, anon_mb=40.0)
    after = MemoryReading(rss_mb=147.0, hwm_mb=150.0, file_mb=78.0, anon_mb=69.0)
    opened = memory.delta(before, after)
    assert (opened.init_mb, opened.file_mb, opened.anon_mb) == (47.0, 18.0, 29.0)
    run = [200.0, 212.0, 190.0]
    figures = memory_figures(opened, run, peak=MemoryReading(205.0, 230.0, None, None),
                             gpu=(None, "NVML not available: no NVIDIA driver here"))  # fmt: skip
    assert figures.peak_mb == 230.0 and figures.steady_mb == 200.0
    assert figures.describe() == (
        "init 47 MB (18 MB mapped files and libraries, 29 MB weights, arena and runtime copies), peak 230 MB, "
        "steady 200 MB, GPU not reported: NVML not available: no NVIDIA driver here"
    )
    d = figures.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d == {"init_mb": 47.0, "peak_mb": 230.0, "steady_mb": 200.0, "file_mb": 18.0, "anon_mb": 29.0,
                 "gpu_mb": None, "reasons": {"gpu_mb": "NVML not available: no NVIDIA driver here"}}  # fmt: skip
    # without a peak reading, the run's own highest sample stands in
    assert memory_figures(opened, run).peak_mb == 212.0
    with_gpu = memory_figures(MemoryDelta(None, None, None, reason="not read"), run, gpu=(96.0, None))
    assert with_gpu.describe().endswith("GPU 96 MB") and with_gpu.reasons["init_mb"] == "not read"


@linux
def test_a_reading_of_a_process_that_ended_is_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    time.sleep(0.05)
    assert read_memory(child.pid) is None


def test_an_open_across_which_the_process_shrank_is_not_a_figure():
    """The window opens a new session while the old one's memory is freed: the resident set fell by 84 MB
    across an open once. An open adds memory, so that is no reading of it: None, with why."""
    before = MemoryReading(rss_mb=300.0, hwm_mb=320.0, file_mb=120.0, anon_mb=180.0)
    after = MemoryReading(rss_mb=216.0, hwm_mb=320.0, file_mb=121.0, anon_mb=95.0)
    opened = memory.delta(before, after)
    assert opened.init_mb is None and opened.file_mb is None and opened.anon_mb is None
    assert opened.reason is not None and "-84.0 MB" in opened.reason, opened.reason
    assert memory_figures(opened, [216.0]).describe().startswith("init not measured: the process freed more")
